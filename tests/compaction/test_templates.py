"""templates.rs behaviour: built-ins, code_fence, the sandboxed renderer, Goose's override lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.compaction import (
    COMPACTION_SUMMARY_TEMPLATE,
    COMPACTION_TEMPLATE,
    RenderLimits,
    Templates,
    builtin_template,
    code_fence,
    goose_config_dir,
    render,
)
from workbench.errors import ConfigError, TemplateError


def test_builtin_templates_are_shipped_and_unknown_names_give_none() -> None:
    compaction = builtin_template(COMPACTION_TEMPLATE)
    summary = builtin_template(COMPACTION_SUMMARY_TEMPLATE)
    assert compaction is not None and "## Conversation History\n\n{{ messages }}" in compaction
    assert summary is not None and summary.startswith("{#")
    assert "~/.config/goose/prompts/compaction_summary.md" in summary
    assert "user_intent[:3]" in summary and "code_fence" in summary
    assert builtin_template("nope.md") is None
    assert builtin_template("../errors.py") is None


def test_compaction_prompt_asks_for_analysis_then_one_json_block_with_the_nine_fields() -> None:
    prompt = render(Templates.default().compaction, {"messages": "[user]: hi"})
    assert "## Conversation History\n\n[user]: hi\n" in prompt
    assert "<analysis>" in prompt and "exactly one ```json" in prompt
    for field in (
        "user_intent", "technical_concepts", "files", "path", "summary", "key_code",
        "errors_and_fixes", "problem_solving", "user_messages", "pending_tasks",
        "current_work", "next_step",
    ):
        assert f'"{field}"' in prompt


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x = 1", "```\nx = 1\n```"),
        ("x = 1\n\n", "```\nx = 1\n```"),
        ("x = 1 \r\n", "```\nx = 1 \r\n```"),
        ("a ``` b", "````\na ``` b\n````"),
        ("````\nz\n````", "`````\n````\nz\n````\n`````"),
        ("`", "```\n`\n```"),
        ("", "```\n\n```"),
    ],
)
def test_code_fence_is_longer_than_any_backtick_run(code: str, expected: str) -> None:
    assert code_fence(code) == expected


def test_block_tags_trim_their_newline_and_leading_indent() -> None:
    source = "A\n    {% if x %}\n  B\n    {% endif %}\nC\n"
    assert render(source, {"x": True}) == "A\n  B\nC"
    assert render(source, {"x": False}) == "A\nC"


def test_undefined_variables_render_empty_and_output_is_stripped() -> None:
    assert render("  {{ missing }}[{{ also_missing }}]\n\n", {}) == "[]"


def test_slices_and_filters_work_in_templates() -> None:
    assert render("{{ items[:2] | join(',') }}", {"items": ["a", "b", "c"]}) == "a,b"
    assert render("{{ k | code_fence }}", {"k": "x"}) == "```\nx\n```"


def test_none_and_booleans_print_like_minijinja() -> None:
    assert render("{{ a }} {{ b }} {{ c }}", {"a": None, "b": True, "c": False}) == "none true false"


def test_compile_errors_name_the_template() -> None:
    with pytest.raises(TemplateError) as info:
        render("{% if %}", {}, name="variants/x/compaction_summary.md")
    assert info.value.template == "variants/x/compaction_summary.md"
    assert str(info.value).startswith(
        "template 'variants/x/compaction_summary.md': does not compile: "
    )


def test_render_errors_name_the_template() -> None:
    with pytest.raises(TemplateError) as info:
        render("{{ 1 // 0 }}", {}, name="bad.md")
    assert str(info.value) == (
        "template 'bad.md': failed to render: ZeroDivisionError: integer division or modulo by"
        " zero; check the variables it uses"
    )


@pytest.mark.parametrize(
    "payload",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ joiner.__init__.__globals__.os }}",
        "{{ user_intent.append('x') }}",
    ],
)
def test_sandbox_refuses_python_internals(payload: str) -> None:
    with pytest.raises(TemplateError) as info:
        render(payload, {"user_intent": []}, name="evil.md")
    assert info.value.template == "evil.md"
    assert "tried to reach Python internals through an unsafe attribute or call" in str(info.value)


def test_compiled_templates_are_cached_by_source_and_nesting_limits() -> None:
    from workbench.compaction._sandbox_env import compile_here

    wide, narrow = RenderLimits(), RenderLimits(max_depth=8)
    assert compile_here("{{ a }}-cache", wide) is compile_here("{{ a }}-cache", wide)
    assert compile_here("{{ a }}-cache", wide) is not compile_here("{{ a }}-cache", narrow)


def test_from_dir_falls_back_to_builtins_for_missing_files(tmp_path: Path) -> None:
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / COMPACTION_SUMMARY_TEMPLATE).write_text("# S\n{{ next_step }}\r\n")
    templates = Templates.from_dir(tmp_path / "short")
    assert templates.name == "short"
    assert templates.summary == "# S\n{{ next_step }}\r\n"  # bytes kept: no newline translation
    assert templates.compaction == builtin_template(COMPACTION_TEMPLATE)
    assert Templates.from_dir(tmp_path / "short", name="v1").name == "v1"


def test_from_dir_of_a_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="template folder .*nope does not exist"):
        Templates.from_dir(tmp_path / "nope")


def test_goose_config_dir_prefers_an_absolute_goose_path_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path / "root"))
    assert goose_config_dir() == tmp_path / "root" / "config"
    monkeypatch.setenv("GOOSE_PATH_ROOT", "relative/root")
    assert goose_config_dir() == tmp_path / "xdg" / "goose"
    monkeypatch.delenv("GOOSE_PATH_ROOT")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert goose_config_dir() == tmp_path / "home" / ".config" / "goose"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert goose_config_dir() == tmp_path / "home" / ".config" / "goose"


def test_goose_overrides_use_the_prompts_folder_then_builtins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path))
    assert Templates.goose_overrides() == Templates(
        builtin_template(COMPACTION_TEMPLATE) or "",
        builtin_template(COMPACTION_SUMMARY_TEMPLATE) or "",
        "goose",
    )
    prompts = tmp_path / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / COMPACTION_TEMPLATE).write_text("mine: {{ messages }}")
    overrides = Templates.goose_overrides()
    assert overrides.compaction == "mine: {{ messages }}"
    assert overrides.summary == builtin_template(COMPACTION_SUMMARY_TEMPLATE)


def test_unreadable_goose_override_is_a_hard_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path))
    prompts = tmp_path / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / COMPACTION_SUMMARY_TEMPLATE).write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(ConfigError, match="cannot read template .*compaction_summary.md"):
        Templates.goose_overrides()


def test_content_hash_is_tagged_and_changes_with_either_source() -> None:
    base = Templates("a", "b")
    digest = base.content_hash()
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert Templates("a", "b", name="other").content_hash() == digest
    assert Templates("ab", "").content_hash() != digest
    assert Templates("a", "c").content_hash() != digest
