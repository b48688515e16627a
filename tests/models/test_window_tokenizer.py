"""A simulated window counts in the model's own tokenizer, decided by the model, on every machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models import (
    RecordedCounts,
    ResponseCache,
    SnapshotCounts,
    WindowCap,
    count_key,
    load_model,
    parse_model_spec,
)
from workbench.models._identity import model_identity
from workbench.models._window import check_window, window_facts
from workbench.testing import ScriptedModel
from workbench.tokens import estimator_for, tokenizer_for_model

FAMILIES = {
    "openai/gpt-4o-mini": "o200k",
    "openai/gpt-4.1": "o200k",
    "openai/o3-mini": "o200k",
    "openrouter/openai/gpt-4o": "o200k",
    "openai/gpt-4": "cl100k",
    "openai/gpt-3.5-turbo": "cl100k",
    "azure/gpt-4-turbo": "cl100k",
    "anthropic/claude-3-5-haiku-latest": "claude (approx.)",
    "anthropic/claude-sonnet-4-5": "claude (approx.)",
    "bedrock/anthropic.claude-3-haiku-20240307-v1:0": "claude (approx.)",
    "anthropic/claude-2.1": "claude",
    "anthropic/claude-instant-1.2": "claude",
    "deepseek/deepseek-chat": "deepseek",
    "openrouter/deepseek/deepseek-r1": "deepseek",
    "ollama/llama3.1:8b": "o200k (fallback)",
    "hosted_vllm/my-model": "o200k (fallback)",
    "extractive": "o200k",
}

# Devanagari and Japanese: o200k packs these far tighter than cl100k; the other tokenizers differ too.
TEXT = "नमस्ते दुनिया, यह एक परीक्षण है। こんにちは世界、これはテストです。" * 12


@pytest.mark.parametrize(("model", "label"), FAMILIES.items())
def test_each_provider_family_counts_its_window_in_its_own_tokenizer(model: str, label: str) -> None:
    assert tokenizer_for_model(model).label == label
    cap = load_model(f"{model}@8k")
    assert window_facts(cap)[1] == label
    assert parse_model_spec(f"{model}@8k").window_tokenizer.label == label


@pytest.mark.parametrize("model", ["openai/gpt-4", "anthropic/claude-3-5-haiku-latest",
                                   "deepseek/deepseek-chat"])
def test_a_prompt_on_the_edge_is_judged_by_the_model_tokenizer_not_by_o200k(model: str) -> None:
    messages = [Message.user(TEXT)]
    own = estimator_for(tokenizer_for_model(model).name).count_chat_tokens("sys", messages)
    o200k = estimator_for("o200k").count_chat_tokens("sys", messages)
    assert own != o200k, model
    tight = load_model(model, window=min(own, o200k))
    loose = load_model(model, window=max(own, o200k) - 1)
    # The model's own count decides: it fits exactly at its own size, and only there.
    if own < o200k:
        check_window(tight, "sys", messages)
        check_window(loose, "sys", messages)
    else:
        with pytest.raises(ContextLengthExceeded, match=f"prompt of {own} tokens"):
            check_window(tight, "sys", messages)
        with pytest.raises(ContextLengthExceeded, match=f"prompt of {own} tokens"):
            check_window(loose, "sys", messages)


class OwnCounter(ScriptedModel):
    """A model with its own tokenizer (one token per character) that counts its calls."""

    def __init__(self, available: bool = True) -> None:
        super().__init__(["reply"])
        self.available = available
        self.counted: list[int | None] = []

    def count_prompt_tokens(self, system: str, messages: list[Message],
                            limit: int | None = None) -> int | None:
        self.counted.append(limit)
        if not self.available:
            return None
        return len(system) + sum(len(m.concat_text()) for m in messages)

    def tokenizer_name(self) -> str:
        return "chars"


def _key(model: OwnCounter, system: str, messages: list[Message]) -> str:
    return count_key(model_identity(model), "chars", system, messages)


def test_a_recorded_count_wins_over_the_installed_tokenizer_so_every_machine_judges_alike(
        tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.db")
    model, messages = OwnCounter(), [Message.user("hello")]
    cache.put_tokens(_key(model, "sys", messages), "chars", 500)  # the recording machine's count
    cap = WindowCap(model, 100, counts=RecordedCounts(cache, writable=False))
    with pytest.raises(ContextLengthExceeded, match="prompt of 500 tokens"):
        cap.check_window("sys", messages)
    assert model.counted == []  # the live tokenizer was never asked


def test_without_the_tokenizer_a_recorded_count_replays_and_an_unrecorded_prompt_names_the_extra(
        tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.db")
    model = OwnCounter(available=False)
    cache.put_tokens(_key(model, "sys", [Message.user("hi")]), "chars", 5)
    cap = WindowCap(model, 100, counts=RecordedCounts(cache, writable=False))
    cap.check_window("sys", [Message.user("hi")])
    with pytest.raises(ConfigError) as err:
        cap.check_window("sys", [Message.user("never recorded")])
    assert "counts prompts in chars, the model's own tokenizer" in str(err.value)
    assert 'pip install -e ".[local]"' in str(err.value)


def test_recording_stores_exact_counts_and_a_replay_writes_nothing(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.db")
    model, messages = OwnCounter(), [Message.user("x" * 50)]
    WindowCap(model, 10, counts=RecordedCounts(cache, writable=False)).count("s", messages)
    assert cache.all_tokens() == {} and model.counted == [10]  # replay: the prefix shortcut
    WindowCap(model, 10, counts=RecordedCounts(cache, writable=True)).count("s", messages)
    assert model.counted == [10, None]  # recording: exact, so one count serves every window
    assert cache.all_tokens() == {_key(model, "s", messages): 51}
    assert cache.stats()["token_counts"] == 1


async def test_a_call_is_counted_once_on_its_way_through_the_pipeline(tmp_path: Path) -> None:
    from workbench.models import CachedModel, SharedCalls

    model, messages = OwnCounter(), [Message.user("hello")]
    cache = ResponseCache(tmp_path / "r.db")
    piped = SharedCalls().wrap(CachedModel(WindowCap(model, 100), cache))
    assert [s.kind for s in piped.steps] == ["window", "share", "cache"]
    await piped.complete("sys", messages)
    assert model.counted == [100]  # one count, by the one window step


def test_a_ray_snapshot_reads_recorded_counts_and_hands_new_ones_to_its_sink() -> None:
    model, messages = OwnCounter(), [Message.user("hello")]
    sent: list[tuple[str, str, int]] = []
    counts = SnapshotCounts({}, sink=lambda *row: sent.append(row))
    WindowCap(model, 100, counts=counts).count("sys", messages)
    assert sent == [(_key(model, "sys", messages), "chars", 8)]
    replay = SnapshotCounts({_key(model, "sys", messages): 99})
    assert WindowCap(OwnCounter(available=False), 100, counts=replay).count("sys", messages) == 99


def test_load_model_gives_the_window_the_recording_of_its_cache(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    model = load_model("cached:local/gemma3-270m@8k", cache_path=path)
    counter = model.step("window").counter  # type: ignore[attr-defined]
    assert isinstance(counter.counts, RecordedCounts) and counter.counts.writable
    assert window_facts(model)[1] == "gemma3-270m"
    replay = load_model("replay:local/gemma3-270m@8k", cache_path=path)
    assert not replay.step("window").counter.counts.writable  # type: ignore[attr-defined]
