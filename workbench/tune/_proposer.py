"""The optional proposer: a model rewrites the compaction prompt from what the summaries forgot.

After a first rung of the baseline, the proposer is shown the baseline's compaction prompt and
the failure analysis (the items most often missing from its summaries, from each cell's
``forgotten.json``) and asked for a revised prompt. Each accepted proposal becomes a variant folder
under ``<run>/tune/proposals/<name>/`` (the new ``compaction.md``, the baseline's summary
template, ``provenance.json``: proposer, date, the analysis it saw, the hash of its input) and
joins the search as one more prompt group. A proposal that drops ``{{ messages }}`` or does not
render is kept in the provenance as rejected, with the reason, and not searched.
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from workbench._storage import write_atomic
from workbench.compaction import CompactionModel
from workbench.compaction._templates import (
    COMPACTION_SUMMARY_TEMPLATE,
    COMPACTION_TEMPLATE,
    render,
)
from workbench.errors import TemplateError
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import (
    VARIANT_FILE,
    load_variant,
    register_variant_folder,
)
from workbench.harness.results._results import Results, read_cell_texts
from workbench.messages import Message
from workbench.models import load_model
from workbench.tune._groups import PromptGroup

PROPOSER_SYSTEM = """You improve the prompt a coding agent uses to compress its conversation \
history into a structured JSON summary. Below are the current prompt (a Jinja template; the \
conversation is inserted where it says {{ messages }}) and the facts its summaries most often \
lost. Write a revised prompt that keeps the same JSON shape and makes those facts survive, \
without asking for more text than needed. Keep the line {{ messages }} exactly once. Answer with \
the complete revised template only, inside one ```markdown fenced block."""
"""The proposer's instructions (the model's system prompt)."""
MAX_FORGOTTEN = 20
"""Most-forgotten items shown to the proposer."""
_OPEN_FENCE = re.compile(r"^```(?:markdown|md|jinja)?\s*$")
_MESSAGES_VAR = re.compile(r"\{\{\s*messages\s*\}\}")


class Proposal(TypedDict):
    """One prompt the proposer wrote: `source` is None when it cannot be used (`reason`)."""

    source: str | None
    reason: str | None
    input_sha256: str
    reply: str


class ProposalRecord(TypedDict):
    """A proposal's provenance (``<run>/tune/proposals/<name>/provenance.json``)."""

    name: str
    proposer: str
    date: str
    base: str
    forgotten: list[str]
    input_sha256: str
    accepted: bool
    reason: str | None


def failure_analysis(results: Results, template: str, limit: int = MAX_FORGOTTEN) -> list[str]:
    """The items most often forgotten by `template`'s summaries in a run, most frequent first.

    Reads each ok cell's kept ``forgotten.json`` text (a mapping of probe kind to the items
    missing from that summary; `Results.cell_text`), in one query for all of them.
    """
    counts: collections.Counter[str] = collections.Counter()
    cells = results.cells
    ids = [str(c) for c in
           cells[(cells["template"] == template) & cells["status"].eq("ok")]["cell_id"]]
    texts = read_cell_texts(Path(results.run_dir), "forgotten.json", ids)
    for text in (texts[c] for c in ids if c in texts):  # in the cells' order: ties stay put
        data = json.loads(text)
        for kind, items in (data.items() if isinstance(data, dict) else []):
            for item in items if isinstance(items, list) else []:
                counts[f"{kind}: {item if isinstance(item, str) else json.dumps(item)}"] += 1
    return [f"{item} (missed {n}x)" for item, n in counts.most_common(limit)]


def proposer_prompt(base_prompt: str, forgotten: list[str]) -> str:
    """The user message the proposer gets: the current prompt and the failure analysis."""
    missed = "\n".join(f"- {item}" for item in forgotten) or "- (nothing recorded as forgotten)"
    return (f"Current prompt:\n\n```markdown\n{base_prompt}\n```\n\n"
            f"What the summaries forgot, most frequent first:\n{missed}\n")


def extract_template(reply: str) -> str:
    """The template in a proposer's reply: from the first opening fence line to the last closing
    fence line (the template itself holds fenced blocks), else the whole text."""
    lines = reply.splitlines()
    start = next((i for i, line in enumerate(lines) if _OPEN_FENCE.match(line)), None)
    end = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip() == "```"), None)
    if start is not None and end is not None and end > start:
        return "\n".join(lines[start + 1:end]).strip() + "\n"
    return reply.strip() + "\n"


def check_proposal(source: str) -> str | None:
    """Why a proposed prompt cannot be used, or None when it can."""
    if len(_MESSAGES_VAR.findall(source)) != 1:
        return "the prompt must show the conversation exactly once ({{ messages }})"
    try:
        render(source, {"messages": "probe"}, "proposal")
    except TemplateError as exc:
        return str(exc)
    return None


async def propose(model: CompactionModel, base_prompt: str, forgotten: list[str],
                  n: int = 1) -> list[Proposal]:
    """Ask `model` for `n` revised prompts; each result has ``source`` (or None), ``reason``."""
    request = proposer_prompt(base_prompt, forgotten)
    out: list[Proposal] = []
    for i in range(n):
        text = request if i == 0 else request + f"\n(Proposal {i + 1}: take a different approach.)"
        reply, _usage = await model.complete(PROPOSER_SYSTEM, [Message.user(text)])
        source = extract_template(reply.concat_text())
        reason = check_proposal(source)
        out.append({"source": None if reason else source, "reason": reason,
                    "input_sha256": hashlib.sha256(
                        (PROPOSER_SYSTEM + text).encode()).hexdigest(),
                    "reply": reply.concat_text()})
    return out


async def add_proposals(experiment: Experiment, tune_dir: Path, first: Results, baseline: str,
                        proposer: CompactionModel | None, groups: list[PromptGroup],
                        params: dict[str, Mapping[str, object]]) -> list[ProposalRecord]:
    """Run the proposer on the first rung's failures and add its prompts as prompt groups.

    Args:
        experiment: The tune spec.
        tune_dir: ``<run>/tune``.
        first: `Results` of the first rung (the baseline alone).
        baseline: The baseline's label.
        proposer: A `CompactionModel`, or None to load ``[tune] proposer``.
        groups: The search's prompt groups; accepted proposals are appended.
        params: Label -> parameter values; proposals are added with the baseline's.

    Returns:
        One provenance dict per proposal (accepted or not).
    """

    tune = experiment.tune
    assert tune is not None
    if proposer is None:
        proposer = load_model(str(tune.proposer))
    base = load_variant(baseline, experiment)
    forgotten = failure_analysis(first, baseline)
    proposals = await propose(proposer, base.templates.baked().compaction, forgotten, tune.proposals)
    records: list[ProposalRecord] = []
    for i, proposal in enumerate(proposals, start=1):
        name = f"proposal-{i}"
        record: ProposalRecord = {
            "name": name, "proposer": str(tune.proposer or getattr(proposer, "name", "")),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "base": baseline, "forgotten": forgotten,
            "input_sha256": proposal["input_sha256"], "accepted": proposal["source"] is not None,
            "reason": proposal["reason"]}
        folder = tune_dir / "proposals" / name
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "reply.md", proposal["reply"])
        if proposal["source"] is not None:
            write_atomic(folder / COMPACTION_TEMPLATE, proposal["source"])
            write_atomic(folder / COMPACTION_SUMMARY_TEMPLATE, base.templates.baked().summary)
            options = "".join(f"{k} = {json.dumps(v)}\n" for k, v in base.options.items())
            write_atomic(folder / VARIANT_FILE, options)
            register_variant_folder(name, folder)
            groups.append(PromptGroup(f"proposal:{name}", [name]))
            params[name] = {}
        write_atomic(folder / "provenance.json", json.dumps(record, indent=2))
        records.append(record)
    return records
