"""Functional-probe benchmark: what the ``[qa]`` step with the offline ``lookup`` answerer adds
to each cell, next to what the cell costs without it, measured in the same run.

Run: ``python bench/bench_qa.py [--rounds 3]``. Offline. The cells are the default
experiment's with the extractive summarizer (every shipped dataset x every shipped variant x
8k and 32k; the recorded local model's cells add no QA work of another kind). Each round runs
every cell twice through the real `run_cell`: without ``[qa]``, then with ``answerer =
"lookup"`` and a fresh question bank (so the questions and the full-history answers are built
as a run builds them: once per session, shared by its cells). The added time per cell is the
difference of the two passes, divided by the cells; the best round of each is kept. Also
printed: the share of the added time spent on the full history (``qa_loss_exact``...), as a second pass
with ``full_context = false``. Times are this process's CPU time (``time.process_time``), so
other work on a shared machine does not inflate them; the cells call no remote model.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.harness.experiment._cells import expand_cells, load_experiment_sessions  # noqa: E402
from workbench.harness.experiment._qa_table import QATable  # noqa: E402
from workbench.harness.experiment._spec import Experiment  # noqa: E402
from workbench.harness.experiment._variants import load_variant  # noqa: E402
from workbench.harness.results._results import SUMMARIES_DIR  # noqa: E402
from workbench.harness.run._cell_run import run_cell  # noqa: E402
from workbench.harness.run._qa_bank import QuestionBank  # noqa: E402
from workbench.models import (
    compose,  # noqa: E402
    load_model,  # noqa: E402
)


def _experiment(qa: QATable | None) -> Experiment:
    base = Experiment.default()
    return base.model_copy(update={"models": base.models[:1], "qa": qa, "replay": None})


async def _pass(experiment: Experiment, cells: list[Any], sessions: dict[str, Any],
                variants: dict[str, Any], out: Path) -> float:
    models: dict[Any, Any] = {}

    def model_for(cell: Any, role: str | None = None, **steps: Any) -> Any:
        key = cell.window
        if key not in models:
            models[key] = load_model(cell.model_string, window=cell.window)
        return compose(models[key], **steps)

    bank = QuestionBank() if experiment.qa is not None else None
    started = time.process_time()
    for cell in cells:
        result = await run_cell(cell, sessions[cell.session_id], variants[cell.template],
                                model_for, experiment, out, "bench", bank)
        assert result.status in ("ok", "error")
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    plain = _experiment(None)
    sessions_list = load_experiment_sessions(plain)
    sessions = {s.id: s for s in sessions_list}
    cells = expand_cells(plain, sessions_list)
    variants = {name: load_variant(name, plain) for name in dict.fromkeys(c.template
                                                                          for c in cells)}
    specs = {"without [qa]": plain, "lookup": _experiment(QATable()),
             "lookup, no full history": _experiment(QATable(full_context=False))}
    best = dict.fromkeys(specs, float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / SUMMARIES_DIR).mkdir()
        for _ in range(args.rounds):
            for name, spec in specs.items():
                best[name] = min(best[name], asyncio.run(
                    _pass(spec, cells, sessions, variants, out)))
    n = len(cells)
    base = best["without [qa]"] / n * 1000
    print(f"{n} cells ({len(sessions)} sessions), best of {args.rounds} rounds, CPU ms per cell:")
    print(f"  cell without [qa] (extractive compaction, probes, files): {base:8.2f}")
    for name in ("lookup", "lookup, no full history"):
        per = best[name] / n * 1000
        print(f"  with [qa] answerer = {name:26s} {per:8.2f}  "
              f"(+{per - base:.2f} ms per cell, {per / base:.2f}x)")


if __name__ == "__main__":
    main()
