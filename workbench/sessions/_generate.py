"""Generated coding-agent sessions with planted facts: ground truth for what a summary forgot.

`generate_session(seed, target_tokens)` writes a realistic session and returns the facts
planted in it. Like real agent sessions it is dominated by tool output (about three quarters
of the tokens: whole-module ``read_file`` results, verbose pytest logs with the failing
traceback, ``search`` listings, file trees, install and server logs); the rest is user
requests, short assistant notes and ``edit_file`` / ``write_file`` arguments. Planted facts:
file paths and identifiers in user messages, identifiers the assistant introduces in its own
text, error strings quoted in failing tool results, user constraints, and a value the user
later replaces (the old fact is then ``stale``). The same seed always gives the same bytes:
one `random.Random(seed)`, no clock, fixed ``created`` times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from workbench._storage import write_atomic
from workbench.messages import Message
from workbench.sessions import _generate_output as go
from workbench.sessions import _generate_text as gt
from workbench.sessions._generate_base import (
    PlantedFact,
    WriterBase,
    message_text,
    tool_share,
)
from workbench.sessions._generate_memory import MemoryWriter
from workbench.sessions._generate_shapes import SHAPES, ShapedWriter
from workbench.sessions._session import Session
from workbench.tokens import default_estimator

__all__ = ["GENERATOR_VERSION", "MEMORY", "MEMORY_DIR", "MEMORY_VERSION", "SHAPES", "SHIPPED",
           "DatasetSpec", "PlantedFact", "dataset_name", "generate_dataset", "generate_session",
           "message_text", "prose_tokens", "tool_share"]

GENERATOR_VERSION = 3
"""The generator of the shipped set (``datasets/``): the six `SHAPES` with full ground truth.
Version 2 (one shape, ``debugging``, planted facts only) is kept byte for byte: the first six
shipped files, which the recordings and the regression baseline key on, are version 2."""
MEMORY_VERSION = 4
"""The generator of the memory set (``datasets/memory/``, `MEMORY`): version 3's shapes plus
repeated knowledge updates, tasks marked done, and questions never answered
(`workbench.sessions._generate_memory`)."""
VERSIONS = (2, 3, 4)
EPISODE_FIXED = 3200  # tokens an episode spends on prose, edits and their fixed-size results
TOOL_SHARE = 0.76  # the share of tokens in tool results that episodes steer toward
CHANGE_AT = 0.45  # the requirement changes once this share of the target is written


class DatasetSpec(NamedTuple):
    """One generated session: its seed, target size, shape and generator version."""

    seed: int
    target_tokens: int
    shape: str = "debugging"
    version: int = GENERATOR_VERSION


def _v3(seed: int, target: int, shape: str) -> DatasetSpec:
    return DatasetSpec(seed, target, shape, 3)


SHIPPED: list[DatasetSpec] = [
    # version 2: the original six (recorded by the local models; the gate keys on them)
    *(DatasetSpec(seed, target, "debugging", 2) for seed, target in
      [(1, 5_000), (2, 12_000), (3, 25_000), (4, 50_000), (5, 90_000), (6, 150_000)]),
    # version 3: most small or medium, so the default run stays fast; a few large
    *(_v3(seed, target, "debugging") for seed, target in
      [(7, 6_000), (8, 9_000), (9, 14_000), (10, 20_000), (11, 32_000), (12, 100_000)]),
    *(_v3(seed, target, "feature") for seed, target in
      [(13, 7_000), (14, 8_000), (15, 11_000), (16, 16_000), (17, 24_000), (18, 40_000),
       (19, 70_000)]),
    *(_v3(seed, target, "refactor") for seed, target in
      [(20, 6_000), (21, 9_000), (22, 13_000), (23, 18_000), (24, 28_000), (25, 60_000),
       (26, 140_000)]),
    *(_v3(seed, target, "review") for seed, target in
      [(27, 5_000), (28, 7_000), (29, 10_000), (30, 15_000), (31, 22_000), (32, 45_000),
       (33, 80_000)]),
    *(_v3(seed, target, "tool-loop") for seed, target in
      [(34, 6_000), (35, 8_000), (36, 12_000), (37, 17_000), (38, 26_000), (39, 36_000),
       (40, 120_000)]),
    *(_v3(seed, target, "discussion") for seed, target in
      [(41, 12_000), (42, 14_000), (43, 16_000), (44, 19_000), (45, 23_000), (46, 30_000),
       (47, 42_000), (48, 55_000)]),
]


MEMORY_DIR = "datasets/memory"
"""Where the memory set lives, with its own manifest: outside ``dataset:all``, so the default
run and the regression gate never see it; an experiment selects it as ``dataset:memory``."""
MEMORY: list[DatasetSpec] = [
    DatasetSpec(seed, target, shape, MEMORY_VERSION) for seed, target, shape in
    [(49, 24_000, "debugging"), (50, 30_000, "feature"), (51, 36_000, "refactor"),
     (52, 28_000, "review"), (53, 40_000, "tool-loop"), (54, 32_000, "discussion")]]
"""The memory set: one session per shape, 24k-40k tokens, so an 8k window compacts each many
times."""


def dataset_name(seed: int, target_tokens: int, version: int = GENERATOR_VERSION) -> str:
    """The shipped file stem for a seed and size: ``gen-005k-s1`` (``mem-024k-s49`` for the
    memory set's version)."""
    prefix = "mem" if version == MEMORY_VERSION else "gen"
    return f"{prefix}-{round(target_tokens / 1000):03d}k-s{seed}"


class _Writer(WriterBase):
    # ---- narrative ------------------------------------------------------------------------

    def intro(self) -> None:
        rng = self.rng
        self.package = self.project
        self.protected = f"migrations/{rng.randint(1, 99):04d}_backfill_{gt.hex_id(rng)}.sql"
        self.port = rng.randint(20000, 60999)
        self.main_path = gt.module_path(rng, self.package)
        self.main_func = gt.ident(rng)
        text = (
            f"I'm working on `{self.project}`, our internal {rng.choice(gt.NOUNS)} service. "
            f"The function `{self.main_func}` in {self.main_path} double-counts entries when "
            f"the same {rng.choice(gt.NOUNS)} shows up in two batches, and the nightly job "
            "reports inflated totals. Please find the cause, fix it and make sure the test "
            "suite passes.\n\nConstraints:\n"
            f"- never touch {self.protected}: it already ran in production.\n"
            f"- the dev server must use port {self.port}; other ports are taken on the CI box.\n"
            "- keep the public function signatures unchanged.")
        i = self.add(Message.user(text))
        self.fact("constraint", f"never touch {self.protected}", i)
        self.port_fact = self.fact("value", f"port {self.port}", i)
        self.fact("identifier", self.main_func, i)
        self.fact("path", self.main_path, i)

    def episode(self, path: str, func: str, budget: int, first: bool) -> None:
        rng = self.rng
        end = self.tokens + budget
        small = budget < 6000
        # what the sized tool outputs may use; small episodes make smaller edits
        budget = max(budget - (EPISODE_FIXED * 3 // 4 if small else EPISODE_FIXED), 800)
        test_path = f"tests/test_{path.rsplit('/', 1)[-1]}"
        others = [gt.module_path(rng, self.package) for _ in range(rng.randint(2, 5))]
        tests = [test_path] + [f"tests/test_{p.rsplit('/', 1)[-1]}" for p in others]
        if first or rng.random() < 0.25:
            self.call("Getting a map of the code first.", "shell",
                      {"command": "find src tests -name '*.py' | xargs wc -l"},
                      self.fit(lambda n: go.tree_listing(rng, self.package,
                                                         [path, test_path, *others], n),
                               int(budget * 0.06), 14))
        self.call(rng.choice([
            f"Searching for `{func}` to see who calls it before I change anything.",
            f"Let me find every caller of `{func}` first: changing what it returns could "
            "break them.",
            f"I'll grep for `{func}` to find its definition, its callers and its tests."]),
            "search", {"pattern": func, "path": "."},
                  self.fit(lambda n: go.search_hits(rng, self.package, [path, *tests, *others],
                                                    func, n), int(budget * 0.05), 22, 3))
        body = self.module(path, [func], int(budget * 0.42))
        self.call(rng.choice([
            f"The definition is in {path}; reading the whole module to see how `{func}` "
            "builds its totals.",
            f"Opening {path}. The callers all pass whole batches, so the problem is likely "
            "inside the loop."]), "read_file", {"path": path}, gt.numbered(body))
        test_body = None
        if rng.random() < 0.6:
            test_body = self.fit(lambda n: gt.test_module(rng, self.package, path, [func], n),
                                 int(budget * 0.11), 75)
            self.call(f"And the existing tests in {test_path}, to see what the fixtures "
                      "contain.", "read_file", {"path": test_path}, gt.numbered(test_body))
        seen = self.fresh(lambda: f"seen_{rng.choice(gt.NOUNS)}_{gt.hex_id(rng)}")
        fixed = gt.guard_seen(body, func, seen)
        i = self.edit(f"`{func}` adds to `totals` without checking for keys counted in an "
                      f"earlier batch. I'll track them in a `{seen}` set; {self.protected} "
                      "stays untouched.", path, body, fixed, small)
        self.fact("identifier", seen, i)
        error = gt.error_message(rng)
        if rng.random() < 0.7:
            command = f"python -m pytest -v {' '.join(sorted(set(tests)))}"
            failing = self.fit(lambda n: go.pytest_failure(rng, self.project, tests, path, func,
                                                           error, n), int(budget * 0.18), 24, 5)
        else:
            command = f"python -m {path[4:-3].replace('/', '.')} --dry-run"
            failing = self.fit(lambda n: go.python_traceback(rng, self.project, path, func,
                                                             error, n), int(budget * 0.18), 34, 5)
        _, j = self.call(rng.choice(["Running the affected tests.",
                                     "Checking the change against the tests.",
                                     "Now the run that reproduced the report."]),
                         "shell", {"command": command}, failing, is_error=True)
        self.fact("error", error, j)
        patch = gt.drop_empty_totals(fixed, func)
        self.files[path] = patch
        # half the errors are quoted back, half live only in the tool result the ladder drops
        cause = (f"The run fails with `{error}`." if rng.random() < 0.5 else
                 f"The run fails with a {error.partition(':')[0]} inside `{func}`.")
        self.edit(f"{cause} The fixture holds entries whose key is missing from the index, so "
                  f"`{func}` must fall back instead of raising, and it should not report zero "
                  "totals.", path, fixed, patch, small)
        regression = f"test_{func}_counts_each_key_once"
        # steer toward TOOL_SHARE: write a test module (prose-side tokens) only when above it
        heavy = self.tool_tokens > TOOL_SHARE * self.tokens
        if not small and heavy and rng.random() < 0.85:
            new_test = f"tests/test_{func}_regression.py"
            content = self.fit(lambda n: gt.test_module(rng, self.package, path, [func], n),
                               int(budget * 0.12), 75)
            content += "\n".join(gt.regression_test(rng, func, regression)[1:]) + "\n"
            self.call(f"Writing {new_test}: `{regression}` plus cases for the missing-key "
                      "fallback.", "write_file", {"path": new_test, "content": content},
                      f"Wrote {len(content.encode())} bytes to {new_test}")
            tests.append(new_test)
        elif test_body is not None and not small:
            lines = test_body.rstrip("\n").splitlines()
            added = "\n".join(lines + gt.regression_test(rng, func, regression)) + "\n"
            self.edit(f"Adding `{regression}` so the double count cannot come back.",
                      test_path, test_body, added)
        else:
            regression = ""
        self.call("Re-running the tests.", "shell",
                  {"command": f"python -m pytest -v {' '.join(sorted(set(tests)))}"},
                  self.fit(lambda n: go.pytest_pass(rng, self.project, tests, n),
                           max(end - self.tokens - 500, 150), 22, 5))
        extra = 1.0 if small else rng.random() * 0.55 if heavy else 0.3 + rng.random() * 0.4
        if extra < 0.3:
            self.call("", "shell", {"command": f"git diff {path}"}, go.git_diff(path, body, patch))
        elif extra < 0.55:
            self.call("", "shell", {"command": "ruff check src tests && mypy src"},
                      go.lint_log(rng, rng.sample([path, *others], rng.randint(1, 3)),
                                  rng.randint(20, 90)))
        elif extra < 0.7:
            self.call("", "shell", {"command": "pip install -e '.[dev]'"},
                      self.fit(lambda n: go.install_log(rng, self.project, n),
                               int(budget * 0.08), 40))
        self.add(Message.assistant(
            f"Fixed `{func}` in {path}: it skips keys already counted (`{seen}`) and falls "
            "back when the index has no entry for a key, so it no longer raises on partial "
            f"fixtures. {test_path} and the neighbouring tests pass"
            + (f"; `{regression}` covers the double count." if regression else ".")))

    def next_request(self) -> tuple[str, str]:
        rng = self.rng
        path = self.fresh(lambda: gt.module_path(rng, self.package))
        func = self.fresh(lambda: gt.ident(rng))
        i = self.add(Message.user(rng.choice([
            f"Thanks. Next: `{func}` in {path} has the same batching problem, can you apply the "
            "same treatment there?",
            f"Good. Now look at {path}: `{func}` drops the last {rng.choice(gt.NOUNS)} when the "
            "batch size is a multiple of the limit. Fix that too.",
            f"Support says reports built by `{func}` ({path}) are off by one on month "
            "boundaries. Please investigate and fix.",
        ])))
        self.fact("identifier", func, i)
        self.fact("path", path, i)
        return path, func

    def change_requirement(self) -> None:
        rng = self.rng
        old = self.port
        while self.port == old or f"port {self.port}" in "\n".join(self.corpus):
            self.port = rng.randint(20000, 60999)
        i = self.add(Message.user(
            f"Change of plan: ops moved things around, so the dev server must now use port "
            f"{self.port} instead of {old}. Update the config accordingly."))
        self.supersede(self.port_fact, "value", f"port {self.port}", i)
        config = (f'[server]\nhost = "127.0.0.1"\nport = {self.port}\nworkers = '
                  f'{rng.randint(2, 8)}\n\n[database]\nurl = "postgresql://localhost/'
                  f'{self.project}"\npool_size = {rng.randint(5, 20)}\n')
        self.call("Updating config/dev.toml.", "write_file",
                  {"path": "config/dev.toml", "content": config},
                  f"Wrote {len(config.encode())} bytes to config/dev.toml")
        self.call("Restarting the dev server to check it binds the new port.", "shell",
                  {"command": "make dev"},
                  self.fit(lambda n: go.server_log(rng, self.project, self.port, n),
                           max(150, min(1200, self.target // 20)), 30, 3))

    def filler(self, budget: int) -> None:
        rng = self.rng
        path = gt.module_path(rng, self.package)
        body = self.module(path, [gt.ident(rng)], max(budget, 200))
        self.call(f"A last look at {path}, which imports the changed code.",
                  "read_file", {"path": path}, gt.numbered(body))

    def run(self) -> None:
        self.intro()
        path, func = self.main_path, self.main_func
        first, changed = True, False
        while True:
            if not changed and self.tokens >= CHANGE_AT * self.target:
                self.change_requirement()
                changed = True
                continue
            remaining = self.target - self.tokens
            if remaining < 3200 and not first:
                break
            if not first:
                path, func = self.next_request()
            reserve = 400 if changed else 700 + min(1200, self.target // 20)
            budget = min(remaining - reserve, self.rng.randint(6000, 10000))
            self.episode(path, func, max(budget, 2600), first)
            first = False
        if not changed:
            self.change_requirement()
        if self.target - self.tokens > 300:
            self.filler(int((self.target - self.tokens - 250) * 0.9))
        self.add(Message.assistant(
            f"All done: the fixes are in, the tests pass and the dev config uses port "
            f"{self.port}. I did not modify {self.protected}."))


def generate_session(seed: int, target_tokens: int, *, name: str | None = None,
                     shape: str = "debugging", version: int = GENERATOR_VERSION,
                     ) -> tuple[Session, list[PlantedFact]]:
    """Generate a coding-agent session of about `target_tokens` (o200k) with planted facts.

    Args:
        seed: Fixes every byte of the result (with `shape` and `version`).
        target_tokens: The size to aim for (the result lands within a few percent).
        name: The session id; defaults to `dataset_name`.
        shape: One of `SHAPES` (version 2 writes ``debugging`` only).
        version: The generator version: 3 (the default), 2 (the original six files) or 4
            (the memory set).

    Returns:
        The session (``meta["planted_facts"]`` and ``meta["generator"]`` set; version 3 also
        sets ``shape``, ``errors``, ``files_changed``, ``pending_tasks`` and ``decisions``;
        version 4 also ``tasks`` and ``abstentions``) and the facts.

    Raises:
        ValueError: an unknown shape or version, or a shape version 2 cannot write.
    """
    if version not in VERSIONS:
        raise ValueError(f"generator version {version!r}: this generator writes "
                         f"{', '.join(map(str, VERSIONS))}")
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r} is not one of {', '.join(SHAPES)}")
    if version == 2 and shape != "debugging":
        raise ValueError(f"generator version 2 writes the debugging shape only, not {shape!r}")
    writer: WriterBase
    if version == 2:
        writer = _Writer(seed, target_tokens)
        writer.run()
    else:
        writer = _calibrated(seed, target_tokens, shape, version)
    sid = name or dataset_name(seed, target_tokens, version)
    meta: dict[str, Any] = {
        "generator": {"seed": seed, "target_tokens": target_tokens, "version": version},
        "planted_facts": [f.to_dict() for f in writer.facts],
        "project": writer.project,
    }
    if isinstance(writer, ShapedWriter):
        meta.update(writer.ground_truth())
    folder = MEMORY_DIR if version == MEMORY_VERSION else "datasets"
    session = Session(id=sid, format="generated", path=f"{folder}/{sid}.json",
                      messages=writer.messages, meta=meta)
    return session, writer.facts


AIM_TRIES = 4
AIM_TOLERANCE = 0.06


def _calibrated(seed: int, target: int, shape: str, version: int = 3) -> ShapedWriter:
    """The version-3 (or 4) session closest to `target`: a shape's fixed costs (its first
    episode, the closing messages) overshoot small targets, so the writer is rerun from the same
    seed aiming lower (or higher) until the size is within `AIM_TOLERANCE` (deterministic)."""
    kind = MemoryWriter if version == MEMORY_VERSION else ShapedWriter
    est = default_estimator()
    aim, best, best_gap = target, None, 0.0
    for _ in range(AIM_TRIES):
        writer = kind(seed, aim, shape)
        writer.run()
        tokens = est.count_context_tokens(writer.messages)
        gap = abs(tokens - target) / target
        if best is None or gap < best_gap:
            best, best_gap = writer, gap
        if gap <= AIM_TOLERANCE:
            break
        aim = max(500, round(aim * target / max(tokens, 1)))
    assert best is not None
    return best


def prose_tokens(messages: list[Message]) -> int:
    """Context tokens of `messages` without their tool-result messages: what is left once
    Goose's ladder has removed every tool response (o200k, `count_context_tokens`)."""
    kept = [m for m in messages if not m.has_tool_response()]
    return default_estimator().count_context_tokens(kept)


TRUTH_KEYS = ("errors", "files_changed", "pending_tasks", "decisions", "tasks", "abstentions")
"""The ground-truth keys of ``meta`` (beside ``planted_facts``) copied into the manifest
entry's ``truth`` when the session has them (version 3: the first four; version 4: all)."""


def manifest_entry(session: Session, spec: DatasetSpec) -> dict[str, Any]:
    """The manifest entry of a generated session: measured figures, shape and ground truth."""
    est = default_estimator()
    meta = session.meta
    truth = {"planted_facts": meta["planted_facts"],
             **{k: meta[k] for k in TRUTH_KEYS if k in meta}}
    return {
        "file": f"{session.id}.json", "name": session.id, "format": "goose-json",
        "shape": spec.shape, "version": spec.version,
        "tokens": est.count_context_tokens(session.messages),
        "tokens_without_tool_output": prose_tokens(session.messages),
        "messages": len(session.messages),
        "tool_calls": sum(len(m.tool_requests()) for m in session.messages),
        "planted_facts": len(meta["planted_facts"]),
        **{k: len(meta[k]) for k in TRUTH_KEYS if k in meta},
        "seed": spec.seed, "target_tokens": spec.target_tokens,
        "tool_share": round(tool_share(session.messages), 3),
        "truth": truth,
    }


def as_spec(spec: DatasetSpec | tuple[Any, ...]) -> DatasetSpec:
    """A `DatasetSpec` from one, or from ``(seed, target[, shape[, version]])``."""
    return spec if isinstance(spec, DatasetSpec) else DatasetSpec(*spec)


def generate_dataset(out_dir: str | Path,
                     specs: Iterable[DatasetSpec | tuple[Any, ...]] = SHIPPED) -> dict[str, Any]:
    """Write one Goose-export JSON per spec plus ``manifest.json``.

    Args:
        out_dir: The folder (created if missing).
        specs: `DatasetSpec` values, or ``(seed, target[, shape[, version]])`` tuples (the
            current version and the ``debugging`` shape by default).

    Entries of an existing manifest for other files are kept, so one seed can be added later.

    Returns:
        The manifest written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    entries: dict[str, dict[str, Any]] = {}
    if manifest_path.is_file():
        for entry in json.loads(manifest_path.read_text(encoding="utf-8")).get("sessions", []):
            entries[entry["file"]] = entry
    for spec in map(as_spec, specs):
        session, _ = generate_session(spec.seed, spec.target_tokens, shape=spec.shape,
                                      version=spec.version)
        session.write_goose_json(out / f"{session.id}.json")
        entry = manifest_entry(session, spec)
        entries[entry["file"]] = entry
    version = max((int(e.get("version") or GENERATOR_VERSION) for e in entries.values()),
                  default=GENERATOR_VERSION)
    manifest = {"generator_version": version, "token_counter": "o200k_base (goose)",
                "sessions": sorted(entries.values(), key=lambda e: (e["target_tokens"], e["seed"]))}
    write_atomic(manifest_path, json.dumps(manifest, indent=1) + "\n")
    return manifest
