"""Building a session's questions from its ground truth: the manifest, else the transcript.

Generated sessions say what is true in ``session.meta``; each key gives questions of one kind:

- ``planted_facts`` -> **recall**: a fill-in-the-blank question per current fact, cut from the
  sentence that planted it (the latest value of a fact that changed; the replaced values are
  kept as `Question.stale`). Error, task and decision facts are left to the error,
  continuation and decision questions.
- ``errors`` (exact error lines) -> **recall**: the first and the most recent error, quoted.
- ``files_changed`` (path, change, how) -> **artifact**: which files changed (a list), whether
  each was created, edited or deleted (a choice), and what changed in it (open).
- ``pending_tasks`` -> **continuation**: what is left to do (open).
- ``decisions`` (topic, choice, reason) -> **decision**: what was decided about the topic and
  why (open; the choice must be named).
- ``abstentions`` (version-4 sessions) -> **recall**: a question whose answer the session
  never gives; "unknown" is right (`Question.abstention`).

Where a key is missing (version-2 generated sessions) the transcript stands in: the first and
last error lines of failing tool outputs (the errors probe's extraction), the files the tool
calls wrote, the last human request, the last tool call. A recording with no manifest at all (a
user's own session: `is_recording`) is asked the transcript's questions instead
(`workbench.probes._from_transcript`: files, failures, commands, identifiers, constraints,
requests, updates, each with its evidence). Only the part of the session a question set covers
is read (`boundary`: a recorded summary's prefix).

`select_questions` keeps at most `per_session` questions, taking the kinds in turn so every kind
asked for is represented; within a kind, facts and files are taken spread over the session
(first, last, middle, ...) rather than from its start.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from workbench._json_types import JSONObject, JSONValue
from workbench.messages import Message
from workbench.metrics._common import content_words, normalize_ws
from workbench.metrics._errors import session_errors
from workbench.metrics._facts import fact_value
from workbench.metrics._files import FILE_EXTENSIONS, command_paths
from workbench.metrics._requests import user_requests
from workbench.probes._cloze import BLANK, make_cloze
from workbench.probes._from_transcript import (
    DEFAULT_MAX_QUESTIONS,
    DEFAULT_MIN_QUESTIONS,
    TOKENS_PER_QUESTION,
    build_transcript_questions,
)
from workbench.probes._questions import (
    CUE_TOOL_CALL,
    CUE_USER,
    KINDS,
    Question,
    QuestionSet,
    question_set_key,
)
from workbench.probes._spread import spread
from workbench.probes._transcript import action_of, is_injected, message_text, modified_files
from workbench.sessions import Session, as_int, meta_records, prefix_session

__all__ = ["DEFAULT_PER_SESSION", "MANIFEST_KEYS", "build_questions", "is_recording",
           "select_questions", "spread"]

DEFAULT_PER_SESSION = 10
MANIFEST_KEYS = ("planted_facts", "errors", "files_changed", "pending_tasks", "decisions")
"""Meta keys a generated session's manifest writes; a session with none is a recording."""
CHANGES = ["created", "edited", "deleted"]
LEFT_TO_OTHER_KINDS = frozenset({"error", "task", "decision"})
"""Planted-fact kinds no fill-in-the-blank question asks for: the error questions ask for
error lines, the continuation question for pending tasks, the decision questions for
decisions (so no item is asked twice)."""

FACT_QUESTION = ('Fill in the blank with the exact value the conversation gives (its latest '
                 'value, if it changed): "{cloze}"')
FIRST_ERROR = "What was the first error the session ran into? Quote the error message exactly."
LAST_ERROR = ("What is the most recent error message in the conversation? Quote it exactly.")
FILES_QUESTION = "Which files did we create, edit or delete in this session? List every path."
CHANGE_QUESTION = "Was the file `{path}` created, edited or deleted in this session?"
HOW_QUESTION = "What did we change in `{path}`, and how?"
PENDING_QUESTION = "What is still left to do? Name every pending task."
REQUEST_QUESTION = "What did the user ask for most recently?"
TOOL_QUESTION = ("What was the last tool call the agent made? Name the tool and the file or "
                 "command it acted on.")
DECISION_QUESTION = "What did we decide about {topic}, and why?"
ABSTAIN_SUFFIX = ' If the conversation never says, answer "unknown".'
UNKNOWN = "unknown"
DECISION_CUE = ["decided", "decision", "chose", "because", "instead"]

PENDING_CUE = ["todo", "next", "remaining", "pending", "still", "left", "outstanding"]
REQUEST_CUE = [CUE_USER, "asked", "request", "requested", "wants", "intent", "goal"]
TOOL_CUE = [CUE_TOOL_CALL, "tool", "ran", "command", "called", "last"]
ERROR_CUE = ["error", "failed", "exception", "traceback"]
FILES_CUE = ["edited", "created", "wrote", "modified", "changed", "files"]
_DIGITS = re.compile(r"^[+-]?\d+(?:\.\d+)?$")


def value_type(value: str) -> str:
    """The answer type of a planted value: ``number``, ``path`` or ``identifier``."""
    if _DIGITS.match(value):
        return "number"
    ext = value.rsplit(".", 1)[-1].lower() if "." in value else ""
    if "/" in value or ext in FILE_EXTENSIONS:
        return "path"
    return "identifier"


def _latest(fact: JSONObject, by_id: dict[JSONValue, JSONObject]) -> tuple[JSONObject, list[str]]:
    """The fact at the end of `fact`'s replacement chain, and the values it replaced."""
    stale: list[str] = []
    seen = set()
    while fact.get("stale") and fact.get("superseded_by") in by_id and id(fact) not in seen:
        seen.add(id(fact))
        value = fact_value(fact)
        if value:
            stale.append(value)
        fact = by_id[fact["superseded_by"]]
    return fact, stale


def _fact_questions(session: Session, messages: Sequence[Message]) -> list[Question]:
    facts = meta_records(session, "planted_facts")
    by_id = {f.get("id"): f for f in facts}
    chains: dict[JSONValue, tuple[JSONObject, list[str]]] = {}
    for fact in facts:
        latest, stale = _latest(fact, by_id)
        if latest.get("stale") or latest.get("kind") in LEFT_TO_OTHER_KINDS:
            continue  # the error, continuation and decision questions ask for these
        entry = chains.setdefault(latest.get("id"), (latest, []))
        entry[1].extend(v for v in stale if v not in entry[1])
    found = []  # (fact, stale values, value, the text that holds the value)
    for latest, stale in chains.values():
        text = str(latest.get("text") or "").strip()
        value = fact_value(latest) or (text if text and " " not in text else None)
        index = as_int(latest.get("message_index") or 0)
        texts = [message_text(messages[index])] if 0 <= index < len(messages) else []
        texts.append(text)
        holder = next((t for t in texts if value and value.lower() in t.lower()), None)
        if value and holder is not None:
            found.append((latest, stale, value, holder))
    # A sentence the session repeats with other values (the same step on another file) makes
    # an ambiguous blank: such blanks get the sentence before them too; still ambiguous ones
    # are dropped.
    clozes = [make_cloze(text, value) for _, _, value, text in found]
    for _ in range(2):
        counts = Counter(c[0] for c in clozes if c is not None)
        if all(n == 1 for n in counts.values()):
            break
        clozes = [make_cloze(f[3], f[2], 2) if c is not None and counts[c[0]] > 1 else c
                  for f, c in zip(found, clozes, strict=True)]
    counts = Counter(c[0] for c in clozes if c is not None)
    out = []
    for (latest, stale, value, _), pair in zip(found, clozes, strict=True):
        if pair is None or counts[pair[0]] > 1:
            continue
        cloze, before = pair
        out.append(Question(
            id=f"recall-fact-{latest.get('id')}", kind="recall",
            text=FACT_QUESTION.format(cloze=cloze), expected=value,
            answer_type=value_type(value), source=f"planted_fact:{latest.get('id')}",
            cue=content_words(cloze.replace(BLANK, " "), min_len=3)[:12], stale=stale,
            blank_before=before))
    return spread(out)


def _items(session: Session, key: str, boundary: int | None) -> list[JSONObject] | None:
    """``meta[key]`` entries inside the covered prefix, or None when the manifest lacks `key`."""
    items = session.meta.get(key)
    if not isinstance(items, list):
        return None
    return [i for i in items if isinstance(i, dict)
            and (boundary is None or as_int(i.get("message_index") or 0) < boundary)]


def _error_questions(errors: list[str]) -> list[Question]:
    if not errors:
        return []
    out = [Question(id="recall-error-last", kind="recall", text=LAST_ERROR, expected=errors[-1],
                    answer_type="error", source="errors", cue=ERROR_CUE, position="last")]
    if len(errors) > 1:
        out.append(Question(id="recall-error-first", kind="recall", text=FIRST_ERROR,
                            expected=errors[0], answer_type="error", source="errors",
                            cue=ERROR_CUE, position="first"))
    return out


def _file_questions(changed: list[JSONObject] | None,
                    messages: Sequence[Message]) -> list[Question]:
    if changed is None:
        paths = modified_files(messages)
        if not paths:
            return []
        return [Question(id="artifact-files", kind="artifact", text=FILES_QUESTION,
                         expected=paths, grader="list", answer_type="paths",
                         source="transcript:tool_calls", cue=FILES_CUE)]
    paths = list(dict.fromkeys(str(c.get("path")) for c in changed if c.get("path")))
    if not paths:
        return []
    out = [Question(id="artifact-files", kind="artifact", text=FILES_QUESTION, expected=paths,
                    grader="list", answer_type="paths", source="files_changed", cue=FILES_CUE)]
    latest = {str(c.get("path")): c for c in changed if c.get("path")}
    for n, path in enumerate(spread(paths), 1):
        entry = latest[path]
        change = str(entry.get("change") or "").lower()
        if change in CHANGES:
            out.append(Question(id=f"artifact-change-{n}", kind="artifact",
                                text=CHANGE_QUESTION.format(path=path), expected=change,
                                answer_type="choice", choices=CHANGES, source="files_changed",
                                cue=content_words(path, min_len=3)))
        how = str(entry.get("how") or "").strip()
        if how:
            out.append(Question(id=f"artifact-how-{n}", kind="artifact",
                                text=HOW_QUESTION.format(path=path), expected=how,
                                grader="overlap", answer_type="text", source="files_changed",
                                cue=content_words(path, min_len=3), judged=True))
    return out


def _tool_target(arguments: Mapping[str, JSONValue]) -> tuple[str, str]:
    """What a question about a tool call expects: its file path, else its command's head,
    else the first path of a command whose head is a bare program (``rm old.json``)."""
    action = action_of("tool", arguments)
    if action.kind == "command" and " " not in action.argument:
        command = next((v for k in ("command", "cmd", "script")
                        if isinstance(v := arguments.get(k), str)), "")
        paths = command_paths(command)
        if paths:
            return paths[0], "path"
    return action.argument, "path" if action.kind == "path" else "text"


def _continuation_questions(pending: list[JSONObject] | None, messages: Sequence[Message],
                            summaries: set[str]) -> list[Question]:
    out = []
    texts = [str(p.get("text") or "").strip() for p in pending or []]
    texts = [t for t in texts if t]
    if texts:
        out.append(Question(id="continuation-pending", kind="continuation",
                            text=PENDING_QUESTION, expected="; ".join(texts), grader="overlap",
                            answer_type="text", source="pending_tasks", cue=PENDING_CUE,
                            position="last", judged=True))
    requests = [r for r in user_requests(list(messages))
                if not is_injected(r) and r not in summaries]
    if requests:
        out.append(Question(id="continuation-last-request", kind="continuation",
                            text=REQUEST_QUESTION, expected=requests[-1], grader="overlap",
                            answer_type="text", source="transcript:last_request",
                            cue=REQUEST_CUE, position="last", judged=True))
    calls = [(r.name or "", r.arguments or {}) for m in messages for r in m.tool_requests()]
    if calls:
        name, arguments = calls[-1]
        expected, answer_type = _tool_target(arguments)
        if expected:
            out.append(Question(id="continuation-last-tool", kind="continuation",
                                text=TOOL_QUESTION, expected=expected, answer_type=answer_type,
                                source=f"transcript:last_tool_call:{name}", cue=TOOL_CUE,
                                position="last"))
    return out


def _decision_questions(decisions: list[JSONObject] | None) -> list[Question]:
    out = []
    for n, d in enumerate(decisions or [], 1):
        topic, choice = str(d.get("topic") or "").strip(), str(d.get("choice") or "").strip()
        if not topic or not choice:
            continue
        reason = str(d.get("reason") or "").strip()
        out.append(Question(id=f"decision-{d.get('id') or n}", kind="decision",
                            text=DECISION_QUESTION.format(topic=topic), expected=choice,
                            grader="overlap", answer_type="text", source="decisions",
                            cue=content_words(topic, min_len=3) + DECISION_CUE,
                            judged=True, reference=f"{choice}, because {reason}" if reason
                            else choice))
    return out


def _abstention_questions(items: list[JSONObject] | None) -> list[Question]:
    out = []
    for n, item in enumerate(items or [], 1):
        text = str(item.get("question") or "").strip()
        if text:
            out.append(Question(id=f"recall-abstain-{item.get('id') or n}", kind="recall",
                                text=text + ABSTAIN_SUFFIX, expected=UNKNOWN,
                                answer_type="text", source="abstentions",
                                cue=content_words(text, min_len=3)[:12], abstention=True))
    return out


def _interleave(first: list[Question], second: list[Question]) -> list[Question]:
    out: list[Question] = []
    for i in range(max(len(first), len(second))):
        out.extend(q[i] for q in (first, second) if i < len(q))
    return out


def _recorded_summaries(session: Session) -> set[str]:
    """Texts of the summaries the recorded agent wrote (Claude Code puts them in the history
    as user messages; they are not requests)."""
    return {normalize_ws(str(r.get("text") or ""))
            for r in meta_records(session, "reference_summaries")}


def select_questions(questions: Iterable[Question], kinds: Sequence[str] = KINDS,
                     per_session: int | None = DEFAULT_PER_SESSION) -> list[Question]:
    """At most `per_session` questions of `kinds`, taking the kinds in turn (see the module)."""
    queues = {k: [q for q in questions if q.kind == k] for k in kinds}
    chosen: list[Question] = []
    limit = per_session if per_session is not None else sum(len(v) for v in queues.values())
    while len(chosen) < limit and any(queues.values()):
        for kind in kinds:
            if queues[kind] and len(chosen) < limit:
                chosen.append(queues[kind].pop(0))
    order = {k: i for i, k in enumerate(kinds)}
    return sorted(chosen, key=lambda q: order[q.kind])


def is_recording(session: Session) -> bool:
    """True for a session without ground truth: its meta holds none of `MANIFEST_KEYS` (a
    user's own recording, not a generated session)."""
    return not any(key in session.meta for key in MANIFEST_KEYS)


def build_questions(session: Session, *, boundary: int | None = None,
                    kinds: Sequence[str] = KINDS,
                    per_session: int | None = DEFAULT_PER_SESSION,
                    tokens_per_question: int = TOKENS_PER_QUESTION,
                    min_questions: int = DEFAULT_MIN_QUESTIONS,
                    max_questions: int | None = DEFAULT_MAX_QUESTIONS) -> QuestionSet:
    """The questions to ask about `session` (or its first `boundary` messages).

    A generated session is asked about its manifest (at most `per_session` questions); a
    recording without one about its transcript (`build_transcript_questions`: one question
    per `tokens_per_question` tokens, between `min_questions` and `max_questions`).

    Args:
        session: The session (its ``meta`` is the manifest when it was generated).
        boundary: Cover only the messages before this index (a recorded summary's boundary).
        kinds: The kinds to ask (`KINDS` by default).
        per_session: The most questions from a manifest (None: all).
        tokens_per_question: A recording: one question per this many tokens.
        min_questions: A recording: at least this many questions (when found).
        max_questions: A recording: at most this many (None: every one found).

    Returns:
        The `QuestionSet` (deterministic: the same session always gives the same questions).
    """
    scoped = session if boundary is None else prefix_session(session, boundary)
    if is_recording(scoped):
        return build_transcript_questions(
            scoped, boundary=boundary, kinds=kinds, tokens_per_question=tokens_per_question,
            min_questions=min_questions, max_questions=max_questions)
    messages = scoped.messages
    meta_errors = _items(scoped, "errors", boundary)
    errors = ([str(e.get("text")) for e in meta_errors if e.get("text")]
              if meta_errors is not None else session_errors(list(messages)))
    recall = _interleave(_interleave(_fact_questions(scoped, messages), _error_questions(errors)),
                         _abstention_questions(_items(scoped, "abstentions", boundary)))
    candidates = (recall
                  + _file_questions(_items(scoped, "files_changed", boundary), messages)
                  + _continuation_questions(_items(scoped, "pending_tasks", boundary), messages,
                                            _recorded_summaries(scoped))
                  + _decision_questions(_items(scoped, "decisions", boundary)))
    chosen = select_questions(candidates, kinds, per_session)
    return QuestionSet(key=question_set_key(session.id, boundary), session_id=session.id,
                       boundary=boundary, questions=chosen)
