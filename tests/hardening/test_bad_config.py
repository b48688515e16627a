"""Bad experiment specs fail at load (and in --dry-run) with a `ConfigError`, never as cells."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.errors import ConfigError
from workbench.harness import Experiment, run_experiment
from workbench.messages import Message
from workbench.sessions import Session


def _session(folder: Path, sid: str = "s1") -> Path:
    path = folder / f"{sid}.json"
    Session(sid, "goose-json", str(path),
            [Message.user(f"fix app.py ({sid})"), Message.assistant("done")]).write_goose_json(path)
    return path


def _spec(folder: Path, body: str, name: str = "spec.toml") -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


def _experiment(folder: Path, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": ["s*.json"], "models": ["extractive"],
                            "base_dir": str(folder)}
    data.update(over)
    return Experiment.from_dict(data)


def _cells(out: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return sorted(db.execute("SELECT template, status FROM cells"))
    finally:
        db.close()


def test_a_non_utf8_experiment_file_names_line_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_bytes(b'name = "t"\n# caf\xe9\nsessions = ["x"]\n')
    with pytest.raises(ConfigError) as info:
        Experiment.from_toml(path)
    assert str(info.value) == (f"{path}:2: not UTF-8 text: invalid byte at offset 16 (invalid "
                               "continuation byte); save the file as UTF-8")


def test_unsafe_experiment_names_are_refused(tmp_path: Path) -> None:
    for name in ("../../x", "/tmp/evil", "a/b", "a\\b", "..", ".hidden", "-rf", "x" * 101,
                 "tab\tname"):
        with pytest.raises(ConfigError) as info:
            _experiment(tmp_path, name=name)
        assert str(info.value) == (
            f"experiment: name: {name!r} is not a safe run folder name: use up to 100 letters, "
            "digits and . _ - + = @ , starting with a letter, digit or _ (no path separators, "
            "no '..', not absolute)"), name
    for name in ("default", "templates-vs-models", "run_2.1", "a+b=c@d,e"):
        assert _experiment(tmp_path, name=name).name == name


def test_two_models_with_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        _experiment(tmp_path, models=[{"model": "extractive", "name": "m"},
                                      {"model": "openai/gpt-4o-mini", "name": "m"}])
    assert str(info.value) == (
        "experiment: models: models[0] and models[1] are both named 'm' (the cache prefix and "
        'api_key are not part of a name); give one a distinct name = "..."')
    with pytest.raises(ConfigError, match=r"models\[0\] and models\[1\] are both named "
                                          r"'openai/gpt-4o-mini'"):
        _experiment(tmp_path, models=["cached:openai/gpt-4o-mini", "replay:openai/gpt-4o-mini"])
    # The same entry twice is a copy-paste slip: refused too, as the README says.
    with pytest.raises(ConfigError) as info:
        _experiment(tmp_path, models=["extractive", "openai/gpt-4o-mini", "extractive"])
    assert str(info.value) == ("experiment: models: models[0] and models[2] are the same model "
                               "'extractive'; list it once")


def test_unknown_model_strings_fail_at_load_and_in_dry_run(tmp_path: Path) -> None:
    _session(tmp_path)
    cases = {
        "opnai/gpt-4o-mini": "model string 'opnai/gpt-4o-mini': unknown provider 'opnai'",
        "gpt-4o-mini": "model string 'gpt-4o-mini': 'gpt-4o-mini' names no provider",
        "extractive@8kb": "model string 'extractive@8kb': bad window '@8kb'",
    }
    for model, message in cases.items():
        with pytest.raises(ConfigError) as info:
            _experiment(tmp_path, models=[model])
        assert str(info.value).startswith(f"experiment: models[0]: {message}"), model
    with pytest.raises(ConfigError, match=r"models\[0\]: model 'extractive': the extractive "
                                          r"model takes no parameters .* got api_base"):
        _experiment(tmp_path, models=[{"model": "extractive", "params": {"api_base": "x"}}])

    spec = _spec(tmp_path, 'name = "t"\nsessions = ["s1.json"]\n'
                           'models = ["extractive", "opnai/gpt-4o-mini"]\n')
    result = CliRunner().invoke(cli, ["run", str(spec), "--dry-run",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 1
    assert f"{spec}: models[1]: model string 'opnai/gpt-4o-mini': unknown provider" in \
        result.output
    assert not (tmp_path / "run").exists()


def test_a_session_index_out_of_range_is_a_config_error_not_zero_cells(tmp_path: Path) -> None:
    history = tmp_path / ".aider.chat.history.md"
    history.write_text("\n# aider chat started at 2024-01-01 10:00:00\n\n#### fix it\n\nok\n",
                       encoding="utf-8")
    exp = _experiment(tmp_path, sessions=[{"path": str(history), "index": 3}])
    message = (f"{history}: session index 3 is out of range: the file holds 1 session(s) "
               "(index 0..0)")
    with pytest.raises(ConfigError) as info:
        run_experiment(exp, tmp_path / "run", dry_run=True, progress=False)
    assert str(info.value) == message
    with pytest.raises(ConfigError):
        run_experiment(exp, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    ok = _experiment(tmp_path, sessions=[{"path": str(history), "index": 0}])
    assert len(run_experiment(ok, tmp_path / "run", progress=False).cells) == 1


def test_a_different_experiment_under_the_same_name_is_refused(tmp_path: Path) -> None:
    _session(tmp_path, "s1")
    _session(tmp_path, "s2")
    out = tmp_path / "runs" / "t"
    first = _experiment(tmp_path, sessions=["s1.json"], templates=["default"])
    run_experiment(first, out, progress=False)
    assert _cells(out) == [("default", "ok")]

    other = _experiment(tmp_path, sessions=["s2.json"], templates=["lean-facts"])
    with pytest.raises(ConfigError) as info:
        run_experiment(other, out, progress=False)
    assert str(info.value) == (
        f"{out} holds the cells of a different experiment (its spec.toml differs in: sessions, "
        "templates); pass --new to start a fresh folder beside it, or --out another folder "
        "(resuming needs the same sessions, models, templates, windows and repeats)")
    assert _cells(out) == [("default", "ok")]  # nothing mixed in

    # Fields that do not define cells may change: a bigger budget resumes the same folder.
    resumed = first.model_copy(update={"concurrency": 1,
                                       "budget": first.budget.model_copy(update={"max_cost": 5})})
    assert run_experiment(resumed, out, progress=False).run_dir == out

    fresh = run_experiment(other, out, progress=False, new=True)
    assert fresh.run_dir == out.with_name("t-2")
    assert _cells(fresh.run_dir) == [("lean-facts", "ok")]
    assert run_experiment(other, out, progress=False, new=True).run_dir == out.with_name("t-3")


def test_the_cli_refuses_a_changed_spec_unless_new_or_another_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _session(tmp_path)
    spec = _spec(tmp_path, 'name = "same"\nsessions = ["s1.json"]\nmodels = ["extractive"]\n')
    runner = CliRunner()
    assert runner.invoke(cli, ["run", str(spec), "--no-progress"]).exit_code == 0
    _spec(tmp_path, 'name = "same"\nsessions = ["s1.json"]\nmodels = ["extractive"]\n'
                    'windows = ["8k"]\n')
    refused = runner.invoke(cli, ["run", str(spec), "--no-progress"])
    assert refused.exit_code == 1
    assert ("runs/same holds the cells of a different experiment (its spec.toml differs in: "
            "windows); pass --new") in refused.output
    fresh = runner.invoke(cli, ["run", str(spec), "--no-progress", "--new"])
    assert fresh.exit_code == 0, fresh.output
    assert "run folder: runs/same-2 (1 cells, 0 failed, 0 errors" in fresh.output
    other = runner.invoke(cli, ["run", str(spec), "--no-progress", "--out", "runs/elsewhere"])
    assert other.exit_code == 0 and "run folder: runs/elsewhere" in other.output
    assert _cells(tmp_path / "runs" / "same") == [("default", "ok")]
