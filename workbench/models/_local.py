"""An embedded model: a GGUF run in process by llama.cpp (``llama-cpp-python``, the ``local`` extra).

Two models ship as pip packages (`workbench.models._packaged`), so experiments and notebooks run
with no key and no network: SmolLM2-135M-Instruct (``smollm2-135m``), an instruct model, and
Gemma 3 270M (``gemma3-270m``, the default), a base model. Both are small and weak: enough to
exercise the whole pipeline on real model output, not to judge summary quality.

Decoding follows the JSON schema the compaction prompt asks for (``grammar = "schema"``, see
`workbench.models._grammar`) unless ``grammar = "off"``; a fixed ``json_schema`` replaces the
prompt's.

Prompting (`workbench.models._local_prompt`). A GGUF with a chat template (SmolLM2) gets its own
turns: the system prompt, then each message. A GGUF without one (the packaged Gemma 3 270M; llama-
cpp-python would fall back to a llama-2 format) gets the plain flattened text followed by a cue.
Measured on Gemma with a Goose-style summary request (greedy, 60 tokens, free decoding):

- ``"\n\n<analysis>\n"`` (open Goose's scratchpad): the model repeats ``<analysis>`` forever;
- ``"\n\nSummary:\n"`` or Gemma's ``<start_of_turn>`` markers: it re-types the transcript;
- a JSON prefill, ``"\n\n```json\n{\n  \"user_intent\": [\""``: it writes summary JSON.

So the default cue (`SUMMARY_CUE`) is that prefill, and the prefilled part is put back in front of
the reply so the summary parser sees the whole fenced object. Other prompts pass their own
``text_cue``. Under a grammar the object is forced, and `JSON_CUE` is used instead.

llama.cpp contexts are not thread-safe: each loaded model has a lock, and calls run in a worker
thread (``asyncio.to_thread``) so the event loop stays free.

AMX: see `workbench.models._local_load`, which loads the model.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
from pathlib import Path
from typing import Any, Literal

from workbench._json_types import JSONObject
from workbench.compaction._model import Usage
from workbench.errors import ConfigError, ContextLengthExceeded, ModelCallError
from workbench.messages import Message
from workbench.models._grammar import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ITEMS,
    GRAMMAR_VERSION,
    GrammarBounds,
    GrammarMode,
    check_grammar_mode,
    close_truncated_json,
    summary_schema,
)
from workbench.models._local_load import (
    INSTALL_HINT,
    MISSING_EXTRA,
    _import_llama_cpp,
    _is_context_overflow,
    _load_llama,
    _load_vocab,
    _Loaded,
    _timings,
    _token_count,
    build_uses_amx,
    cpu_advertises_amx,
    resolve_gguf,
)
from workbench.models._local_prompt import (
    JSON_CUE,
    SUMMARY_CUE,
    SUMMARY_JSON_SCHEMA,
    ChatPrompt,
    flatten_prompt,
    has_chat_template,
)
from workbench.models._packaged import packaged_model
from workbench.tokens import WindowTokenizer

__all__ = ["DEFAULT_LOCAL_MODEL", "INSTALL_HINT", "JSON_CUE", "LocalModel", "MISSING_EXTRA",
           "SUMMARY_CUE", "SUMMARY_JSON_SCHEMA", "build_uses_amx", "cpu_advertises_amx",
           "resolve_gguf"]

DEFAULT_LOCAL_MODEL = "gemma3-270m"
PREFIX_CHARS_PER_TOKEN = 4
"""`LocalModel.count_prompt_tokens` with a limit first tokenizes this many characters per
allowed token (real transcripts average 2.5-4 characters per Gemma token)."""
PREFIX_MARGIN = 64
"""Tokens a prefix may over-count at its cut; a prefix count must exceed the limit by more."""
COUNT_MEMO = 16
"""Prompt token counts a `LocalModel` keeps (the prompts a cell's ladder is checking)."""
GRAMMAR_MEMO = 8
"""Compiled grammars a `LocalModel` keeps (one per distinct schema: per template variant)."""


class LocalModel:
    """A GGUF model run in process with llama.cpp; free and offline.

    Args:
        path_or_name: A packaged model (``"gemma3-270m"``, ``"smollm2-135m"``: see
            `workbench.models._packaged`) or the path of a ``.gguf``.
        n_ctx: Context window in tokens (prompt plus output); at most a packaged model's
            trained context.
        n_threads: CPU threads for llama.cpp (used when the model is first loaded).
        max_tokens: Longest answer in tokens.
        temperature: Sampling temperature (0 is greedy, hence repeatable).
        seed: Sampling seed.
        grammar: ``"schema"`` (the default) holds decoding to the JSON schema the compaction
            prompt asks for (`workbench.models._grammar.summary_schema`); ``"off"`` decodes
            freely (with `text_cue` on a plain-text prompt).
        grammar_max_items: ``maxItems`` of a list whose cap the prompt does not state.
        grammar_max_chars: ``maxLength`` of a string whose length the prompt does not state.
        repeat_penalty: llama.cpp's repetition penalty (1.0 = none); None leaves llama.cpp's
            default (1.0) and keeps the setting out of the recording key.
        json_schema: A fixed schema instead of the prompt's: True for `SUMMARY_JSON_SCHEMA`, or
            a dict; it replaces ``grammar = "schema"``. None or False: no fixed schema.
        prompt_mode: ``"auto"`` (chat template when the GGUF has one), ``"chat"`` or ``"text"``.
        text_cue: Text appended to a plain-text prompt decoded freely; its part after the
            leading blank lines is also put in front of the reply (a prefill).
        flash_attn: Flash attention (on by default: about 1.6x faster prompt processing at 8k
            tokens on 2 cores, measured; it changes numerics slightly, so it is in the identity).
        extra_buffers: Use llama.cpp's AMX/repacked weight buffers; None decides from the CPU
            (off where AMX is advertised, see the module docstring).

    Raises:
        ConfigError: a bad setting; the ``local`` extra or a packaged model is missing (on
            first use, naming the install command), or the file does not exist.
    """

    def __init__(self, path_or_name: str | os.PathLike[str] = DEFAULT_LOCAL_MODEL, *,
                 n_ctx: int = 8192, n_threads: int = 2, max_tokens: int = 1024,
                 temperature: float = 0.0, seed: int = 0, grammar: GrammarMode = "schema",
                 grammar_max_items: int = DEFAULT_MAX_ITEMS,
                 grammar_max_chars: int = DEFAULT_MAX_CHARS,
                 repeat_penalty: float | None = None,
                 json_schema: JSONObject | bool | None = None,
                 prompt_mode: Literal["auto", "chat", "text"] = "auto",
                 extra_buffers: bool | None = None, text_cue: str = SUMMARY_CUE,
                 flash_attn: bool = True) -> None:
        if prompt_mode not in ("auto", "chat", "text"):
            raise ConfigError(f"prompt_mode must be 'auto', 'chat' or 'text', got {prompt_mode!r}")
        self.path_or_name = str(path_or_name)
        packaged = packaged_model(self.path_or_name)
        if packaged is not None and n_ctx > packaged.context:
            raise ConfigError(f"local/{packaged.name}: n_ctx {n_ctx} is larger than the "
                              f"{packaged.context} tokens the model was trained for")
        if repeat_penalty is not None and (isinstance(repeat_penalty, bool)
                                           or not isinstance(repeat_penalty, int | float)
                                           or repeat_penalty <= 0):
            raise ConfigError(f"repeat_penalty must be a positive number, got {repeat_penalty!r}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.grammar = check_grammar_mode(grammar)
        self.bounds = GrammarBounds(grammar_max_items, grammar_max_chars)
        self.repeat_penalty = repeat_penalty
        self.json_schema = json_schema
        self.prompt_mode = prompt_mode
        self.extra_buffers = extra_buffers
        self.flash_attn = flash_attn
        self.text_cue = text_cue
        name = packaged.name if packaged is not None else Path(self.path_or_name).stem
        self.model = f"local/{name}"
        self._path: Path | None = None
        # Each wrapper in front of the model (shared calls, cache, window cap) checks the same
        # prompt; llama.cpp counts a long prompt in tens of ms, so recent counts are kept.
        self._counts: dict[tuple[str, bool], int] = {}
        self._grammars: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"LocalModel({self.path_or_name!r}, n_ctx={self.n_ctx}, "
                f"max_tokens={self.max_tokens}, temperature={self.temperature}, seed={self.seed}, "
                f"grammar={self.grammar!r}, json_schema={bool(self.json_schema)})")

    def describe(self) -> str:
        """Short label for tables."""
        return self.model

    @property
    def path(self) -> Path:
        """The resolved GGUF file."""
        if self._path is None:
            self._path = resolve_gguf(self.path_or_name)
        return self._path

    def schema(self) -> JSONObject | None:
        """The fixed JSON schema given as `json_schema`, or None."""
        if self.json_schema is True:
            return copy.deepcopy(SUMMARY_JSON_SCHEMA)
        if isinstance(self.json_schema, dict):
            return self.json_schema
        return None

    @property
    def constrained(self) -> bool:
        """Whether decoding is held to a JSON schema (a fixed one, or the prompt's)."""
        return bool(self.json_schema) or self.grammar == "schema"

    def decoding_schema(self, system: str, messages: list[Message]) -> JSONObject | None:
        """The JSON schema a reply to this prompt is decoded under, or None (free decoding)."""
        fixed = self.schema()
        if fixed is not None:
            return fixed
        if self.grammar == "schema":
            return summary_schema(flatten_prompt(system, messages), self.bounds)
        return None

    def context_window(self) -> int:
        """The configured window (``n_ctx``)."""
        return self.n_ctx

    def tokenizer_name(self) -> str:
        """Name of the model's own tokenizer, as tables show it (``gemma3-270m``)."""
        return self.model.removeprefix("local/")

    def own_tokenizer(self) -> WindowTokenizer:
        """The tokenizer a window in front of this model counts in: always the model's own,
        whether or not llama.cpp is installed here (recorded counts stand in without it)."""
        name = self.tokenizer_name()
        return WindowTokenizer(name, name)

    @property
    def tokenizer_install_hint(self) -> str:
        """What to install for `count_prompt_tokens` to count (named by the window cap's error)."""
        packaged = packaged_model(self.path_or_name)
        return packaged.install if packaged is not None else INSTALL_HINT

    def _prompt_text(self, llama: Any, system: str,
                     messages: list[Message]) -> tuple[str, list[str] | None]:
        """The text llama.cpp evaluates, and the stop texts of a rendered chat prompt (None
        for a plain-text prompt)."""
        if self.uses_chat_template(llama):
            chat = ChatPrompt.render(llama, system, messages)
            return chat.text, chat.stop
        cue = JSON_CUE if self.constrained else self.text_cue
        return flatten_prompt(system, messages) + cue, None

    def count_prompt_tokens(self, system: str, messages: list[Message],
                            limit: int | None = None) -> int | None:
        """Tokens the prompt takes in the model's own tokenizer, cue or chat turns included.

        This is the count `complete` compares with ``n_ctx``, so a window simulated in front of
        this model measures prompts the way the model does.

        Args:
            system: The system prompt.
            messages: The request messages.
            limit: When given, a prompt far over it may be answered from a prefix: a count
                above ``limit`` is then a lower bound (tokenizing a 500 kB transcript costs
                seconds; its first ``PREFIX_CHARS_PER_TOKEN x limit`` characters suffice).

        Returns:
            The count (exact whenever it is at most `limit`), or None when llama.cpp or the
            GGUF is not installed (a window cap then uses a recorded count, or fails).
        """
        try:
            vocab = _load_vocab(self.path)
        except ConfigError:
            return None
        prompt, stop = self._prompt_text(vocab, system, messages)
        chat = stop is not None

        def count(text: str) -> int:
            key = (text, chat)
            if key not in self._counts:
                if len(self._counts) >= COUNT_MEMO:
                    del self._counts[next(iter(self._counts))]  # the oldest
                # A rendered chat prompt carries its own special tokens (no BOS is added).
                self._counts[key] = _token_count(vocab, text.encode("utf-8"), add_bos=not chat,
                                                 special=chat)
            return self._counts[key]

        if limit is not None and len(prompt) > PREFIX_CHARS_PER_TOKEN * limit:
            # A prefix never has fewer tokens than the whole prompt's tokens up to the cut,
            # minus the few of the one piece the cut splits: `PREFIX_MARGIN` covers those.
            head = count(prompt[:PREFIX_CHARS_PER_TOKEN * limit])
            if head > limit + PREFIX_MARGIN:
                return head - PREFIX_MARGIN
        return count(prompt)

    def cache_identity(self) -> JSONObject:
        """Everything that changes the answer: the weights and the decoding settings.

        A packaged model is named by its package, so a recording replays on a machine without
        llama.cpp or the package (nothing is resolved or loaded); a GGUF path is named by its
        file name and size. The grammar and the repetition penalty appear only when they act,
        so recordings made before they existed (free decoding) keep their keys.
        """
        packaged = packaged_model(self.path_or_name)
        if packaged is not None:
            weights: JSONObject = {"package": packaged.package}
        else:
            weights = {"file": self.path.name, "size": self.path.stat().st_size}
        identity: JSONObject = {
            "kind": "local",
            **weights,
            "n_ctx": self.n_ctx,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "json_schema": self.schema() if self.json_schema else False,
            "prompt_mode": self.prompt_mode,
            "text_cue": self.text_cue,
            "flash_attn": self.flash_attn,
        }
        if not self.json_schema and self.grammar == "schema":
            identity["grammar"] = {"mode": "schema", "version": GRAMMAR_VERSION,
                                   "max_items": self.bounds.max_items,
                                   "max_chars": self.bounds.max_chars}
        if self.repeat_penalty is not None:
            identity["repeat_penalty"] = self.repeat_penalty
        return identity

    def uses_chat_template(self, llama: object) -> bool:
        """Whether calls go through the GGUF's chat template (see `_local_prompt`)."""
        if self.prompt_mode != "auto":
            return self.prompt_mode == "chat"
        return has_chat_template(llama)

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Generate a reply in a worker thread; usage holds llama.cpp's real token counts.

        Raises:
            ContextLengthExceeded: the prompt has at least ``n_ctx`` tokens.
            ConfigError: the ``local`` extra is missing.
            ModelCallError: llama.cpp failed otherwise.
        """
        loaded = _load_llama(self.path, self.n_ctx, self.n_threads, self.extra_buffers,
                             self.flash_attn)
        return await asyncio.to_thread(self._generate, loaded, system, messages)

    def _generate(self, loaded: _Loaded, system: str,
                  messages: list[Message]) -> tuple[Message, Usage]:
        llama = loaded.llama
        schema = self.decoding_schema(system, messages)
        with loaded.lock:
            prompt, stop = self._prompt_text(llama, system, messages)
            chat = stop is not None
            prefill = "" if chat or self.constrained else self.text_cue.lstrip("\n")
            # Cheap pre-check: counting tokens costs far less than a failed evaluation.
            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=not chat, special=chat)
            if len(tokens) >= self.n_ctx:
                raise ContextLengthExceeded(
                    f"{self.model}: prompt of {len(tokens)} tokens does not fit the context "
                    f"window of {self.n_ctx} tokens (n_ctx)", self.model)
            try:
                result = self._call(llama, tokens if chat else prompt, schema, stop)
            except Exception as exc:
                if _is_context_overflow(exc):
                    raise ContextLengthExceeded(f"{self.model}: {exc}", self.model) from exc
                raise ModelCallError(f"{self.model}: llama.cpp failed: {exc}", self.model) from exc
            timings = _timings(llama)
        choice = result["choices"][0]
        counts = result.get("usage") or {}
        extra: JSONObject = {"finish_reason": choice.get("finish_reason"),
                             "prompt_mode": "chat" if chat else "text"}
        if timings:
            extra["timings"] = {**timings}
        text = choice.get("text") or ""
        if schema is not None and choice.get("finish_reason") == "length":
            closed = close_truncated_json(text)
            if closed is not None:  # the grammar held it valid up to the cut
                text = closed
                extra["closed_at_max_tokens"] = True
        usage = Usage(
            model=self.model,
            input_tokens=counts.get("prompt_tokens"),
            output_tokens=counts.get("completion_tokens"),
            total_tokens=counts.get("total_tokens"),
            cost=0.0,
            extra=extra,
        )
        return Message.assistant(prefill + text), usage

    def _grammar(self, schema: JSONObject) -> Any:
        """The compiled llama.cpp grammar for `schema` (kept: one per template variant)."""
        text = json.dumps(schema, sort_keys=True)
        grammar = self._grammars.get(text)
        if grammar is None:
            if len(self._grammars) >= GRAMMAR_MEMO:
                del self._grammars[next(iter(self._grammars))]
            llama_cpp = _import_llama_cpp()
            grammar = self._grammars[text] = llama_cpp.LlamaGrammar.from_json_schema(
                json.dumps(schema), verbose=False)
        return grammar

    def _call(self, llama: Any, prompt: str | list[int], schema: JSONObject | None,
              stop: list[str] | None) -> dict[str, Any]:
        common: dict[str, object] = {"max_tokens": self.max_tokens,
                                     "temperature": self.temperature, "seed": self.seed}
        if self.repeat_penalty is not None:
            common["repeat_penalty"] = self.repeat_penalty
        if stop:
            common["stop"] = stop
        if schema is not None:
            common["grammar"] = self._grammar(schema)
        return llama.create_completion(prompt=prompt, **common)


