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


# An attempt's usage columns -> the cell's totals of them.
USAGE_COLUMNS = {"input_tokens": "billed_input_tokens", "output_tokens": "billed_output_tokens",
                 "cache_read_tokens": "cache_read_tokens",
                 "cache_write_tokens": "cache_write_tokens", "cost": "cost"}
# What the billed attempt of a shared call holds and its sharers do not (they hold zeros).
BILLED_COLUMNS = (*USAGE_COLUMNS, "cache_hit")


def cell_totals(attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell's billed columns from its attempts, summed as `run_cell` sums them."""
    used = [a for a in attempts if a["shared"] is not None]  # the attempts with a usage
    totals: dict[str, Any] = {USAGE_COLUMNS[c]: sum(a[c] or 0 for a in used)
                              for c in USAGE_COLUMNS if c != "cost"}
    costs = [a["cost"] for a in sorted(used, key=lambda a: a["attempt_no"])]
    totals["cost"] = None if None in costs else float(sum(costs))
    totals["calls_made"] = sum(1 for a in used if not a["shared"])
    totals["calls_shared"] = sum(1 for a in used if a["shared"])
    return totals


def bill_shared_calls_to_the_first_cell(out: Path, order: list[str]) -> int:
    """Move the billing of every shared call to the earliest cell (in expansion order) of the
    cells that shared it; return how many calls moved.

    Which cell of a share group sends the call (and is billed) is whichever reaches it first:
    with two workers that is a race, and locally it is the event loop's order. Everything else
    is not scheduling-dependent. So both run folders are brought to one rule before they are
    compared: within a group (the billed attempt and the attempts whose ``shared_from`` names
    it, checked here to carry the same prompt and zero usage) the billed columns move to the
    group's first cell, the others become sharers naming it, and the cells' billed totals and
    calls_made / calls_shared follow (checked first to be the sums of their attempts). Totals
    are unchanged; the comparison afterwards still sees every group's members, its billed
    usage and every other column exactly.
    """
    db = sqlite3.connect(out / "results.sqlite")
    db.row_factory = sqlite3.Row
    attempts = {r["attempt_id"]: dict(r) for r in db.execute("SELECT * FROM attempts")}
    cells = {r["cell_id"]: dict(r) for r in db.execute("SELECT * FROM cells")}

    def of(cell_id: str) -> list[dict[str, Any]]:
        return [a for a in attempts.values() if a["cell_id"] == cell_id]

    groups: dict[str, list[dict[str, Any]]] = {}
    for a in attempts.values():
        if a["shared"]:
            groups.setdefault(a["shared_from"], []).append(a)
    moved, touched = 0, set()
    kind: dict[str, str] = {}
    for billed_id, sharers in groups.items():
        billed = attempts[billed_id]
        assert billed["shared"] == 0 and billed["shared_from"] is None, billed
        for a in sharers:
            assert a["prompt_hash"] == billed["prompt_hash"], (a, billed)
            assert all(a[c] in (0, 0.0) for c in USAGE_COLUMNS) and a["cache_hit"] is None, a
        for cell_id in {billed["cell_id"], *(a["cell_id"] for a in sharers)}:
            totals = cell_totals(of(cell_id))
            assert {k: cells[cell_id][k] for k in totals} == totals, cell_id
        first = min([billed, *sharers], key=lambda a: (order.index(a["cell_id"]),
                                                       a["attempt_no"]))
        if first is billed:
            continue
        moved += 1
        # One model per group, so its billed tokens are all reported or all estimated.
        billed_cell = cells[billed["cell_id"]]
        kind[first["cell_id"]] = kind[billed["cell_id"]] = (
            "reported_tokens" if billed_cell["reported_tokens"] else "estimated_tokens")
        bill = {c: billed[c] for c in BILLED_COLUMNS}
        for c in BILLED_COLUMNS:
            billed[c] = first[c]
        first.update(bill, shared=0, shared_from=None)
        for a in [billed, *sharers]:
            if a is not first:
                a["shared"], a["shared_from"] = 1, first["attempt_id"]
        touched |= {billed["cell_id"], first["cell_id"]}
    columns = (*BILLED_COLUMNS, "shared", "shared_from")
    with db:
        for a in attempts.values():
            db.execute(f"UPDATE attempts SET {', '.join(f'{c} = ?' for c in columns)} "
                       "WHERE attempt_id = ?", [*(a[c] for c in columns), a["attempt_id"]])
        for cell_id in touched:
            totals = cell_totals(of(cell_id))
            # The reported / estimated split (8A's columns) follows the billed tokens.
            tokens = totals["billed_input_tokens"] + totals["billed_output_tokens"]
            other = ("estimated_tokens" if kind[cell_id] == "reported_tokens"
                     else "reported_tokens")
            totals[kind[cell_id]], totals[other] = tokens, 0
            db.execute(f"UPDATE cells SET {', '.join(f'{c} = ?' for c in totals)} "
                       "WHERE cell_id = ?", [*totals.values(), cell_id])
    db.close()
    return moved



def assert_same_results(local_dir: Path, ray_dir: Path, order: list[str]) -> None:
    """The Ray run folder holds the local one's cells, attempts, table and summaries exactly,
    once the billing of each shared call is moved to its group's first cell in expansion order
    `order` (in both folders, which this changes; see `bill_shared_calls_to_the_first_cell`)."""
    from workbench.harness import Results

    local, on_ray = Results.load(local_dir), Results.load(ray_dir)
    assert on_ray.status == "finished" and len(on_ray.cells) == len(local.cells)
    # Calls are shared on both executors (same groups, billed once each)...
    assert on_ray.cells["calls_shared"].sum() == local.cells["calls_shared"].sum() > 0
    assert on_ray.cells["billed_input_tokens"].sum() == local.cells["billed_input_tokens"].sum()
    # ...but which cell of a group pays is a race: one rule for both, then compare everything.
    for out in (local_dir, ray_dir):
        bill_shared_calls_to_the_first_cell(out, order)
    local, on_ray = Results.load(local_dir), Results.load(ray_dir)
    assert rows(ray_dir, "cells") == rows(local_dir, "cells")
    assert rows(ray_dir, "attempts") == rows(local_dir, "attempts")
    assert on_ray.table().equals(local.table())
    for path in sorted((local_dir / "summaries").iterdir()):
        assert (ray_dir / "summaries" / path.name).read_text() == path.read_text(), path.name
    assert list(on_ray.runs["executor"]) == ["ray"]
