"""The tuning notebook runs top to bottom offline, re-renders without model calls, and is
committed without outputs."""

from __future__ import annotations

import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipywidgets")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "tune_templates.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _texts(nb) -> list[str]:  # type: ignore[no-untyped-def]
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o["output_type"] == "stream":
                out.append(o["text"])
            else:
                data = o.get("data", {})
                out.append("\n".join(str(data.get(k, "")) for k in ("text/plain", "text/html")))
    return out


SLOW_SECONDS = 120.0
"""Alone the notebook runs in about 8 s. In 2 of 16 suites run two at a time it took about 330 s
more and then passed, kernel and client both idle meanwhile: a run this slow warns with where
the time went (each cell's timing as nbclient records it), so the next one says."""


def _report_if_slow(nb, started: datetime, seconds: float) -> None:  # type: ignore[no-untyped-def]
    if seconds < SLOW_SECONDS:
        return
    steps = []
    for index, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if timing:
            steps.append(f"cell {index}: " + ", ".join(f"{k} {v}" for k, v in timing.items()))
    warnings.warn(f"the tuning notebook took {seconds:.0f} s (alone about 8 s), from "
                  f"{started.isoformat()} to {datetime.now(UTC).isoformat()}; "
                  + "; ".join(steps), stacklevel=2)


def test_the_committed_tuning_notebook_has_its_outputs_cleared() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)

    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [(cell.outputs, cell.execution_count) for cell in code] == [([], None)] * len(code)


def test_the_tuning_notebook_runs_offline_rerenders_live_and_previews_the_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _user_dir: Path) -> None:
    monkeypatch.setenv("WORKBENCH_TUNE_NOTEBOOK_OUT", str(tmp_path / "run"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     resources={"metadata": {"path": str(ROOT)}})

    started, clock = datetime.now(UTC), time.monotonic()
    client.execute()
    _report_if_slow(nb, started, time.monotonic() - clock)

    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o["output_type"] == "error"]
    assert errors == []
    texts = "\n".join(_texts(nb))
    assert "model calls made: 2, shared: 22" in texts  # 12 points x 2 sessions, 2 calls
    assert "winner: lean-facts{" in texts
    assert "model calls for live re-rendering: 0" in texts
    assert f"-> {_user_dir / 'xdg' / 'goose' / 'prompts'} (dry run)" in texts
    assert "+  Exported by `workbench export --from-run`." in texts
    assert not (_user_dir / "xdg" / "goose" / "prompts").exists()
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "image/png" in o.get("data", {})]
    assert pngs
    htmls = [m["state"]["value"] for m in nb.metadata["widgets"][WIDGET_STATE]["state"].values()
             if m["model_name"] == "HTMLModel"]
    live = [h for h in htmls if h.startswith("<h4>lean-facts{intent_limit=1,key_code=false}")]
    assert live, htmls
    side = [h for h in htmls if h.startswith("<table>")]
    assert side and "<h4>lean-facts</h4>" in side[0] and "class='diff-del'" in side[0]
