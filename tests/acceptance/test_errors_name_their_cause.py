"""Errors name their cause: a missing tokenizer, a missing variant, an unrecorded variant, an
unknown model and a cache miss each say which it is and what to do; unknown names (a template,
a strategy, a metric, a rule, a command) name the closest known one."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from workbench.cli import cli
from workbench.errors import ConfigError
from workbench.harness import Experiment, paired_comparison, run_experiment
from workbench.models import _local, _local_load
from workbench.strategies import strategy_class
from workbench.tune import Objective

GEMMA = {"model": "replay:local/gemma3-270m", "name": "gemma-270m/prefill",
         "params": {"n_ctx": 16384, "max_tokens": 512, "grammar": "off"},
         "cache_path": str(ROOT / "datasets" / "recordings" / "local-gemma3-270m.db")}


@pytest.fixture
def no_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the real import helper raises when `import llama_cpp` fails, so the test means the
    # same on a machine that has the local extra installed as on one (CI) that does not.
    def missing() -> Any:
        raise ConfigError(_local.MISSING_EXTRA)

    for module in (_local, _local_load):  # the model and its loader both import llama.cpp
        monkeypatch.setattr(module, "_import_llama_cpp", missing)


@pytest.fixture
def my_variant(tmp_path: Path) -> Path:
    """A variant added by hand: lean-facts with one more line in its prompt."""
    folder = tmp_path / "prompts" / "mine"
    shutil.copytree(ROOT / "prompts" / "lean-facts", folder)
    prompt = folder / "compaction.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nBe brief.\n", encoding="utf-8")
    return folder


def _errors(experiment: Experiment, out: Path) -> pd.DataFrame:
    cells = run_experiment(experiment, out, progress=False).cells
    return cells[cells["status"] == "error"]


def test_an_unrecorded_variant_on_a_replayed_model_says_not_recorded_first(
        tmp_path: Path, my_variant: Path, no_llama_cpp: None) -> None:
    experiment = Experiment.from_dict({
        "name": "unrecorded", "sessions": ["gen-005k-s1"], "models": [GEMMA],
        "templates": [str(my_variant)], "windows": ["8k"]})

    errors = _errors(experiment, tmp_path / "run")

    assert list(errors["error_class"]) == ["ConfigError"]
    message = errors["error_message"].iloc[0]
    assert message.startswith(
        "not recorded: local/gemma3-270m@8k replays a recording that holds no size for this "
        "prompt, so the prompt was most likely never recorded (a template variant, session or "
        "parameter set the model was not recorded with); record it with `workbench record "
        "SPEC`, or leave it out of the model entry's `templates` or `sessions`. To count it "
        "here instead: the window counts prompts in gemma3-270m, the model's own tokenizer")


def test_a_missing_tokenizer_says_so_and_what_to_install(tmp_path: Path,
                                                          no_llama_cpp: None) -> None:
    # Not a replay: nothing is recorded, the window needs Gemma's own tokenizer, and there is
    # none here (the cell fails before any call).
    live = {**GEMMA, "model": "local/gemma3-270m"}
    del live["cache_path"]
    experiment = Experiment.from_dict({
        "name": "tokenizer", "sessions": ["gen-005k-s1"], "models": [live],
        "templates": ["default"], "windows": ["8k"]})

    errors = _errors(experiment, tmp_path / "run")

    assert list(errors["error_class"]) == ["ConfigError"]
    assert errors["error_message"].iloc[0].startswith(
        "missing tokenizer: local/gemma3-270m@8k: the window counts prompts in gemma3-270m, the "
        "model's own tokenizer, which is not installed here, and no recorded count exists for "
        "this prompt; install it with ")


def test_a_recorded_prompt_that_misses_says_cache_miss_and_how_to_record(tmp_path: Path) -> None:
    from workbench.models import CACHE_MISS_MESSAGE

    assert CACHE_MISS_MESSAGE.startswith("replay-only cache has no recording for model {model}")
    assert "record it with `workbench record SPEC` (calls the real model)" in CACHE_MISS_MESSAGE


def test_a_variant_the_replayed_models_were_not_recorded_with_is_not_run_on_them(
        my_variant: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--template", str(my_variant), "--model",
                                      "gemma-270m/prefill", "--out", str(tmp_path / "run")])

    assert result.exit_code == 1
    assert (f"nothing to run: {my_variant} is not recorded for gemma-270m/prefill, and each "
            "model runs only the variants its entry's `templates` lists (a replayed model: "
            "those it was recorded with); run the variant on the extractive baseline or a live "
            "model (--model extractive), or record it with `workbench record SPEC`") \
        in " ".join(result.output.split())


def test_a_missing_variant_names_the_closest_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--template", "lean-fact", "--limit", "1",
                                      "--out", str(tmp_path / "run")])

    assert result.exit_code == 1
    assert "templates: no variant 'lean-fact' (did you mean 'lean-facts'?): looked for a " \
           "folder at" in result.output
    assert "add the folder, or fix the name" in result.output


@pytest.mark.parametrize(("model", "message"), [
    ("smollm2", "command line: --model 'smollm2' (did you mean 'smollm2-135m/grammar'?): model "
                "string 'smollm2': 'smollm2' names no provider; litellm models are "
                "provider/model, e.g. 'openai/smollm2'"),
    ("extractiv", "names no provider (did you mean 'extractive'?)"),
    ("opnai/gpt-4o-mini", "unknown provider 'opnai' (did you mean 'openai'?)"),
])
def test_an_unknown_model_says_which_it_is_and_the_closest_name(model: str, message: str,
                                                                 tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--model", model, "--out", str(tmp_path / "r")])

    assert result.exit_code == 1
    assert message in result.output


def test_unknown_names_get_the_closest_known_one() -> None:
    with pytest.raises(ConfigError, match=r"unknown strategy 'truncat' \(did you mean "
                                          r"'truncate'\?\)"):
        strategy_class("truncat")
    with pytest.raises(ConfigError, match=r"unknown rule 'paretto' \(did you mean 'pareto'\?\)"):
        Objective.parse("paretto")
    cells = pd.DataFrame({"template": ["a", "b"], "session_id": ["s", "s"],
                          "probe_recall": [0.5, 0.6], "status": ["ok", "ok"]})
    with pytest.raises(ConfigError, match=r"no column 'probe_recal' in the cells \(did you mean "
                                          r"'probe_recall'\?\)"):
        paired_comparison(cells, "a", "b", metric="probe_recal")
    result = CliRunner().invoke(cli, ["rnu"])
    assert result.exit_code == 2 and "No such command 'rnu' (did you mean 'run'?)." \
        in result.output


def test_an_unknown_spec_key_or_set_value_names_the_key() -> None:
    result = CliRunner().invoke(cli, ["run", "--set", "concurrency=many", "--dry-run"])
    assert result.exit_code == 1
    assert "command line: concurrency: Input should be a valid integer" in result.output
    result = CliRunner().invoke(cli, ["run", "--set", "concurency=2", "--dry-run"])
    assert result.exit_code == 1
    assert "command line: concurency: Extra inputs are not permitted (did you mean " \
           "'concurrency'?)" in result.output
