"""Oversized tool results become head previews in the request copy (awaken's artifact compaction).

Mirrors ``context/transform/compaction.rs``. Only Tool messages are touched, only their text; it
runs on every request before the budget check, over budget or not, and the stored result keeps its
full text (the functions here return copies).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.messages import Message, TextContent, ToolResponse
from workbench.strategies.awaken._config import ArtifactCompactionConfig
from workbench.strategies.awaken._estimate import BYTES_PER_TOKEN
from workbench.strategies.awaken._view import is_tool

PREVIEW_MARKER = "[Output compacted: about {tokens} tokens originally; first {chars} characters shown]"
"""The bracketed note after a preview: the original size (bytes // 4) and the characters kept."""

_DEFAULT = ArtifactCompactionConfig()


def compact_artifact(text: str, config: ArtifactCompactionConfig | None = None) -> str:
    """Cut one tool-result text to a preview when it is large enough.

    The text is compacted when ``bytes // 4 >= threshold_tokens``. The preview is the leading
    prefix that stops at whichever comes first: ``preview_max_chars`` characters, or the
    ``preview_max_lines``-th newline (included). A blank line and `PREVIEW_MARKER` follow; there is
    no tail and no reference to the full text.

    Args:
        text: The tool result text.
        config: Thresholds and limits; None means awaken's defaults (2048 / 1600 / 24).

    Returns:
        `text` unchanged, or the preview with its marker.
    """
    cfg = config or _DEFAULT
    tokens = len(text.encode("utf-8")) // BYTES_PER_TOKEN
    if tokens < cfg.threshold_tokens:
        return text
    chars = 0
    lines = 0
    for ch in text:
        if chars >= cfg.preview_max_chars or lines >= cfg.preview_max_lines:
            break
        if ch == "\n":
            lines += 1
        chars += 1
    marker = PREVIEW_MARKER.format(tokens=tokens, chars=chars)
    return f"{text[:chars]}\n\n{marker}"


def _compact_message(msg: Message, cfg: ArtifactCompactionConfig) -> Message:
    changed = False
    copy = msg.copy_with(content=[item.model_copy(deep=True) for item in msg.content])
    for item in copy.content:
        if isinstance(item, TextContent):
            new = compact_artifact(item.text, cfg)
            if new != item.text:
                item.text = new
                changed = True
        elif isinstance(item, ToolResponse) and item.tool_result.ok:
            for block in item.tool_result.blocks():
                if block.type == "text" and block.text is not None:
                    new = compact_artifact(block.text, cfg)
                    if new != block.text:
                        block.text = new
                        changed = True
    return copy if changed else msg


def compact_tool_results(messages: Sequence[Message],
                         config: ArtifactCompactionConfig | None = None) -> list[Message]:
    """Replace oversized text of every Tool message by its preview.

    Args:
        messages: The request messages.
        config: Thresholds and limits; None means awaken's defaults.

    Returns:
        A new list; changed messages are copies, the others are the same objects.
    """
    cfg = config or _DEFAULT
    return [_compact_message(m, cfg) if is_tool(m) else m for m in messages]
