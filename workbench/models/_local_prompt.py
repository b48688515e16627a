"""The text a local model is given: a plain-text prompt, or turns rendered by the GGUF's chat template.

A base model (no ``tokenizer.chat_template`` in its GGUF, like the packaged Gemma 3 270M) gets
one plain text: the system prompt, then each message's text, tool calls and results as short
tagged lines (`flatten_prompt`). An instruct model gets its own chat format: the system prompt
as the system turn and each message as a turn of its role, rendered by the template the GGUF
carries (`ChatPrompt`, with llama-cpp-python's Jinja renderer), so SmolLM2 sees the
``<|im_start|>`` turns it was trained on. The rendered text is tokenized once with special
tokens parsed and no extra BOS (the template writes what it needs), both to count the prompt
and to generate from, so the window's count is the prompt llama.cpp evaluates.

After a plain-text prompt comes a cue (`SUMMARY_CUE`, or `JSON_CUE` when decoding is held to
`SUMMARY_JSON_SCHEMA`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from workbench._json_types import JSONObject
from workbench.messages import Message, TextContent, ToolRequest, ToolResponse

__all__ = ["JSON_CUE", "SUMMARY_CUE", "SUMMARY_JSON_SCHEMA", "ChatPrompt", "chat_turns",
           "flatten_message", "flatten_prompt"]

SUMMARY_CUE = '\n\n```json\n{\n  "user_intent": ["'
"""Default cue after a plain-text prompt: prefills the summary JSON (see `workbench.models._local`)."""
JSON_CUE = "\n\nSummary as JSON:\n"
"""Appended instead when decoding is constrained to JSON (the grammar forces the object)."""
_STR_LIST: JSONObject = {"type": "array", "items": {"type": "string"}}
SUMMARY_JSON_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "user_intent": _STR_LIST,
        "technical_concepts": _STR_LIST,
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "summary": {"type": "string"},
                    "key_code": {"type": "string"},
                },
                "required": ["path", "summary"],
            },
        },
        "errors_and_fixes": _STR_LIST,
        "problem_solving": _STR_LIST,
        "user_messages": _STR_LIST,
        "pending_tasks": _STR_LIST,
        "current_work": {"type": "string"},
        "next_step": {"type": "string"},
    },
    "required": [
        "user_intent", "technical_concepts", "files", "errors_and_fixes", "problem_solving",
        "user_messages", "pending_tasks", "current_work", "next_step",
    ],
}
"""JSON schema of the nine structured-summary fields (Goose's ``StructuredSummary``)."""

CHAT_TEMPLATE_KEY = "tokenizer.chat_template"


def flatten_message(msg: Message) -> str:
    """One message's text: its text parts, tool calls and results as tagged lines."""
    lines = []
    for item in msg.content:
        if isinstance(item, TextContent):
            lines.append(item.text)
        elif isinstance(item, ToolRequest):
            args = json.dumps(item.arguments or {}, ensure_ascii=False)
            lines.append(f"[tool call {item.name}: {args}]")
        elif isinstance(item, ToolResponse):
            lines.append(f"[tool result: {item.text()}]")
    return "\n".join(lines)


def flatten_prompt(system: str, messages: list[Message]) -> str:
    """The system prompt and every message's text as one plain text, in order."""
    parts = [system] if system else []
    parts.extend(text for text in map(flatten_message, messages) if text)
    return "\n\n".join(parts)


def chat_turns(system: str, messages: list[Message]) -> list[dict[str, str]]:
    """The prompt as chat turns: the system prompt, then one turn per non-empty message."""
    turns = [{"role": "system", "content": system}] if system else []
    for msg in messages:
        text = flatten_message(msg)
        if text:
            turns.append({"role": msg.role, "content": text})
    return turns


def has_chat_template(llama: object) -> bool:
    """Whether the loaded GGUF carries a chat template."""
    return bool((getattr(llama, "metadata", None) or {}).get(CHAT_TEMPLATE_KEY))


@dataclass(frozen=True)
class ChatPrompt:
    """A prompt rendered by the GGUF's chat template.

    Attributes:
        text: The rendered prompt, ending with the assistant turn's opening.
        stop: Texts that end the reply (the end-of-turn token).
    """

    text: str
    stop: list[str]

    @classmethod
    def render(cls, llama: Any, system: str, messages: list[Message]) -> ChatPrompt:
        """Render `system` and `messages` with `llama`'s own chat template.

        Args:
            llama: A loaded ``llama_cpp.Llama`` (a vocabulary-only one will do).
            system: The system prompt.
            messages: The request messages.
        """
        # llama-cpp-python is the optional ``local`` extra: only a chat-template prompt needs it
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        model = llama._model
        eos, bos = llama.token_eos(), llama.token_bos()
        formatter = Jinja2ChatFormatter(
            template=llama.metadata[CHAT_TEMPLATE_KEY],
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
            add_generation_prompt=True)
        result = formatter(messages=chat_turns(system, messages))  # type: ignore[arg-type]
        stop = result.stop if isinstance(result.stop, list) else [result.stop or ""]
        return cls(result.prompt, [s for s in stop if s])
