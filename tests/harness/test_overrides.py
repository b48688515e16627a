"""Command-line overrides: --model, --template, --window, --sessions, --limit and --set."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from workbench.cli import cli
from workbench.errors import ConfigError
from workbench.harness import Experiment, Results, expand_cells
from workbench.harness.experiment._overrides import Overrides

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def default() -> Experiment:
    return Experiment.default()


def test_each_list_option_replaces_the_specs_list(default: Experiment) -> None:
    changed = Overrides(models=("extractive", "smollm2-135m/grammar"),
                        templates=("default", "lean-facts"), windows=("8k",)).apply(default)

    assert [m.label for m in changed.models] == ["extractive", "smollm2-135m/grammar"]
    # an entry named by its name keeps its parameters, recording, sessions and templates
    assert changed.models[1] == default.models[1]
    assert changed.templates == ["default", "lean-facts"]
    assert changed.windows == [8192]
    assert changed.qa == default.qa and changed.replay == default.replay
    new = Overrides(models=("cached:openai/gpt-4o-mini",)).apply(default)
    assert [m.model for m in new.models] == ["cached:openai/gpt-4o-mini"]
    gemmas = Overrides(models=("replay:local/gemma3-270m",)).apply(default)
    assert [m.label for m in gemmas.models] == ["gemma-270m/prefill", "gemma-270m/json-schema",
                                                "gemma-270m/no-cue"]


def test_limit_keeps_the_first_sessions_before_each_models_own_subset(
        default: Experiment) -> None:
    cells = expand_cells(Overrides(limit=3).apply(default))

    extractive = {c.session_id for c in cells if c.model == "extractive"}
    assert extractive == {"gen-005k-s1", "gen-005k-s27", "gen-006k-s20"}  # spec order
    smollm = {c.session_id for c in cells if c.model == "smollm2-135m/grammar"}
    assert smollm == {"gen-005k-s1"}  # the first three, then the model's own six
    assert len(cells) == 3 * 4 * 2 + 4 * 1 * 4 * 2


def test_sessions_paths_are_read_from_the_working_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         default: Experiment) -> None:
    monkeypatch.chdir(tmp_path)
    changed = Overrides(sessions=("gen-012k-s2", "mine/*.jsonl")).apply(default)
    assert [s.path for s in changed.sessions] == ["gen-012k-s2", str(tmp_path / "mine/*.jsonl")]


@pytest.mark.parametrize(("sets", "field", "value"), [
    (("concurrency=2",), "concurrency", 2),
    (("verdict.rule=max-recall",), "verdict.rule", "max-recall"),
    (("qa.per_session=4",), "qa.per_session", 4),
    (("models[1].concurrency=1",), "models[1].concurrency", 1),
    (("manual_compact=true",), "manual_compact", True),
    (("name=smoke",), "name", "smoke"),
    (('windows=["8k", 16000]',), "windows", [8192, 16000]),
])
def test_set_sets_any_field_validated_like_the_toml(sets: tuple[str, ...], field: str,
                                                    value: object, default: Experiment) -> None:
    changed = Overrides(sets=sets).apply(default)
    found: object = changed
    for part in field.split("."):
        name, _, index = part.partition("[")
        found = getattr(found, name)
        if index:
            found = found[int(index.rstrip("]"))]  # type: ignore[index]
    assert found == value


@pytest.mark.parametrize(("sets", "message"), [
    (("concurrency",), "command line: --set 'concurrency': write key=value"),
    (("concurrency=0",), "command line: concurrency: Input should be greater than 0"),
    (("verdict.rule=best",), "command line: verdict.rule: unknown rule 'best'"),
    (("models[9].name=x",), "command line: --set 'models[9].name=x': models has 5 entries"),
    (("name.first=x",), "command line: --set 'name.first=x': name is not a table"),
    (("windws=8k",), "command line: windws: Extra inputs are not permitted (did you mean "
                     "'windows'?)"),
])
def test_a_bad_set_is_refused_naming_the_key(sets: tuple[str, ...], message: str,
                                             default: Experiment) -> None:
    with pytest.raises(ConfigError) as err:
        Overrides(sets=sets).apply(default)
    assert message in str(err.value)


def test_an_overridden_run_gets_its_own_folder_and_records_the_spec_as_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["run", "--model", "extractive", "--template", "lean-facts", "--window", "8k",
            "--limit", "2", "--set", "concurrency=2", "--no-progress"]
    overrides = Overrides(models=("extractive",), templates=("lean-facts",), windows=("8k",),
                          limit=2, sets=("concurrency=2",))
    folder = tmp_path / "runs" / f"default-{overrides.digest()}"

    first = CliRunner().invoke(cli, args)

    assert first.exit_code == 0, first.output
    assert first.output.splitlines()[0] == (
        "overrides: --model extractive --template lean-facts --window 8k --set concurrency=2 "
        f"--limit 2 (run folder {Path('runs') / folder.name})")
    assert len(overrides.digest()) == 8
    recorded = tomllib.loads((folder / "spec.toml").read_text(encoding="utf-8"))
    assert (recorded["models"], recorded["templates"], recorded["windows"], recorded["limit"],
            recorded["concurrency"]) == (["extractive"], ["lean-facts"], [8192], 2, 2)
    cells = Results.load(folder).cells
    assert len(cells) == 2 and set(cells["template"]) == {"lean-facts"}
    # the recorded spec is the run: read back, it defines the same cells
    assert {c.cell_id for c in expand_cells(Experiment.from_toml(folder / "spec.toml"))} == \
        set(cells["cell_id"])
    again = CliRunner().invoke(cli, args)  # the same overrides resume the same folder
    assert again.exit_code == 0 and f"({len(cells)} cells," in again.output
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [folder.name]


def test_a_shipped_experiment_is_found_by_name_anywhere(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.experiment._locate import find_spec

    monkeypatch.chdir(tmp_path)
    for name in ("tune", "tune.toml", "experiments/tune.toml"):
        assert find_spec(name).read_text(encoding="utf-8") == \
            (ROOT / "experiments" / "tune.toml").read_text(encoding="utf-8")
    assert find_spec(None, "regress").name == "regress.toml"
    with pytest.raises(ConfigError, match=r"tun\.toml: no such experiment file \(did you mean "
                                          r"'tune'\?\); shipped experiments \(usable by name "
                                          r"anywhere\): agents, default, "):
        find_spec("tun.toml")
