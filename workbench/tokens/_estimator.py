"""Token counting as Goose does it: a tokenizer plus Goose's chat overheads.

``count_chat_tokens`` adds 4 tokens per message and for a non-empty system prompt, 3 for the reply
primer, and per-tool schema overheads; only text, tool requests and tool-response text count
(images and other items count 0, as upstream). Goose counts with tiktoken ``o200k_base`` for
every model (`TiktokenEstimator`, the workbench's default for retained tokens); a simulated window
counts with the model's own tokenizer (`workbench.tokens.estimator_for`), with the same overheads.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from workbench._json_types import JSONValue
from workbench._memo import memo
from workbench._offline import ensure_offline, litellm_tokenizer_dir
from workbench.errors import ConfigError
from workbench.messages import Message, TextContent, ToolRequest, ToolResponse
from workbench.tokens._prompt import PromptText

if TYPE_CHECKING:
    import tiktoken

ENCODING = "o200k_base"
PER_MESSAGE_TOKENS = 4
SYSTEM_TOKENS = 4
REPLY_PRIMER_TOKENS = 3
TOOL_TOKENS = 7
TOOL_PROPERTIES_TOKENS = 3
PROPERTY_TOKENS = 3
ENUM_DISCOUNT = 3
ENUM_ITEM_TOKENS = 3
TOOLS_FOOTER_TOKENS = 12
REMEMBERED_TEXT_CHARS = 65_536
"""Texts up to this long have their counts remembered by the run (tool outputs, summaries);
longer ones are prompts, which remember their own counts (`PromptText`)."""
LINE_ADDITIVE_ENCODINGS = frozenset({"o200k_base", "cl100k_base"})
"""tiktoken encodings whose counts add up across transcript lines (`PromptText`)."""
SEPARATOR = "<|endoftext|>"
"""The special token `TiktokenEstimator.count_many` joins texts with."""
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
"""Where tiktoken would fetch an encoding; its cache file is named by this URL's sha1."""


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts tokens for usage estimation and retained-context reporting."""

    def count_text_tokens(self, text: str) -> int:
        """Tokens of one string."""
        ...

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: Sequence[dict[str, JSONValue]] | None = None) -> int:
        """Tokens of a chat request: system prompt, messages, tool schemas, reply primer."""
        ...


def compact_json(value: object) -> str:
    """JSON with no spaces, like serde_json's ``to_string``."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def load_tiktoken(encoding: str) -> tiktoken.Encoding:
    """A tiktoken encoding from the offline cache; never a download.

    Raises:
        ConfigError: its file is in neither ``TIKTOKEN_CACHE_DIR`` nor litellm's folder.
    """
    ensure_offline()
    import tiktoken  # after ensure_offline (no download), and kept off `--help`'s start

    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or str(litellm_tokenizer_dir() or "")
    digest = hashlib.sha1(TIKTOKEN_URL.format(encoding).encode()).hexdigest()
    if not folder or not os.path.isfile(os.path.join(folder, digest)):
        raise ConfigError(
            f"the tiktoken encoding {encoding} is not available offline (no file {digest} in "
            f"{folder or 'TIKTOKEN_CACHE_DIR'}); the workbench never downloads one. litellm "
            "ships cl100k_base, o200k_base and p50k_base: reinstall litellm, or point "
            "TIKTOKEN_CACHE_DIR at a folder holding the file")
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS  # once the file is known local

    built = tiktoken.Encoding(**ENCODING_CONSTRUCTORS[encoding]())
    # The native encoder holds its own copy of the merge table: the Python one (27 MB for
    # o200k) is needed only to pickle the encoding, which the workbench never does.
    built._mergeable_ranks = {}
    return built


class GooseCounter:
    """Goose's chat overheads over any text counter; counts remembered by the run memo.

    Args:
        count_text: Tokens of one string in some tokenizer.
        name: The tokenizer's short name (``o200k``, ``claude``...).
        counts_by_line: The tokenizer's counts add up across transcript lines, so a
            `PromptText` is counted from its parts (see `workbench.tokens.PromptText`).

    Attributes:
        counts_by_line: See the argument.
    """

    def __init__(self, count_text: Callable[[str], int], name: str,
                 counts_by_line: bool = False) -> None:
        self.tokenizer_name = name
        self.counts_by_line = counts_by_line
        self._count = count_text

    def count_text_tokens(self, text: str) -> int:
        """Tokens of `text` (special tokens allowed, as Goose's counter).

        A `PromptText` is counted from its parts when this counter `counts_by_line`, and
        remembers its count either way; other texts up to `REMEMBERED_TEXT_CHARS` are counted
        once per run (the run memo's ``text_tokens``).
        """
        if not text:
            return 0
        if type(text) is PromptText:
            known = text.known
            found = known.get(self)
            if found is None:
                found = known[self] = self._prompt_tokens(text)
            return int(found)
        if len(text) > REMEMBERED_TEXT_CHARS:
            return self._count(text)
        return memo().text_tokens.get_or((self, text), lambda: self._count(text))

    def count_exactly(self, text: str) -> int:
        """Tokens of `text` counted whole, from nothing remembered (a check on the others)."""
        return self._count(str.__str__(text)) if text else 0

    def _prompt_tokens(self, prompt: PromptText) -> int:
        parts = prompt.segments() if self.counts_by_line else None
        if parts is None:
            return self._count(prompt)
        first, middle, last = parts
        total = sum(map(self.count_text_tokens, first)) + sum(map(self.count_text_tokens, last))
        key, get = (self, prompt.style), memo().line_tokens.get
        for message, line in middle:
            total += get(message, key, self._line_tokens, line)
        return total

    def _line_tokens(self, line: str) -> int:
        return self._count(line + "\n")

    def content_tokens(self, message: Message) -> int:
        """Tokens of a message's countable items (no per-message overhead), counted once per
        message while it lives (the run memo's ``content_tokens``)."""
        return memo().content_tokens.get(message, self, self._content_tokens, message)

    def _content_tokens(self, message: Message) -> int:
        return sum(map(self.count_text_tokens, countable_texts(message)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each of `texts`, each counted whole from nothing remembered (as
        `count_exactly` counts it); a tokenizer that can counts them all in one pass."""
        return [self._count(text) if text else 0 for text in texts]

    def count_contents(self, messages: Sequence[Message],
                       texts: Sequence[Sequence[str]] | None = None) -> None:
        """Count the items of `messages` ahead, in one `count_many` of the texts the run memo
        does not hold yet: each message's count goes into the memo's ``content_tokens``, each
        text's into its ``text_tokens``, where `content_tokens` and `count_text_tokens` find
        them. The same counts as theirs, in a fraction of the time for many short texts.

        Args:
            messages: The messages.
            texts: Their `countable_texts`, when the caller has them already.
        """
        if texts is None:
            texts = [countable_texts(m) for m in messages]
        known = memo().text_tokens
        todo: dict[str, None] = {}  # plain texts not remembered, once each, in order
        for items in texts:
            for text in items:
                if text and type(text) is str and text not in todo and (
                        len(text) > REMEMBERED_TEXT_CHARS or known.get((self, text)) is None):
                    todo[text] = None
        counted = dict(zip(todo, self.count_many(list(todo)), strict=True))
        for text, tokens in counted.items():
            if len(text) <= REMEMBERED_TEXT_CHARS:
                known.put((self, text), tokens)
        table = memo().content_tokens
        for message, items in zip(messages, texts, strict=True):
            total = sum(counted[t] if t in counted else self.count_text_tokens(t) for t in items)
            table.get(message, self, int, total)

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: Sequence[dict[str, JSONValue]] | None = None) -> int:
        """Goose's ``count_chat_tokens``: system + 4, per message 4 + content, tools, + 3."""
        total = 0
        if system:
            total += self.count_text_tokens(system) + SYSTEM_TOKENS
        for message in messages:
            total += PER_MESSAGE_TOKENS + self.content_tokens(message)
        if tools:
            total += self._tools_tokens(tools)
        return total + REPLY_PRIMER_TOKENS

    def _tools_tokens(self, tools: Sequence[dict[str, JSONValue]]) -> int:
        total = 0
        for tool in tools:
            name = tool.get("name", "")
            description = str(tool.get("description", "")).rstrip(".")
            total += TOOL_TOKENS + self.count_text_tokens(f"{name}:{description}")
            schema = tool.get("input_schema") or tool.get("parameters") or {}
            props = schema.get("properties") if isinstance(schema, dict) else None
            if props and isinstance(props, dict):
                total += TOOL_PROPERTIES_TOKENS
                for pname, spec in props.items():
                    spec = spec if isinstance(spec, dict) else {}  # a schema without a type
                    ptype = spec.get("type", "")
                    pdesc = str(spec.get("description", "")).rstrip(".")
                    total += PROPERTY_TOKENS + self.count_text_tokens(f"{pname}:{ptype}:{pdesc}")
                    enum = spec.get("enum")
                    if enum and isinstance(enum, list):
                        total -= ENUM_DISCOUNT
                        for item in enum:
                            total += ENUM_ITEM_TOKENS + self.count_text_tokens(str(item))
        return total + TOOLS_FOOTER_TOKENS

    def count_context_tokens(self, messages: Sequence[Message]) -> int:
        """Goose's retained-context figure: per agent-visible message, ``count_chat_tokens("", [m])``."""
        return sum(self.count_chat_tokens("", [m]) for m in messages if m.is_agent_visible)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tokenizer_name!r})"


def countable_texts(message: Message) -> list[str]:
    """The texts of a message's items that Goose counts: each text, each tool request as
    ``id:name:arguments``, each tool response's text (other items count nothing)."""
    texts = []
    for item in message.content:
        if isinstance(item, TextContent):
            texts.append(item.text)
        elif isinstance(item, ToolRequest):
            if item.tool_call.value is not None:
                call = item.tool_call.value
                texts.append(f"{item.id}:{call.name}:{compact_json(call.arguments)}")
        elif isinstance(item, ToolResponse):
            texts.append(item.text())
    return texts


class TiktokenEstimator(GooseCounter):
    """Goose's estimator over a tiktoken encoding (loaded offline from litellm's bundled files).

    Args:
        encoding: The tiktoken encoding name (Goose uses ``o200k_base`` for every model).

    Raises:
        ConfigError: the encoding is not bundled offline (it would be downloaded).
    """

    def __init__(self, encoding: str = ENCODING) -> None:
        self.encoding_name = encoding
        self._enc = load_tiktoken(encoding)
        self._specials = tuple(self._enc.special_tokens_set)
        self._separator_id = (self._enc.encode_single_token(SEPARATOR)
                              if SEPARATOR in self._specials else None)
        super().__init__(self._uncached, encoding.removesuffix("_base"),
                         counts_by_line=encoding in LINE_ADDITIVE_ENCODINGS)

    def _uncached(self, text: str) -> int:
        # Special tokens are allowed (each counts as one token, as Goose's counter does). A
        # text holding none encodes the same either way, and the ordinary encoder skips the
        # search for them: about a sixth less time on a session's lines.
        if any(special in text for special in self._specials):
            return len(self._enc.encode(text, allowed_special="all"))
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each of `texts` (as `count_exactly`), in one encode of them all joined by
        a special token.

        tiktoken encodes the text between two special tokens on its own, so each text's tokens
        lie between two separators, as many as it has alone (a text holding a special token
        of its own is counted alone). One call instead of one per text; timed alone on the
        shipped 26-message ``gen-005k-s1`` (37 texts, 17,660 characters) it takes about what
        one call per text does (0.84 against 0.82 ms here, 2026-12-05), so its gain is the
        calls it saves, not the tokenizing."""
        counts = [0] * len(texts)
        joined = []
        for index, text in enumerate(texts):
            if not text:
                continue
            if self._separator_id is None or any(s in text for s in self._specials):
                counts[index] = self._count(text)
            else:
                joined.append(index)
        mark = self._separator_id
        if not joined or mark is None:
            return counts
        tokens = self._enc.encode(SEPARATOR.join(texts[i] for i in joined),
                                  allowed_special={SEPARATOR})
        start = 0
        for index in joined[:-1]:
            end = tokens.index(mark, start)
            counts[index] = end - start
            start = end + 1
        counts[joined[-1]] = len(tokens) - start
        return counts


class HFTokenizerEstimator(GooseCounter):
    """Goose's overheads over a Hugging Face ``tokenizers`` file (Claude's, DeepSeek's).

    Args:
        name: The tokenizer's short name (``claude``, ``deepseek``).
        path: The ``tokenizer.json`` file.
    """

    def __init__(self, name: str, path: str) -> None:
        ensure_offline()
        from tokenizers import Tokenizer  # after ensure_offline; only for Claude's, DeepSeek's

        self.path = path
        self._tok = Tokenizer.from_file(path)
        super().__init__(self._uncached, name)

    def _uncached(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


def context_tokens(messages: Sequence[Message], estimator: TokenEstimator) -> int:
    """Agent-visible tokens of `messages` as Goose's retained-context figure counts them.

    Uses the estimator's ``count_context_tokens`` when it has one, else sums each visible
    message as a one-message chat.
    """
    counter = getattr(estimator, "count_context_tokens", None)
    if callable(counter):
        return int(counter(messages))
    return sum(estimator.count_chat_tokens("", [m]) for m in messages if m.is_agent_visible)
