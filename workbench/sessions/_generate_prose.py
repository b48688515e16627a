"""Prose builders for the version-3 session shapes: decisions, pending tasks, design notes.

Decisions and pending tasks are ground truth (``meta["decisions"]``, ``meta["pending_tasks"]``),
so each carries a name with a random hex suffix that only this session contains. Design notes
and review comments are the long prose of the ``discussion`` and ``review`` shapes: human and
assistant text that Goose's ladder cannot drop (it removes tool output only). Every builder
draws only from the `random.Random` it is given, so a seed fixes every byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from workbench.sessions._generate_text import ADJECTIVES, NOUNS, VERBS, hex_id

# (topic, choice, rejected alternative, reason); {n} and {h} are filled per session
DECISIONS: list[tuple[str, str, str, str]] = [
    ("the retry policy", "exponential backoff capped at {n} seconds in `backoff_{h}`",
     "a fixed one-second sleep", "the upstream rate limiter bans clients that retry in lockstep"),
    ("where the dedup state lives", "an in-memory `SeenKeys{H}` set per batch run",
     "a Redis set shared by every worker", "a run never spans workers, and Redis adds a network "
     "hop to every key"),
    ("the cache backend", "a bounded LRU dict named `lru_{h}` with {n} entries",
     "functools.lru_cache on the method", "the cache must be cleared after every upsert, which "
     "lru_cache cannot do per instance"),
    ("the config format", "TOML read by `load_settings_{h}`", "YAML",
     "the rest of the tooling already reads TOML and YAML would add a dependency"),
    ("missing index keys", "a fallback to the `unindexed_{h}` bucket", "raising KeyError",
     "partial fixtures are normal during backfills and must not stop the nightly job"),
    ("the migration strategy", "a new additive migration `{n:04d}_add_{h}.sql`",
     "editing the migration that already ran", "that migration already ran in production"),
    ("the batch size", "{n} rows per batch behind the `BATCH_{H}` constant",
     "one query for the whole table", "a single query held locks long enough to time out "
     "the API"),
    ("the logging level", "DEBUG only behind the `trace_{h}` flag", "DEBUG everywhere",
     "the log volume at DEBUG filled the disk on the CI box"),
    ("the test fixtures", "factories in `fixtures_{h}.py`", "large JSON fixture files",
     "JSON fixtures drift from the schema and nobody notices"),
    ("the API versioning", "a `/v2` route kept beside `/v1` until `sunset_{h}`",
     "changing `/v1` in place", "two mobile clients still call `/v1` and cannot update quickly"),
    ("the timestamp type", "timezone-aware UTC datetimes via `utcnow_{h}`", "naive local times",
     "the month-boundary reports were off by one for users east of UTC"),
    ("the concurrency model", "a thread pool of {n} workers in `pool_{h}`", "asyncio everywhere",
     "the database driver is synchronous and wrapping it buys nothing"),
]

TASKS: list[str] = [
    "write the runbook entry `runbook_{h}` for the on-call rotation",
    "backfill last month's totals with `backfill_{h}` once the fix is deployed",
    "open a ticket `OPS-{n}` so ops can lower the alert threshold again",
    "remove the temporary flag `tmp_flag_{h}` after one clean nightly run",
    "add a dashboard panel `panel_{h}` for skipped entries",
    "ask the data team to re-run report `report_{h}` for the affected tenants",
    "delete the old branch `hotfix-{h}` after the merge",
    "benchmark `bench_{h}` against production-sized batches",
    "document the new setting `setting_{h}` in the changelog",
    "tag release `v0.{n}.0` and announce it in the team channel",
]

CHANGING: list[tuple[str, str, int, int]] = [
    # (name in prose, unit, low, high): values a user later replaces
    ("request timeout", "seconds", 5, 120),
    ("retry limit", "attempts", 2, 12),
    ("page size", "rows", 50, 5000),
    ("worker count", "workers", 2, 32),
]


@dataclass(frozen=True)
class Decision:
    """A decision with its reason, as one sentence of the session states it."""

    topic: str
    choice: str
    alternative: str
    reason: str


def decision(rng: random.Random, used: set[str]) -> Decision:
    """A decision whose topic `used` does not hold yet (the topic is added to it)."""
    free = [d for d in DECISIONS if d[0] not in used] or DECISIONS
    topic, choice, alternative, reason = rng.choice(free)
    used.add(topic)
    h = hex_id(rng)
    fill = {"h": h, "H": h.upper(), "n": rng.randint(3, 900)}
    return Decision(topic, choice.format(**fill), alternative, reason)


def decision_sentence(rng: random.Random, d: Decision) -> str:
    """The sentence that records the decision (it names the choice, the alternative and why).

    Every phrasing carries the same words of deciding (decision or decided, chose, instead,
    because), so only the topic tells two decisions of one session apart."""
    lead = rng.choice([f"Decision on {d.topic}: we", f"For {d.topic}, the decision: I",
                       f"We decided {d.topic} this way: we"])
    return f"{lead} chose {d.choice} instead of {d.alternative}, because {d.reason}."


def task(rng: random.Random) -> str:
    """A pending task naming a token only this session contains."""
    return rng.choice(TASKS).format(h=hex_id(rng), n=rng.randint(100, 9999))


def _sentence(rng: random.Random) -> str:
    noun, other, verb = rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(VERBS)
    adj = rng.choice(ADJECTIVES)
    return rng.choice([
        f"When a {noun} arrives before its {other}, we currently {verb} it twice and the "
        f"totals drift.",
        f"The {adj} {noun} path was written before {other}s existed, so it assumes one "
        f"{other} per {noun}.",
        f"I would rather {verb} the {noun}s in one place than scatter the logic over every "
        f"caller.",
        f"Ops reported that the {noun} job takes {rng.randint(3, 90)} minutes on large tenants "
        f"and sometimes overlaps the {other} rollup.",
        f"If we {verb} the {other} index up front, each {noun} lookup becomes a dict hit "
        f"instead of a query.",
        f"The risk is that a {noun} written by the old code is read by the new code before "
        f"the {other} backfill finishes.",
        f"We should keep the public signatures stable, since the {adj} team imports the "
        f"{noun} helpers directly.",
        f"Tests for the {noun} module mock the {other} client, which hides timeouts we see "
        f"in staging.",
        f"A smaller first step is to {verb} only the {noun}s touched this week and measure.",
        f"I checked the dashboards: about {rng.randint(2, 40)} percent of {noun}s have no "
        f"{other} yet.",
        f"Whatever we choose must survive a restart halfway through a {noun} batch.",
        f"The {other} schema has a nullable column that the {noun} code treats as required.",
    ])


def paragraph(rng: random.Random, sentences: int) -> str:
    """`sentences` sentences of design prose about the service's data."""
    return " ".join(_sentence(rng) for _ in range(sentences))


def design_note(rng: random.Random, paragraphs: int) -> str:
    """A multi-paragraph design note (a human's long message, or the assistant's plan)."""
    return "\n\n".join(paragraph(rng, rng.randint(3, 6)) for _ in range(paragraphs))


def review_comments(rng: random.Random, paths: list[str], count: int) -> str:
    """A reviewer's numbered comments on `paths`."""
    lines = []
    for n in range(1, count + 1):
        path = rng.choice(paths)
        lines.append(f"{n}. {path}:{rng.randint(5, 300)}: " + rng.choice([
            f"this loop re-reads the {rng.choice(NOUNS)} index on every iteration.",
            f"the name `{rng.choice(VERBS)}_{rng.choice(NOUNS)}` no longer says what it does.",
            "missing a test for the empty batch.",
            f"please log the {rng.choice(NOUNS)} id when this branch is taken.",
            "this swallows the exception; re-raise with context instead.",
            f"nit: the docstring still mentions the old {rng.choice(NOUNS)} table.",
        ]))
    return "\n".join(lines)
