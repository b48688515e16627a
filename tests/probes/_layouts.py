"""The layout suite's material: the shipped datasets' summaries, each written once by the
extractive summarizer, rendered through every layout (the four shipped variants' and the ones
in ``test_layouts/``), then answered by ``lookup`` and graded.

The summarizer's reply does not depend on the summary template, so every layout holds the
same content; a layout that renders nothing leaves the raw reply (Goose's fallback), which is
the raw JSON layout.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT
from workbench.compaction import Templates
from workbench.compaction._structured import StructuredSummary
from workbench.context_mgmt import compact_messages, compacted_conversation
from workbench.errors import WorkbenchError
from workbench.messages import Message
from workbench.models import load_model
from workbench.probes import KINDS, LookupAnswerer, Question, build_questions, grade_answer
from workbench.sessions import Session, load_session

HERE = Path(__file__).parent / "test_layouts"
SHIPPED = ("default", "top3-intent", "lean-facts", "jsonl-transcript")
RAW_JSON = "raw-json"
SUITE_SESSIONS = 16
"""The suite runs on the 16 smallest shipped datasets, as the issue's measurement did."""


def layouts() -> dict[str, str]:
    """Layout name -> summary template source (empty: the raw reply is kept)."""
    builtin = (ROOT / "workbench" / "prompts" / "compaction_summary.md").read_text()
    out = {}
    for name in SHIPPED:
        path = ROOT / "prompts" / name / "compaction_summary.md"
        out[name] = path.read_text() if path.exists() else builtin
    for path in sorted(HERE.glob("*.md")):
        out[path.stem] = path.read_text()
    out[RAW_JSON] = ""
    return out


def suite_sessions() -> list[Session]:
    """The `SUITE_SESSIONS` smallest shipped datasets."""
    paths = sorted((ROOT / "datasets").glob("gen-*.json"),
                   key=lambda p: (int(re.search(r"gen-(\d+)k", p.name)[1]), p.name))  # type: ignore[index]
    return [load_session(p) for p in paths[:SUITE_SESSIONS]]


def raw_reply(session: Session, window: int) -> str | None:
    """The extractive summarizer's reply for `session` at `window` (None: it did not fit)."""
    plain = Templates.default()
    keep_raw = Templates(plain.compaction, "", "raw")  # renders nothing: the raw reply stays
    try:
        result = asyncio.run(compact_messages(load_model("extractive", window=window),
                                              session.messages, templates=keep_raw))
    except WorkbenchError:
        return None
    return result.summary.message.concat_text()


def manifest_reply(session: Session) -> str:
    """The reply a summarizer that kept everything the manifest records would give (decisions,
    file changes and how, pending tasks, errors, the user's messages), in the reply's JSON."""
    meta = session.meta
    said = [m.concat_text() for m in session.messages
            if m.role == "user" and m.concat_text().strip() and not m.has_tool_response()]
    data = {
        "user_intent": said[:3],
        "files": [{"path": f["path"], "summary": f"{f['change']}: {f.get('how', '')}"}
                  for f in meta.get("files_changed", [])],
        "errors_and_fixes": [e["text"] for e in meta.get("errors", [])],
        "problem_solving": [f"For {d['topic']} we chose {d['choice']} because {d['reason']}."
                            for d in meta.get("decisions", [])],
        "user_messages": said[3:],
        "pending_tasks": [t["text"] for t in meta.get("pending_tasks", [])],
        "current_work": "Wrapping up the session's changes.",
        "next_step": said[-1] if said else None,
    }
    return "```json\n" + json.dumps(data, indent=2) + "\n```"


def render(raw: str, source: str, name: str) -> str:
    """The summary of `raw` in the layout `source` (the raw reply for an empty one)."""
    if not source.strip():
        return raw
    parsed = StructuredSummary.parse(raw)
    assert parsed is not None, name
    return parsed.render(source, name=name) or raw


def context(session: Session, summary: str) -> list[Message]:
    """The compacted context Goose builds around `summary` (automatic path)."""
    return compacted_conversation(session.messages, Message.user(summary))


@dataclass
class Scores:
    """Mean grades per kind and of the exact questions, of one layout over the suite."""

    kinds: dict[str, list[float]]
    exact: list[float]

    def kind(self, kind: str) -> float:
        values = self.kinds[kind]
        return sum(values) / len(values)

    @property
    def accuracy(self) -> float:
        return sum(self.exact) / len(self.exact)


def score(contexts: list[tuple[list[Question], list[Message]]],
          answer: Callable[[LookupAnswerer, Question], str] | None = None) -> Scores:
    """Grades of every question over `contexts` ((questions, context) pairs)."""
    kinds: dict[str, list[float]] = defaultdict(list)
    exact: list[float] = []
    for questions, messages in contexts:
        answerer = LookupAnswerer(messages)
        for q in questions:
            grade = grade_answer(q, answer(answerer, q) if answer else answerer.answer(q))
            kinds[q.kind].append(grade)
            if q.exact:
                exact.append(grade)
    return Scores(dict(kinds), exact)


def suite(window: int | None) -> dict[str, list[tuple[Session, list[Question], str]]]:
    """Layout name -> (session, its questions, the rendered summary) for the suite's sessions
    that the summarizer compacted at `window` (None: the manifest's summary, every session)."""
    out: dict[str, list[tuple[Session, list[Question], str]]] = {n: [] for n in layouts()}
    for session in suite_sessions():
        raw = raw_reply(session, window) if window else manifest_reply(session)
        if raw is None:
            continue
        questions = build_questions(session).questions
        for name, source in layouts().items():
            out[name].append((session, questions, render(raw, source, name)))
    return out


def table(scores: dict[str, Scores]) -> str:
    """The per-kind table (points, and the difference from the default's)."""
    base = scores["default"]
    lines = [f"{'layout':18s} {'accuracy':>16s} " + " ".join(f"{k:>16s}" for k in KINDS)]
    for name, s in scores.items():
        cells = [f"{100 * s.accuracy:6.1f} ({100 * (s.accuracy - base.accuracy):+5.1f})"]
        cells += [f"{100 * s.kind(k):6.1f} ({100 * (s.kind(k) - base.kind(k)):+5.1f})"
                  for k in KINDS]
        lines.append(f"{name:18s} " + " ".join(f"{c:>16s}" for c in cells))
    return "\n".join(lines)
