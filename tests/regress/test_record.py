"""`workbench record`: recording a calling model's answers offline, with a stub provider in
place of litellm, then replaying them through the gate without calling it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.errors import AuthenticationError
from workbench.models import ExtractiveModel, ResponseCache
from workbench.models import _spec as spec_module

STUB = "openai/stub-summarizer"


class _StubProvider:
    """Stands in for a litellm model: answers like the extractive model, counts its calls."""

    def __init__(self, calls: list[str], fail: BaseException | None = None) -> None:
        self.name = STUB
        self.calls = calls
        self.fail = fail
        self._inner = ExtractiveModel()

    async def complete(self, system: str, messages: list[Any]) -> Any:
        self.calls.append(system[:20])
        if self.fail is not None:
            raise self.fail
        return await self._inner.complete(system, messages)

    def cache_identity(self) -> dict[str, Any]:
        return {"model": STUB}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    real = spec_module._build_base

    def build(spec: Any, params: dict[str, Any]) -> Any:
        return _StubProvider(made) if spec.model == STUB else real(spec, params)

    monkeypatch.setattr(spec_module, "_build_base", build)
    return made


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "rec.toml"
    path.write_text(f'name = "rec"\nsessions = ["gen-005k-s1", "gen-012k-s2"]\n'
                    f'models = ["extractive", {{ model = "{STUB}", name = "stub" }}]\n'
                    'windows = ["32k"]\n[cache]\npath = "recordings/rec.db"\n'
                    '[regress]\nfailures = "no new"\n', encoding="utf-8")
    return path


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_record_writes_the_calling_models_answers_into_the_specs_recording(
        tmp_path: Path, calls: list[str]) -> None:
    spec = _spec(tmp_path)
    code, out = _cli("record", str(spec), "--no-progress")
    db = tmp_path / "recordings" / "rec.db"
    assert code == 0, out
    assert out.splitlines()[0] == (f"workbench record: experiment 'rec': 4 cells, 2 new "
                                   f"recording(s) and 0 new prompt size(s) in {db}")
    assert len(calls) == 2  # one per stub cell; the extractive baseline is not recorded
    cache = ResponseCache(db)
    assert cache.stats()["models"] == {STUB: 2}
    cache.close()
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0

    code, out = _cli("record", str(spec), "--no-progress")
    assert code == 0
    assert "4 cells, 0 new recording(s)" in out
    assert len(calls) == 2  # everything answered from the recording


def test_the_gate_replays_a_recording_without_calling_the_model(
        tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(tmp_path)
    assert _cli("record", str(spec), "--no-progress")[0] == 0
    recorded = len(calls)
    baseline = tmp_path / "regress" / "rec"
    code, out = _cli("regress", str(spec), "--baseline", str(baseline), "--update")
    assert code == 0, out
    code, out = _cli("regress", str(spec), "--baseline", str(baseline))
    assert (code, out.splitlines()[-1]) == (0, "result: PASSED (4 summaries identical, 2 metric "
                                               "checks within tolerance)")
    assert len(calls) == recorded
    stub_summary = baseline / "summaries" / "default" / "stub--32k--gen-005k-s1.md"
    extractive_summary = baseline / "summaries" / "default" / "extractive--32k--gen-005k-s1.md"
    assert stub_summary.read_text(encoding="utf-8") == extractive_summary.read_text(
        encoding="utf-8")


def test_record_exits_1_naming_cells_that_failed_for_infrastructure_reasons(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = spec_module._build_base
    denied = AuthenticationError("no key: set OPENAI_API_KEY", model=STUB)
    monkeypatch.setattr(spec_module, "_build_base", lambda spec, params: _StubProvider(
        made, denied) if spec.model == STUB else real(spec, params))
    code, out = _cli("record", str(_spec(tmp_path)), "--no-progress")
    assert code == 1
    assert "4 cells, 0 new recording(s)" in out
    assert "  cell errors: 2 x CompactionCallFailed" in out
    assert ("ERROR AuthenticationError in cell (session gen-005k-s1, model stub, template "
            "default, window 32k): no key: set OPENAI_API_KEY") in out


def test_fresh_moves_the_old_recording_aside_and_records_again(tmp_path: Path,
                                                              calls: list[str]) -> None:
    spec = _spec(tmp_path)
    assert _cli("record", str(spec), "--no-progress")[0] == 0
    code, out = _cli("record", str(spec), "--no-progress", "--fresh")
    assert code == 0, out
    assert "2 new recording(s)" in out
    backups = list((tmp_path / "recordings").glob("rec.db.*.bak"))
    assert len(backups) == 1
    assert f"previous recording moved to {backups[0]}" in out
    assert len(calls) == 4


def test_record_refuses_a_spec_whose_models_make_no_call(tmp_path: Path) -> None:
    spec = tmp_path / "x.toml"
    spec.write_text('name = "x"\nsessions = ["gen-005k-s1"]\nmodels = ["extractive"]\n',
                    encoding="utf-8")
    code, out = _cli("record", str(spec))
    assert code == 1
    assert "experiment 'x': nothing to record, every model is extractive" in out


def test_models_with_their_own_recordings_are_recorded_and_replayed_each_from_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = STUB + "-two"
    made: list[str] = []
    real = spec_module._build_base

    def build(spec: Any, params: dict[str, Any]) -> Any:
        if spec.model not in (STUB, other):
            return real(spec, params)
        stub = _StubProvider(made)
        stub.cache_identity = lambda: {"model": spec.model}  # type: ignore[method-assign]
        return stub

    monkeypatch.setattr(spec_module, "_build_base", build)
    spec = tmp_path / "two.toml"
    spec.write_text(f'name = "two"\nsessions = ["gen-005k-s1"]\nwindows = ["32k"]\n'
                    f'models = [{{ model = "{STUB}", name = "a", cache_path = "rec/a.db" }},\n'
                    f'  {{ model = "{other}", name = "b" }}]\n'
                    '[cache]\npath = "rec/shared.db"\n', encoding="utf-8")
    code, out = _cli("record", str(spec), "--no-progress", "--fresh")
    own, shared = tmp_path / "rec" / "a.db", tmp_path / "rec" / "shared.db"
    assert code == 0, out
    assert out.splitlines()[0] == (f"workbench record: experiment 'two': 2 cells, 2 new "
                                   f"recording(s) and 0 new prompt size(s) in {own}, {shared}")
    for path in (own, shared):
        cache = ResponseCache(path)
        assert cache.stats()["entries"] == 1, path
        cache.close()
    code, out = _cli("record", str(spec), "--no-progress", "--fresh")
    assert code == 0, out
    assert len(list((tmp_path / "rec").glob("*.db.*.bak"))) == 2
    assert out.count("previous recording moved to ") == 2

    own.unlink()
    code, out = _cli("regress", str(spec), "--baseline", str(tmp_path / "baseline"), "--update")
    assert code == 2
    assert f"recording {own} does not exist" in out
