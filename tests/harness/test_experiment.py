"""Experiment spec: TOML reading, exact error texts, round trip, the shipped default."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.harness import Experiment


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        Experiment.from_toml(path)
    return str(info.value)


def test_a_minimal_spec_gets_documented_defaults(tmp_path: Path) -> None:
    exp = Experiment.from_toml(write(tmp_path, 'sessions = ["a.json"]\nmodels = ["extractive"]\n'))
    assert exp.name == "experiment"
    assert exp.templates == ["default"]
    assert exp.strategies == ["goose"]
    assert exp.windows == [None]
    assert (exp.repeats, exp.concurrency, exp.seed, exp.manual_compact) == (1, 4, 0, False)
    assert exp.cache.mode is None
    assert exp.base_dir == str(tmp_path.resolve())
    assert exp.resolve_path("a.json") == tmp_path.resolve() / "a.json"


def test_an_unknown_key_is_named_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = ["a"]\nmodels = ["extractive"]\nmodel = "x"\n')
    assert error_of(path) == f"{path}: model: Extra inputs are not permitted"


def test_a_nested_error_names_the_key_path(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = ["a"]\n'
                 'models = ["extractive", {model = "openai/gpt-4o-mini", concurrency = 0}]\n')
    assert error_of(path) == f"{path}: models[1].concurrency: Input should be greater than 0"


def test_a_wrong_type_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = ["a"]\nmodels = ["extractive"]\nrepeats = "two"\n')
    assert error_of(path) == (f"{path}: repeats: Input should be a valid integer, unable to parse "
                              "string as an integer")


def test_a_bad_window_string_says_how_to_write_one(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = ["a"]\nmodels = ["extractive"]\nwindows = ["8k", "8q"]\n')
    assert error_of(path) == (f"{path}: windows[1]: cannot read window '8q': write a token count "
                              "like 8000, '8k' or '1m', or 'none' for no cap")


def test_empty_models_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = ["a"]\nmodels = []\n')
    assert error_of(path) == f"{path}: models: List should have at least 1 item after validation, not 0"


def test_an_unknown_strategy_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = ["a"]\nmodels = ["extractive"]\nstrategies = ["trim"]\n')
    assert error_of(path) == (
        f"{path}: strategies[0]: unknown strategy 'trim' (known: aider, "
        "anthropic-clear-tool-uses, anthropic-server-compaction, awaken, claude-code, codex, "
        "gemini-cli, goose, langchain, mask, none, openai-responses-compact, opencode, reference, "
        "sliding-window, truncate)")


def test_bad_toml_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    assert error_of(write(tmp_path, "sessions = [")).startswith(f"{tmp_path / 'experiment.toml'}: invalid TOML: ")
    assert error_of(tmp_path / "nope.toml") == f"{tmp_path / 'nope.toml'}: no such experiment file"


def test_windows_accept_k_shorthand_counts_and_none(tmp_path: Path) -> None:
    exp = Experiment.from_toml(write(tmp_path, 'sessions = ["a"]\nmodels = ["extractive"]\n'
                                     'windows = ["8k", 32000, "none", "1m"]\n'))
    assert exp.windows == [8192, 32000, None, 1048576]


def test_to_toml_round_trips_and_drops_api_keys(tmp_path: Path) -> None:
    exp = Experiment.from_dict({
        "name": "rt", "sessions": ["a.json", {"path": "b.jsonl", "index": 3, "format": "goose-json"}],
        "models": ["extractive", {"model": "openai/gpt-4o-mini", "concurrency": 2,
                                  "params": {"temperature": 0.0, "api_key": "sk-secret"}}],
        "windows": ["8k", None], "budget": {"max_tokens": 1000}, "cache": {"mode": "rw"},
        "templates": ["default", "top3-intent"], "repeats": 2})
    text = exp.to_toml()
    assert "sk-secret" not in text and "api_key" not in text
    back = Experiment.from_toml(write(tmp_path, text))
    expected = exp.model_dump()
    expected["models"][1]["params"] = {"temperature": 0.0}
    expected["base_dir"] = str(tmp_path.resolve())
    assert back.model_dump() == expected
    # written by tomli-w from the model with its defaults left out
    assert tomllib.loads(text) == {
        "name": "rt", "sessions": ["a.json", {"path": "b.jsonl", "format": "goose-json",
                                               "index": 3}],
        "models": ["extractive", {"model": "openai/gpt-4o-mini", "concurrency": 2,
                                  "params": {"temperature": 0.0}}],
        "templates": ["default", "top3-intent"], "windows": [8192, "none"], "repeats": 2,
        "budget": {"max_tokens": 1000}, "cache": {"mode": "rw"}}
    assert "concurrency = 4" not in text and "seed" not in text and "[executor]" not in text


def test_model_labels_show_public_params_only() -> None:
    exp = Experiment.from_dict({"sessions": ["a"], "models": [
        {"model": "openai/x", "params": {"temperature": 0.2, "api_key": "sk-test-1"}}, "extractive"]})
    assert [m.label for m in exp.models] == ["openai/x[temperature=0.2]", "extractive"]


def test_the_default_experiment_is_the_shipped_file() -> None:
    exp = Experiment.default()
    assert exp.name == "default"
    assert [m.label for m in exp.models] == [
        "extractive", "smollm2-135m/grammar", "gemma-270m/prefill", "gemma-270m/json-schema",
        "gemma-270m/no-cue"]
    assert all(m.model.startswith("replay:") for m in exp.models[1:])
    assert exp.resolve_path(exp.cache.path or "").name == "local-gemma3-270m.db"
    # One committed recording per local model.
    assert [exp.cache_file(i).name for i in range(1, 5)] == [
        "local-smollm2-135m.db", "local-gemma3-270m.db", "local-gemma3-270m.db",
        "local-gemma3-270m.db"]
    assert all(path.is_file() for path in exp.cache_files())
    assert exp.windows == [8192, 32768]
    assert exp.sessions[0].path == "dataset:all"
    assert exp.templates == ["all"]


def test_a_model_entry_may_name_its_own_recording_relative_to_the_spec(tmp_path: Path) -> None:
    exp = Experiment.from_dict({"sessions": ["s.json"], "base_dir": str(tmp_path),
                                "cache": {"path": "shared.db"}, "models": [
        "extractive", {"model": "replay:local/a.gguf", "cache_path": "rec/a.db"},
        {"model": "replay:local/b.gguf"}]})

    assert exp.cache_file(1) == tmp_path / "rec" / "a.db"
    assert exp.cache_file(2) == exp.cache_file() == tmp_path / "shared.db"
    assert exp.cache_files() == [tmp_path / "shared.db", tmp_path / "rec" / "a.db"]
    written = exp.to_dict()["models"]
    assert written == ["extractive", {"model": "replay:local/a.gguf", "cache_path": "rec/a.db"},
                       "replay:local/b.gguf"]
    assert Experiment.from_dict(exp.to_dict()).cache_file(1) == tmp_path / "rec" / "a.db"


def test_a_model_entry_name_replaces_the_generated_label() -> None:
    exp = Experiment.from_dict({"sessions": ["s.json"], "models": [
        {"model": "replay:local/x.gguf", "params": {"n_ctx": 4096}},
        {"model": "replay:local/x.gguf", "params": {"n_ctx": 4096}, "name": "x-4k"}]})
    assert [m.label for m in exp.models] == ["local/x.gguf[n_ctx=4096]", "x-4k"]
    assert Experiment.from_dict({"sessions": ["s.json"], "models": [
        {"model": "extractive", "name": "ex"}]}).to_dict()["models"] == [
        {"model": "extractive", "name": "ex"}]
