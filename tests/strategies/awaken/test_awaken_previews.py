"""awaken's artifact previews: threshold in bytes, character and line limits, the marker."""

from __future__ import annotations

from tests.strategies.awaken.helpers import assistant, system, texts, tool, user
from workbench.messages import Message
from workbench.strategies.awaken import (
    ArtifactCompactionConfig,
    compact_artifact,
    compact_tool_results,
)


def marker(tokens: int, chars: int) -> str:
    return f"\n\n[Output compacted: about {tokens} tokens originally; first {chars} characters shown]"


def test_small_tool_result_not_compacted() -> None:
    messages = [user("go"), assistant("", ["c1"]), tool("c1", "x" * 100)]
    out = compact_tool_results(messages)
    assert out == messages and out[2] is messages[2]


def test_large_tool_result_compacted_to_preview() -> None:
    messages = [user("go"), assistant("", ["c1"]), tool("c1", "a" * 10_000)]
    out = compact_tool_results(messages)
    assert texts(out)[2] == "a" * 1600 + marker(2500, 1600)
    assert texts(messages)[2] == "a" * 10_000, "the stored result keeps its full text"


def test_compact_preserves_non_tool_messages() -> None:
    big = "b" * 10_000
    messages = [system(big), user(big), assistant(big)]
    assert compact_tool_results(messages) == messages


def test_compact_artifact_below_threshold_unchanged() -> None:
    assert compact_artifact("short content") == "short content"


def test_compact_artifact_respects_line_limit() -> None:
    content = "\n".join(["ab"] * 3000)  # 8999 bytes: 2249 tokens, over the 2048 threshold
    assert compact_artifact(content) == "ab\n" * 24 + marker(2249, 72)


def test_compact_artifact_character_limit_comes_first_on_long_lines() -> None:
    content = "\n".join(f"line {i}: " + "x" * 200 for i in range(100))
    result = compact_artifact(content)
    assert result == content[:1600] + marker(len(content) // 4, 1600)
    assert result.split("[Output compacted:")[0].count("\n") == 7 + 2


def test_compact_artifact_uses_custom_config() -> None:
    config = ArtifactCompactionConfig(threshold_tokens=1, preview_max_chars=8, preview_max_lines=1)
    assert compact_artifact("abcdefghijklmnop", config) == "abcdefgh" + marker(4, 8)


def test_compact_artifact_counts_bytes_for_the_threshold_and_characters_for_the_preview() -> None:
    content = "é" * 5000  # 10000 bytes
    assert compact_artifact(content) == "é" * 1600 + marker(2500, 1600)
    assert compact_artifact("é" * 4095) == "é" * 4095  # 8190 bytes stays raw


def test_compact_artifact_boundary_just_under_threshold() -> None:
    assert compact_artifact("a" * 8191) == "a" * 8191


def test_compact_artifact_boundary_at_threshold() -> None:
    assert compact_artifact("a" * 8192) == "a" * 1600 + marker(2048, 1600)


def test_compact_tool_results_uses_custom_config() -> None:
    config = ArtifactCompactionConfig(threshold_tokens=1, preview_max_chars=4, preview_max_lines=1)
    out = compact_tool_results([tool("c1", "abcdefghijklmnop")], config)
    assert texts(out) == ["abcd" + marker(4, 4)]


def test_compact_tool_results_multiple_tool_messages() -> None:
    small, large = "x" * 100, "y" * 10_000
    messages = [user("go"), assistant("", ["c1", "c2"]), tool("c1", small), tool("c2", large)]
    out = compact_tool_results(messages)
    assert texts(out)[2] == small
    assert texts(out)[3] == "y" * 1600 + marker(2500, 1600)


def test_each_result_of_a_parallel_batch_message_is_previewed_on_its_own() -> None:
    batch = (Message.user().with_tool_response("c1", "s" * 10)
             .with_tool_response("c2", "L" * 9000))
    out = compact_tool_results([batch])[0]
    assert [r.text() for r in out.tool_responses()] == ["s" * 10, "L" * 1600 + marker(2250, 1600)]
    assert batch.tool_responses()[1].text() == "L" * 9000
