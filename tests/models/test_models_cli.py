"""``workbench models`` and ``workbench cache`` commands."""

from __future__ import annotations

from click.testing import CliRunner

from workbench.cli import cli


def test_models_parse_shows_every_part_of_the_string():
    result = CliRunner().invoke(cli, ["models", "parse", "replay:openai/gpt-4o-mini@32k"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "model:      openai/gpt-4o-mini",
        "kind:       litellm",
        "window:     32768",
        "cache:      replay",
        "label:      openai/gpt-4o-mini@32k",
        "canonical:  replay:openai/gpt-4o-mini@32k",
        "window tokenizer: o200k",
    ]


def test_models_parse_names_the_window_tokenizer_of_each_family_without_loading_anything():
    expected = {"openai/gpt-4@8k": "cl100k", "anthropic/claude-3-5-haiku-latest": "claude (approx.)",
                "deepseek/deepseek-chat": "deepseek", "ollama/llama3.1:8b": "o200k (fallback)",
                "local/gemma3-270m@8k": "gemma3-270m", "extractive": "o200k"}
    for spec, tokenizer in expected.items():
        result = CliRunner().invoke(cli, ["models", "parse", spec])
        assert result.output.splitlines()[-1] == f"window tokenizer: {tokenizer}", spec


def test_models_parse_reports_a_bad_string_as_a_clean_error():
    result = CliRunner().invoke(cli, ["models", "parse", "gpt-4o"])
    assert result.exit_code == 1
    assert "Error: model string 'gpt-4o': 'gpt-4o' names no provider" in result.output


def test_models_try_then_cache_list_prune_and_clear(tmp_path):
    db = str(tmp_path / "c.db")
    runner = CliRunner()
    tried = runner.invoke(cli, ["models", "try", "cached:extractive", "--cache-path", db,
                                "--system", "[user]: fix the parser", "--text", "Summarize."])
    assert tried.exit_code == 0, tried.output
    assert tried.output.startswith("<analysis>extractive</analysis>\n```json\n")
    assert '"fix the parser"' in tried.output and '"cache_hit": false' in tried.output
    listed = runner.invoke(cli, ["cache", "list", "--path", db])
    assert listed.exit_code == 0
    assert "entries:  1" in listed.output and "       1  extractive" in listed.output
    pruned = runner.invoke(cli, ["cache", "prune", "--path", db, "--older-than", "1"])
    assert pruned.output == f"deleted 0 recordings older than 1 days from {db}\n"
    cleared = runner.invoke(cli, ["cache", "clear", "--path", db, "--yes"])
    assert cleared.output == f"deleted 1 recordings from {db}\n"
