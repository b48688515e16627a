"""Planted-facts probe: generated sessions plant facts; does the summary keep the current ones?

Each fact in ``session.meta["planted_facts"]`` is a dict ``{id, kind, text, message_index, stale,
superseded_by}`` and may carry ``value`` (or ``key_value``): the short string that proves recall
(a port number, a flag name). Without one, the value is the first backticked or quoted span of the
text, else its last word holding a digit, else the fact is matched by its full text only.

- A current fact (``stale`` false) is *recalled* when the summary holds its text or its value
  (case-insensitive; a value must not be part of a longer word).
- No item is counted twice across probes: a current fact that *is* one of the files probe's
  paths (its text is a touched path or a trailing part of one) or one of the errors probe's
  error lines (its text is an error line, or an ``error`` fact contained in one or containing
  one) is left to that probe (`counted_elsewhere`).
- The remaining facts are weighed by ``kind`` (constraint, value, identifier, decision, task...):
  ``facts_recall`` is the mean over kinds of each kind's share recalled, because different
  summary fields carry different kinds, and a summary that drops the field holding a kind must
  lose that kind's share however few facts of it were planted. ``facts_total`` and
  ``facts_recalled`` count facts.
- A stale fact (``stale`` true: a later fact replaced it) is *mentioned* when its value or text
  appears. Mentioning it is a failure only when the replacing fact (``superseded_by``) is not also
  mentioned: a summary that says "port 5433 (was 5432)" is fine. Facts whose replacement is unknown
  fail whenever they are mentioned.
- ``stale_avoided = 1 - stale_failures / stale_total`` (1.0 when no stale value is mentioned;
  None when the session planted no stale facts).

Sessions without planted facts give None for every fact metric.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from workbench._json_types import JSONObject, JSONValue
from workbench._memo import memo
from workbench.messages import Message
from workbench.metrics._common import ProbeResult, normalize_ws
from workbench.metrics._errors import session_errors
from workbench.metrics._files import path_suffixes, touched_files
from workbench.metrics._registry import MetricInput, metric
from workbench.metrics._shared import probe_once
from workbench.sessions import Session, meta_records

_SPAN = re.compile(r"`([^`]+)`|\"([^\"]+)\"|'([^']{2,})'")


def fact_value(fact: Mapping[str, JSONValue]) -> str | None:
    """The short value that proves a fact was recalled (see the module docstring), or None."""
    for key in ("value", "key_value"):
        v = fact.get(key)
        if v is not None and str(v).strip():
            return str(v).strip()
    text = str(fact.get("text") or "")
    m = _SPAN.search(text)
    if m:
        return next(g for g in m.groups() if g)
    digits = [w.strip(".,;:!?()") for w in text.split() if any(c.isdigit() for c in w)]
    return digits[-1] if digits else None


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _contains(summary_lower: str, needle: str) -> bool:
    """`needle` (normalized) in the normalized summary, not inside a longer word. A substring
    search that skips ahead, since a replay probes long contexts for every fact."""
    plain = normalize_ws(needle).lower()
    if not plain:
        return False
    start = summary_lower.find(plain)
    while start >= 0:
        end = start + len(plain)
        if ((start == 0 or not _is_word(summary_lower[start - 1]))
                and (end == len(summary_lower) or not _is_word(summary_lower[end]))):
            return True
        start = summary_lower.find(plain, start + 1)
    return False


def _mentioned(fact: Mapping[str, JSONValue], summary_lower: str) -> bool:
    value = fact_value(fact)
    return (_contains(summary_lower, str(fact.get("text") or ""))
            or (value is not None and _contains(summary_lower, value)))


def fact_mentioned(fact: Mapping[str, JSONValue], summary_text: str) -> bool:
    """True when the summary holds the fact's text or its value."""
    return _mentioned(fact, normalize_ws(summary_text).lower())


def counted_elsewhere(fact: Mapping[str, JSONValue], files: AbstractSet[str],
                      errors: AbstractSet[str]) -> bool:
    """True when `fact` is an item the files or errors probe already counts.

    Args:
        fact: A planted fact.
        files: The files probe's paths and their trailing parts of two or more components,
            lowercased.
        errors: The errors probe's error lines, lowercased.

    Returns:
        True for a fact whose text is one of `files` or one of `errors`, and for an ``error``
        fact contained in an error line or containing one.
    """
    text = normalize_ws(str(fact.get("text") or "")).lower()
    if text in files or text in errors:
        return True
    if fact.get("kind") == "error" and text:
        return any(text in line or line in text for line in errors)
    return False


def _other_probes_items(session: Session) -> tuple[frozenset[str], frozenset[str]]:
    messages = session.messages
    return memo().session_facts.get(messages, "items of other probes", _items_of, messages)


def _items_of(messages: list[Message]) -> tuple[frozenset[str], frozenset[str]]:
    files = frozenset(s.lower() for path in touched_files(messages) for s in path_suffixes(path))
    return files, frozenset(e.lower() for e in session_errors(messages))


def probed_facts(session: Session) -> list[JSONObject]:
    """The current planted facts the facts probe counts: not stale, not counted elsewhere."""
    facts = [f for f in meta_records(session, "planted_facts") if not f.get("stale")]
    if not facts:
        return []
    files, errors = _other_probes_items(session)
    return [f for f in facts if not counted_elsewhere(f, files, errors)]


@probe_once
def facts_probe(session: Session, summary_text: str) -> tuple[ProbeResult, ProbeResult] | None:
    """Recall of current facts (weighed by kind) and the stale-value check.

    Args:
        session: A session whose ``meta`` may hold ``planted_facts``.
        summary_text: The summary text.

    Returns:
        None without planted facts; else ``(current, stale)``: ``current`` counts the facts
        `probed_facts` keeps (``kinds``: recalled and planted per kind; its ``recall`` weighs
        kinds alike), ``stale.recalled`` counts stale facts *avoided* (not failures);
        ``stale.extra`` holds ``stale_mentioned`` and ``stale_failures``.
    """
    facts = meta_records(session, "planted_facts")
    if not facts:
        return None
    by_id = {f.get("id"): f for f in facts}
    current = probed_facts(session)
    stale = [f for f in facts if f.get("stale")]
    lowered = normalize_ws(summary_text).lower()  # once, not per fact
    kept = [_mentioned(f, lowered) for f in current]
    missing = [str(f.get("text")) for f, ok in zip(current, kept, strict=True) if not ok]
    kinds: dict[str, tuple[int, int]] = {}
    for f, ok in zip(current, kept, strict=True):
        done, count = kinds.get(str(f.get("kind") or "fact"), (0, 0))
        kinds[str(f.get("kind") or "fact")] = (done + int(ok), count + 1)
    mentioned, failures = 0, []
    for f in stale:
        if not _mentioned(f, lowered):
            continue
        mentioned += 1
        newer = by_id.get(f.get("superseded_by"))
        if newer is None or not _mentioned(newer, lowered):
            failures.append(str(f.get("text")))
    cur = ProbeResult(total=len(current), recalled=len(current) - len(missing), missing=missing,
                      kinds=kinds)
    old = ProbeResult(total=len(stale), recalled=len(stale) - len(failures), missing=failures,
                      extra={"stale_mentioned": mentioned, "stale_failures": len(failures)})
    return cur, old


@metric("facts")
def facts_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``facts_*`` recall; ``stale_total``/``_mentioned``/``_failures``/``_avoided``."""
    result = facts_probe(inp.session, inp.summary_text)
    if result is None:
        return {k: None for k in ("facts_total", "facts_recalled", "facts_recall", "stale_total",
                                  "stale_mentioned", "stale_failures", "stale_avoided")}
    cur, old = result
    out = cur.as_metrics("facts")
    out.update({"stale_total": old.total, **old.extra, "stale_avoided": old.recall})
    return out
