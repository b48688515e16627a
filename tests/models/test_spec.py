"""Model strings: every grammar form, composition, and errors that name the bad part."""

from __future__ import annotations

import importlib.util

import pytest

from workbench.errors import ConfigError
from workbench.models import (
    CachedModel,
    ExtractiveModel,
    ModelPipeline,
    ModelSpec,
    WindowCap,
    load_model,
    parse_model_spec,
)
from workbench.models._spec import load_model_with, max_tokens_param

CASES = [
    ("extractive", "extractive", None, None, "extractive"),
    ("extractive@8k", "extractive", None, 8192, "extractive@8k"),
    ("extractive@8K", "extractive", None, 8192, "extractive@8k"),
    ("cached:openai/gpt-4o-mini", "openai/gpt-4o-mini", "rw", None, "openai/gpt-4o-mini"),
    ("replay:openai/gpt-4o-mini@32000", "openai/gpt-4o-mini", "replay", 32000,
     "openai/gpt-4o-mini@32000"),
    ("cached:anthropic/claude-3-5-haiku-latest@128k", "anthropic/claude-3-5-haiku-latest", "rw",
     131072, "anthropic/claude-3-5-haiku-latest@128k"),
    ("local", "local", None, None, "local"),
    ("local/gemma3-270m@8k", "local/gemma3-270m", None, 8192, "local/gemma3-270m@8k"),
    ("replay:local//models/tiny.gguf", "local//models/tiny.gguf", "replay", None,
     "local//models/tiny.gguf"),
    ("ollama/llama3.1:8b@4k", "ollama/llama3.1:8b", None, 4096, "ollama/llama3.1:8b@4k"),
    ("vertex_ai/claude-3-5-sonnet@20240620", "vertex_ai/claude-3-5-sonnet@20240620", None, None,
     "vertex_ai/claude-3-5-sonnet@20240620"),
    ("vertex_ai/claude-3-5-sonnet@20240620@16k", "vertex_ai/claude-3-5-sonnet@20240620", None,
     16384, "vertex_ai/claude-3-5-sonnet@20240620@16k"),
    ("  openai/gpt-4o@1000  ", "openai/gpt-4o", None, 1000, "openai/gpt-4o@1000"),
]


@pytest.mark.parametrize("text,model,mode,window,label", CASES)
def test_every_grammar_form_parses(text, model, mode, window, label):
    spec = parse_model_spec(text)
    assert (spec.model, spec.cache_mode, spec.window, spec.label) == (model, mode, window, label), text
    prefix = {"rw": "cached:", "replay": "replay:", None: ""}[mode]
    assert str(spec) == prefix + label
    assert parse_model_spec(str(spec)) == spec


ERRORS = [
    ("", "empty model string ''; expected [cached:|replay:]model[@window], e.g. "
         "'openai/gpt-4o-mini@8k'"),
    ("gpt-4o-mini", "model string 'gpt-4o-mini': 'gpt-4o-mini' names no provider; litellm models "
                    "are provider/model, e.g. 'openai/gpt-4o-mini' (or use 'extractive' or "
                    "'local/<name>')"),
    ("cached:", "model string 'cached:': the model name is missing"),
    ("@8k", "model string '@8k': the model name is missing"),
    ("rw:openai/gpt-4o", "model string 'rw:openai/gpt-4o': unknown cache prefix 'rw:'; use "
                         "'cached:' (read-write) or 'replay:' (replay-only)"),
    ("extractive@8kb", "model string 'extractive@8kb': bad window '@8kb'; write @8k (k = 1024 "
                       "tokens) or a token count of at most 7 digits such as @32000"),
    ("openai/gpt-4o@0", "model string 'openai/gpt-4o@0': bad window '@0'; write @8k (k = 1024 "
                        "tokens) or a token count of at most 7 digits such as @32000"),
    ("scripted/two-replies", "model string 'scripted/two-replies': scripted models are test fakes "
                             "and have no model string; build "
                             "workbench.testing.ScriptedModel(replies=[...]) in code"),
    ("local/", "model string 'local/': 'local/' needs a model name or .gguf path, e.g. "
               "'local/gemma3-270m'"),
    ("openai/", "model string 'openai/': 'openai/' is not provider/model"),
    ("openai/gpt 4", "model string 'openai/gpt 4': model 'openai/gpt 4' contains whitespace"),
]


@pytest.mark.parametrize("text,message", ERRORS)
def test_bad_strings_raise_config_errors_naming_the_bad_part(text, message):
    with pytest.raises(ConfigError) as info:
        parse_model_spec(text)
    assert str(info.value) == message


def test_model_spec_forbids_unknown_fields():
    with pytest.raises(ValueError):
        ModelSpec(model="extractive", temperature=0)  # type: ignore[call-arg]


def test_load_model_builds_the_bare_model_without_window_or_cache():
    assert isinstance(load_model("extractive"), ExtractiveModel)


def test_load_model_puts_the_model_behind_a_window_then_a_cache(tmp_path):
    model = load_model("cached:extractive@8k", cache_path=tmp_path / "c.db")
    assert isinstance(model, ModelPipeline) and isinstance(model.inner, ExtractiveModel)
    assert [s.kind for s in model.steps] == ["window", "cache"]
    assert model.step("window").window == 8192 and model.step("cache").mode == "rw"
    assert model.describe() == "cached:extractive@8k"
    assert model.step("cache").cache.path == tmp_path / "c.db"
    # the same pipeline as the public one-step models composed by hand
    by_hand = CachedModel(WindowCap(ExtractiveModel(), 8192), model.step("cache").cache)
    assert [s.kind for s in by_hand.steps] == ["window", "cache"]
    assert by_hand.describe() == model.describe()


def test_arguments_override_the_string_window_and_cache_mode(tmp_path):
    model = load_model("cached:extractive@8k", window=4096, cache="replay",
                       cache_path=tmp_path / "c.db")
    assert model.step("cache").mode == "replay" and model.step("window").window == 4096
    assert isinstance(load_model("cached:extractive", cache="off"), ExtractiveModel)
    only_cache = load_model("extractive", cache="rw", cache_path=tmp_path / "c.db")
    assert [s.kind for s in only_cache.steps] == ["cache"]


def test_models_sharing_a_cache_file_share_one_store(tmp_path):
    a = load_model("cached:extractive", cache_path=tmp_path / "c.db")
    b = load_model("replay:extractive@8k", cache_path=tmp_path / "c.db")
    assert a.step("cache").cache is b.step("cache").cache


def test_bad_load_model_arguments_are_config_errors(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_model("extractive", cache="write")
    assert str(info.value) == "unknown cache mode 'write'; use rw, replay or off"
    with pytest.raises(ConfigError) as info:
        load_model("extractive", window=0)
    assert str(info.value) == "window must be a positive number of tokens, got 0"
    with pytest.raises(ConfigError) as info:
        load_model("extractive", api_base="http://127.0.0.1:1", temperature=0)
    assert str(info.value) == "model 'extractive' takes no parameters; got api_base"


@pytest.mark.skipif(importlib.util.find_spec("workbench.models._litellm") is None,
                    reason="needs workbench/models/_litellm.py")
def test_provider_strings_build_a_litellm_model_with_the_params():
    from workbench.models import LiteLLMModel

    model = load_model("openai/gpt-4o-mini@8k", api_base="http://127.0.0.1:9", temperature=0)
    assert [s.kind for s in model.steps] == ["window"]
    inner = model.inner
    assert isinstance(inner, LiteLLMModel) and inner.model == "openai/gpt-4o-mini"
    assert model.describe() == "openai/gpt-4o-mini@8k"


@pytest.mark.skipif(importlib.util.find_spec("workbench.models._local") is None,
                    reason="needs workbench/models/_local.py")
def test_local_strings_build_a_local_model_with_the_default_name():
    from workbench.models import LocalModel

    model = load_model("local")
    assert isinstance(model, LocalModel)


def test_a_closed_shared_cache_is_reopened_by_the_next_load(tmp_path):
    first = load_model("cached:extractive", cache_path=tmp_path / "c.db").step("cache").cache
    first.close()
    second = load_model("cached:extractive", cache_path=tmp_path / "c.db").step("cache").cache
    assert second is not first and not second.closed


def test_a_params_table_is_handed_to_the_constructor_which_names_a_bad_parameter() -> None:
    model = load_model_with("openai/gpt-4o-mini", {"temperature": 0, "max_tokens": 50})
    assert repr(model) == "LiteLLMModel('openai/gpt-4o-mini', max_tokens=50, temperature=0)"
    with pytest.raises(ConfigError) as info:  # a table's key, never load_model's own keyword
        load_model_with("local/gemma3-270m", {"window": 8000})
    assert str(info.value) == ("model 'local/gemma3-270m': bad parameter (LocalModel.__init__() "
                               "got an unexpected keyword argument 'window')")


def test_max_tokens_is_read_from_a_number_or_its_text_else_the_default() -> None:
    assert [max_tokens_param(p, 99) for p in (
        {"max_tokens": 300}, {"max_tokens": "300"}, {"max_tokens": 12.0}, {}, {"max_tokens": None},
        {"max_tokens": 0}, {"max_tokens": [5]})] == [300, 300, 12, 99, 99, 99, 99]
