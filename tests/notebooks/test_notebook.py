"""The comparison notebook runs top to bottom offline and is committed without outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "compare_templates.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _outputs(nb) -> list[dict]:  # type: ignore[no-untyped-def]
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def _text(output: dict) -> str:
    if output["output_type"] == "stream":
        return output["text"]
    data = output.get("data", {})
    return "\n".join(str(data.get(kind, "")) for kind in ("text/plain", "text/html"))


def test_the_committed_notebook_has_its_outputs_cleared() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)

    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cells"
    assert [(cell.outputs, cell.execution_count) for cell in code] == [([], None)] * len(code)
    assert nb.metadata.kernelspec.name == "python3"


def test_the_notebook_runs_offline_and_shows_table_widgets_and_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _user_dir: Path) -> None:
    out = tmp_path / "run"
    monkeypatch.setenv("WORKBENCH_NOTEBOOK_OUT", str(out))  # the kernel inherits os.environ
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     resources={"metadata": {"path": str(ROOT)}})

    client.execute()

    outputs = _outputs(nb)
    assert [o for o in outputs if o["output_type"] == "error"] == []
    texts = [_text(o) for o in outputs]
    assert any("parse_success_pct" in t and "<table" in t for t in texts)
    assert any("winner: lean-facts" in t for t in texts)
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # Strategies as a table dimension, and the whole-session replay table.
    assert any("mask[keep_last=3]" in t and "<table" in t for t in texts)
    assert any("cache_breaks" in t and "awaken" in t for t in texts)
    goose_prompts = _user_dir / "xdg" / "goose" / "prompts"
    exported = re.compile(rf"export '[\w-]+' -> {re.escape(str(goose_prompts))} \(dry run\)")
    assert any(exported.search(t) for t in texts)
    assert not goose_prompts.exists()
    assert (out / "results.sqlite").is_file()
    panels = [m["state"]["value"] for m in nb.metadata["widgets"][WIDGET_STATE]["state"].values()
              if m["model_name"] == "HTMLModel" and "<h4>" in m["state"]["value"]]
    assert [p.split("</h4>")[0] for p in panels] == ["<h4>default", "<h4>lean-facts"]
    assert all("<b>Forgot</b>" in p and "# Conversation Summary" in p for p in panels), \
        json.dumps(panels)[:2000]
