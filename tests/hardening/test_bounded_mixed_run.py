"""A bounded mixed run: a good variant, a hanging variant, a memory-bomb variant and three
unreadable sessions. The run finishes (well within 5 minutes on 2 cores) and its process tree
stays under 1.5 GB resident, summed over every process at every moment sampled; the good cells
are ``ok`` and every other cell is an error row naming its cause.

The run is a real ``workbench run`` subprocess; a sampler thread sums the resident memory of it
and of all its descendants (the render process included) from ``/proc`` every 50 ms.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.goose_db_helpers import build_goose_db
from tests.hardening._sessions import write_session
from tests.hardening._variants import DOUBLED, MEMORY_BOMB, write_variant_spec

MAX_TREE_BYTES = 1536 * 1024 * 1024
"""1.5 GB: the most the run's process tree may hold resident at once."""
MAX_SECONDS = 300
TIME_LIMIT = 3  # WORKBENCH_RENDER_TIME_LIMIT for the run

VARIANTS = {
    # Compares two 2**64-item structures in C: no Python line runs, for centuries.
    "hang-compare": DOUBLED + "{{ messages }}{{ n.a == n.b }}",
    # A Jinja global that runs in one call: the time limit must stop it from outside.
    "hang-global": "{{ messages }}{{ lipsum(n=1000000)|length }}",
    # A new 8 MB string per step, each within every size limit: 80 GB by the end.
    "memory-bomb": MEMORY_BOMB,
    # Prints a 2**64-item list: refused before anything walks it.
    "walk-bomb": DOUBLED + "{{ messages }}{{ n.a }}",
}


def _tree_rss(root: int) -> int:
    """Resident bytes of `root` and every descendant, from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == pid and p not in tree]
        tree.update(kids)
        frontier.extend(kids)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def _setup(folder: Path) -> Path:
    write_session(folder, "good1")
    write_session(folder, "good2")
    first = {"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": None,
             "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}}
    (folder / "digits.jsonl").write_text(
        json.dumps(first) + '\n{"type": "user", "n": ' + "9" * 5000 + "}\n", encoding="utf-8")
    build_goose_db(folder / "typed.db", {"typed": [
        ("user", [{"type": "text", "text": "fix it"}], 1700000000, None),
        ("assistant", [{"type": "text", "text": "done"}], "yesterday", None)]})
    (folder / "empty.json").write_text("", encoding="utf-8")
    return write_variant_spec(
        folder, "bounded", ["good1.json", "good2.json", "digits.jsonl", "typed.db", "empty.json"],
        VARIANTS, "concurrency = 2")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc to sum memory")
def test_a_mixed_run_finishes_bounded_with_ok_cells_and_named_error_rows(tmp_path: Path) -> None:
    spec, out = _setup(tmp_path), tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "WORKBENCH_RENDER_TIME_LIMIT": str(TIME_LIMIT)}
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                              str(out), "--no-progress"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]

    def sample() -> None:
        while child.poll() is None:
            peak[0] = max(peak[0], _tree_rss(child.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = child.communicate(timeout=MAX_SECONDS)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    sampler.join()
    elapsed = time.monotonic() - started
    assert child.returncode == 3, stderr.decode()[-3000:]
    assert elapsed < MAX_SECONDS
    assert peak[0] < MAX_TREE_BYTES, f"process tree peaked at {peak[0] / 2**20:.0f} MB"
    assert b"Traceback" not in stderr

    db = sqlite3.connect(out / "results.sqlite")
    rows = {(s, t): (status, kind, message) for s, t, status, kind, message in db.execute(
        "SELECT session_id, template, status, error_type, error_message FROM cells")}
    db.close()
    assert len(rows) == 5 * (1 + len(VARIANTS))
    for sid in ("good1", "good2"):
        assert rows[(sid, "default")][:2] == ("ok", None)
        for name in VARIANTS:
            status, kind, message = rows[(sid, name)]
            assert (status, kind) == ("error", "TemplateError"), (name, message)
            assert message.startswith(f"template '{name}/compaction.md': "), message
    for sid in ("good1", "good2"):
        assert f"render time limit of {TIME_LIMIT} s exceeded" in rows[(sid, "hang-compare")][2]
        # Stopped by whichever limit it reaches first on this machine: memory or time.
        bomb = rows[(sid, "memory-bomb")][2]
        assert bomb.endswith("ran out of memory: the render process may use 1,024 MiB (set "
                             "WORKBENCH_RENDER_MEMORY_LIMIT to change it); simplify the "
                             "template") or f"render time limit of {TIME_LIMIT} s" in bomb, bomb
        assert "a printed value holds more than 1,000,000 items when walked" in rows[
            (sid, "walk-bomb")][2]
        said = rows[(sid, "hang-global")][2]
        assert f"render time limit of {TIME_LIMIT} s exceeded" in said or "ran out of memory" \
            in said, said
    for name, why in (("digits.jsonl", ":2: invalid JSON: a number of 5,000 digits"),
                      ("typed.db", "#typed:messages row 2: created_timestamp is text"),
                      ("empty.json", "")):
        unreadable = {t: r for (s, t), r in rows.items() if s == f"unreadable:{name}"}
        assert len(unreadable) == 1 + len(VARIANTS), (name, sorted(rows))
        for status, kind, message in unreadable.values():
            assert (status, kind) == ("error", "SessionFormatError"), message
            assert message.startswith(f"{tmp_path / name}{why}"), message
