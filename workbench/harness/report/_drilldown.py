"""The data behind the report's drill-down: a light cell index and compressed cell payloads.

The index (one small record per cell: key, status, a few numbers) is embedded as JSON. The heavy
part (summary text, raw reply, ladder attempts, what the summary forgot) is packed into chunks
of `CHUNK_CELLS` cells, each gzip-compressed and base64-encoded into its own ``<script>`` block;
the page decompresses a chunk (``DecompressionStream``) only when a cell in it is opened, so a
2,000-cell run costs no DOM and little parsing up front.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from pathlib import Path

import pandas as pd

from workbench.harness.results._results import read_cell_texts

CHUNK_CELLS = 100
"""Cells per compressed payload block."""

INDEX_METRICS = ("retained_tokens", "summary_tokens", "retries", "probe_recall", "qa_accuracy")
QA_FIELDS = ("id", "kind", "question", "expected", "reference", "grader", "answer", "grade",
             "stale", "full_answer", "full_grade", "judge", "note")
"""What the drill-down shows of each question of a cell's ``qa.json``."""


def script_json(value: object) -> str:
    """JSON that is safe inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` are written as ``\\u003c``-style escapes, so neither ``</script>``
    nor ``<!--`` can appear in the output, whatever the strings hold; JSON.parse reads them back
    unchanged.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _clean(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):  # numpy scalar
        return _clean(value.item())
    return value


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _qa(text: str | None) -> dict[str, object] | None:
    """The cell's questions, answers and grades (its ``qa.json``), or None."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    questions = [{k: q.get(k) for k in QA_FIELDS if k in q} for q in data.get("questions") or []
                 if isinstance(q, dict)]
    return {"answerer": data.get("answerer"), "judge": data.get("judge"),
            "metrics": data.get("metrics") or {}, "questions": questions,
            "next_action": data.get("next_action"), "notes": data.get("notes") or []}


def _attempt_rows(attempts: pd.DataFrame) -> dict[str, list[list[object]]]:
    out: dict[str, list[list[object]]] = {}
    if attempts.empty or "cell_id" not in attempts.columns:
        return out
    if "purpose" in attempts.columns:  # the ladder lists summary calls; QA calls have a purpose
        attempts = attempts[attempts["purpose"].isna()]
    cols = ["attempt_no", "removal_percent", "input_tokens", "output_tokens", "outcome", "error"]
    frame = attempts.reindex(columns=["cell_id"] + cols)
    frame = frame.sort_values(["cell_id", "attempt_no"], kind="stable")
    for record in frame.itertuples(index=False):
        out.setdefault(str(record[0]), []).append([_clean(v) for v in record[1:]])
    return out


def cell_index(cells: pd.DataFrame, group_of: list[int]) -> list[dict[str, object]]:
    """One light record per cell, for the drill-down lists (no text bodies).

    Args:
        cells: The run's cells.
        group_of: Per cell (same order), the index of its table row.

    Returns:
        Records with ``id``, ``g`` (table row), ``k`` (payload chunk), the key columns, status,
        parse outcome, error type and `INDEX_METRICS`.
    """
    keys = ["session_id", "template", "model", "window", "repeat", "status", "parse_outcome",
            "error_type"] + [m for m in INDEX_METRICS if m in cells.columns]
    frame = cells.reindex(columns=["cell_id"] + keys)
    out = []
    for i, record in enumerate(frame.to_dict("records")):
        item = {"id": str(record.pop("cell_id")), "g": group_of[i], "k": i // CHUNK_CELLS}
        item.update({k: _clean(v) for k, v in record.items()})
        out.append(item)
    return out


def cell_payloads(run_dir: Path, cells: pd.DataFrame, attempts: pd.DataFrame,
                  forgotten: dict[str, dict[str, list[str]] | None]) -> list[str]:
    """The heavy per-cell data, as base64 gzip chunks of `CHUNK_CELLS` cells (index order).

    Each chunk decodes to ``{cell_id: {summary, raw, forgotten, attempts, error, qa}}``.
    `summary` and `raw` are None when no file was stored (the page says so); `qa`, present
    when the cell was asked questions (``[qa]``), holds them with their answers, grades and
    the judge's scores and reasons.

    Args:
        run_dir: The run folder (summaries are read from it).
        cells: The run's cells, in index order.
        attempts: The run's attempts.
        forgotten: ``{cell_id: {kind: [items]} or None}``.

    Returns:
        One base64 string per chunk.
    """
    by_cell = _attempt_rows(attempts)
    chunks: list[str] = []
    records = cells.to_dict("records")
    ids = [str(row["cell_id"]) for row in records]
    raws, answers = read_cell_texts(run_dir, "raw.txt", ids), read_cell_texts(run_dir, "qa.json", ids)
    for start in range(0, len(records), CHUNK_CELLS):
        chunk: dict[str, dict[str, object]] = {}
        for row in records[start:start + CHUNK_CELLS]:
            cell_id = str(row["cell_id"])
            rel = row.get("summary_path") or f"summaries/{cell_id}.md"
            summary = _read(run_dir / str(rel)) if _clean(rel) else None
            error = None
            if row.get("status") == "error":
                error = {"type": _clean(row.get("error_type")),
                         "message": _clean(row.get("error_message"))}
            chunk[cell_id] = {"summary": summary, "raw": raws.get(cell_id),
                              "forgotten": forgotten.get(cell_id),
                              "attempts": by_cell.get(cell_id, []), "error": error}
            qa = _qa(answers.get(cell_id))
            if qa is not None:
                chunk[cell_id]["qa"] = qa
        data = json.dumps(chunk, ensure_ascii=False, separators=(",", ":"), default=str)
        packed = gzip.compress(data.encode("utf-8"), compresslevel=6, mtime=0)
        chunks.append(base64.b64encode(packed).decode("ascii"))
    return chunks
