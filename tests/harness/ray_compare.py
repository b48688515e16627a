"""Comparing a Ray run folder with a local one, cell for cell: what the Ray executor tests on a
local instance (test_ray_executor) and on a multi-node cluster (test_ray_cluster) share."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

# Timing, ids, tracebacks (they name the code path: CachedModel here, the coordinator there),
# and where a try ran (Ray's task_attempt and node; NULL locally).
VOLATILE = {"run_id", "started_at", "finished_at", "latency_ms", "attempt_id", "task_attempt",
            "node_id", "traceback"}


def rows(out: Path, table: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(out / "results.sqlite")
    db.row_factory = sqlite3.Row
    # shared_from names an attempt by its random id: compare the (cell, attempt) it names.
    names = {r[0]: (r[1], r[2]) for r in db.execute(
        "SELECT attempt_id, cell_id, attempt_no FROM attempts")}
    found = [{k: names[v] if k == "shared_from" and v is not None else v
              for k, v in dict(r).items() if k not in VOLATILE}
             for r in db.execute(f"SELECT * FROM {table}")]
    return sorted(found, key=lambda r: (r["cell_id"], r.get("attempt_no") or 0))


# Who paid for a shared call is whichever cell reached it first: a race with two workers, the
# event loop's order locally. These columns say who paid; every other column must not depend on it.
PAYER_COLUMNS = {"attempts": ("shared", "shared_from", "cache_hit"),
                 "cells": ("calls_made", "calls_shared", "spent_input_tokens",
                           "spent_output_tokens", "spent_cost")}
HONEST_COLUMNS = ("billed_tokens", "billed_reported", "billed_estimated", "cost", "calls",
                  "retained_tokens", "probe_recall")
"""Per-template columns that say what a template's summaries cost: equal on every executor."""


def without_payer(out: Path, table: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in PAYER_COLUMNS[table]}
            for row in rows(out, table)]


def check_one_payer_per_shared_call(out: Path) -> None:
    """Every shared attempt names a paid attempt of the same prompt and carries its usage."""
    db = sqlite3.connect(out / "results.sqlite")
    db.row_factory = sqlite3.Row
    attempts = {r["attempt_id"]: dict(r) for r in db.execute("SELECT * FROM attempts")}
    for a in attempts.values():
        if not a["shared"]:
            continue
        paid = attempts[a["shared_from"]]
        assert paid["shared"] == 0 and paid["prompt_hash"] == a["prompt_hash"], (a, paid)
        assert [a[c] for c in ("input_tokens", "output_tokens", "cost")] == [
            paid[c] for c in ("input_tokens", "output_tokens", "cost")], (a, paid)
    db.close()


def assert_same_results(local_dir: Path, ray_dir: Path) -> None:
    """The Ray run folder holds the local one's cells, attempts, table and summaries exactly,
    apart from which cell of a share group paid (a race); what each template's summaries cost
    is equal on both, and each group has one payer whose usage its sharers carry."""
    from workbench.harness import Results

    local, on_ray = Results.load(local_dir), Results.load(ray_dir)
    assert on_ray.status == "finished" and len(on_ray.cells) == len(local.cells)
    # Calls are shared on both executors (same groups, paid once each)...
    assert on_ray.cells["calls_shared"].sum() == local.cells["calls_shared"].sum() > 0
    for column in ("spent_input_tokens", "spent_output_tokens", "billed_input_tokens"):
        assert on_ray.cells[column].sum() == local.cells[column].sum(), column
    # ...and what a template's summaries cost does not depend on which cell paid.
    keys = ["template", "model", "window"]
    assert on_ray.table()[keys + list(HONEST_COLUMNS)].equals(
        local.table()[keys + list(HONEST_COLUMNS)])
    for out in (local_dir, ray_dir):
        check_one_payer_per_shared_call(out)
    assert without_payer(ray_dir, "cells") == without_payer(local_dir, "cells")
    assert without_payer(ray_dir, "attempts") == without_payer(local_dir, "attempts")
    for path in sorted((local_dir / "summaries").iterdir()):
        assert (ray_dir / "summaries" / path.name).read_text() == path.read_text(), path.name
    assert list(on_ray.runs["executor"]) == ["ray"]
