"""Model strings: one line names a model, its simulated window and its cache mode.

Grammar::

    [cache-mode:]model[@window]

``cache-mode``
    ``cached:`` records and replays (read-write cache), ``replay:`` only replays and fails on a
    miss (CI). No prefix: no cache. The ``cache=`` argument of `load_model` (``"rw"``,
    ``"replay"``, ``"off"``; the CLI's ``--cache``) overrides the prefix.
``model``
    ``extractive``
        the rule-based, no-LLM baseline (`ExtractiveModel`).
    ``local`` or ``local/<name-or-path.gguf>``
        the embedded llama.cpp model (`LocalModel`); ``local`` alone is ``local/gemma3-270m``.
    ``<provider>/<model>``
        anything else with a ``/`` goes to litellm (`LiteLLMModel`), e.g. ``openai/gpt-4o-mini``,
        ``anthropic/claude-3-5-haiku-latest``, ``ollama/llama3.1:8b``.
    A bare name without ``/`` is an error (litellm needs the provider: ``openai/<name>``);
    ``scripted/...`` is an error too: scripted fakes are built in code (`workbench.testing`).
``@window``
    a simulated context window (`WindowCap`): ``@8k`` (k = 1024 tokens, so 8192) or ``@32000``.
    Only a trailing ``@`` followed by a number without leading zero, of at most 7 digits or
    ending in ``k``, is a window. ``@0``, a number followed by other letters (``@8kb``), and any
    non-window ``@`` after a name without ``/`` are errors; any other ``@`` stays in the model
    name (Vertex's ``claude-3-5-sonnet@20240620``, ``gemini-1.0-pro@001``), so such a model
    takes a window as ``vertex_ai/claude-3-5-sonnet@20240620@16k``. The ``window=`` argument
    of `load_model` overrides the string's window.

Composition: the model behind a window step and a cache step (`workbench.models.compose`). The
window comes first, so an over-long prompt is rejected before any lookup, and a recording made
at 32k serves 8k calls that fit (the window does not change the identity).

Examples: ``extractive@8k``, ``cached:openai/gpt-4o-mini@32k``, ``replay:local/gemma3-270m``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from workbench._paths import cache_path as default_path
from workbench._suggest import closest, did_you_mean
from workbench.compaction._model import CompactionModel
from workbench.errors import ConfigError
from workbench.models._cache import CacheStep
from workbench.models._counts import PromptCounts, RecordedCounts
from workbench.models._extractive import ExtractiveModel
from workbench.models._identity import format_window
from workbench.models._pipeline import compose
from workbench.models._recording import ResponseCache, is_read_only
from workbench.models._window import WindowCounter, WindowStep
from workbench.tokens import WindowTokenizer, tokenizer_for_model

CACHE_PREFIXES: dict[str, Literal["rw", "replay"]] = {"cached:": "rw", "replay:": "replay"}
EXTRACTIVE = "extractive"
LOCAL = "local"
DEFAULT_LOCAL = "gemma3-270m"
# Generation settings a harness may pass to every model; the extractive model ignores them.
GENERATION_PARAMS = frozenset({"temperature", "max_tokens", "seed", "top_p"})


def max_tokens_param(params: Mapping[str, object], default: int) -> int:
    """The ``max_tokens`` a model's parameters set (a number, or the text of one), else
    `default`."""
    value = params.get("max_tokens")
    return int(value) if isinstance(value, (int, float, str)) and value else default


_WINDOW = re.compile(r"^(?:[1-9]\d*k|[1-9]\d{0,6})$", re.IGNORECASE)
MAX_WINDOW_TOKENS = 100 * 1024 * 1024
"""Largest simulated window (100m tokens, ten times any real model's context)."""


def check_window(tokens: int, where: str) -> int:
    """`tokens` when it is at most `MAX_WINDOW_TOKENS`.

    Raises:
        ConfigError: naming `where` and the limit.
    """
    if tokens > MAX_WINDOW_TOKENS:
        raise ConfigError(f"{where}: a window of {tokens:,} tokens is over the limit of "
                          f"{MAX_WINDOW_TOKENS:,} (100m)")
    return tokens


class ModelSpec(BaseModel):
    """A parsed model string."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """The model: ``extractive``, ``local/<name>`` or a litellm ``provider/model``."""
    cache_mode: Literal["rw", "replay"] | None = None
    """``"rw"`` for ``cached:``, ``"replay"`` for ``replay:``, None without a prefix."""
    window: int | None = None
    """Simulated context window in tokens, None for the model's own."""

    @property
    def label(self) -> str:
        """Label for tables: model and window, no cache mode (a replay answers like the live call)."""
        if self.window is None:
            return self.model
        return f"{self.model}@{format_window(self.window)}"

    @property
    def kind(self) -> Literal["extractive", "local", "litellm"]:
        """Which adapter builds it."""
        if self.model == EXTRACTIVE:
            return "extractive"
        if self.model == LOCAL or self.model.startswith(LOCAL + "/"):
            return "local"
        return "litellm"

    @property
    def window_tokenizer(self) -> WindowTokenizer:
        """The `WindowTokenizer` a simulated window in front of this model counts in, decided
        from the string alone (a local model's own tokenizer, whether or not llama.cpp is
        installed here; see `workbench.tokens.tokenizer_for_model` for the others)."""
        if self.kind == "local":
            name = self.model[len(LOCAL) + 1:] if self.model != LOCAL else DEFAULT_LOCAL
            if name.endswith(".gguf"):
                name = Path(name).stem
            return WindowTokenizer(name, name)
        return tokenizer_for_model(self.model)

    def __str__(self) -> str:
        prefix = {"rw": "cached:", "replay": "replay:", None: ""}[self.cache_mode]
        return prefix + self.label


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``[cached:|replay:]model[@window]``.

    Raises:
        ConfigError: naming the part of the string that is wrong.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"empty model string {spec!r}; expected [cached:|replay:]model[@window], "
                          "e.g. 'openai/gpt-4o-mini@8k'")
    rest = spec.strip()
    cache_mode: Literal["rw", "replay"] | None = None
    for prefix, mode in CACHE_PREFIXES.items():
        if rest.startswith(prefix):
            cache_mode, rest = mode, rest[len(prefix):]
            break
    window = None
    head, at, tail = rest.rpartition("@")
    if at and _WINDOW.match(tail):
        if len(tail) > 12:  # int() refuses thousands of digits; anything this long is too big
            raise ConfigError(f"model string {spec!r}: window '@{tail}' is over the limit of "
                              f"{MAX_WINDOW_TOKENS:,} tokens (100m)")
        window = int(tail[:-1]) * 1024 if tail[-1] in "kK" else int(tail)
        check_window(window, f"model string {spec!r}")
        rest = head
    elif at and (not head or "/" not in head or re.fullmatch(r"0+|\d+[A-Za-z]+", tail)):
        raise ConfigError(f"model string {spec!r}: bad window '@{tail}'; write @8k (k = 1024 "
                          "tokens) or a token count of at most 7 digits such as @32000")
    model = rest
    if not model:
        raise ConfigError(f"model string {spec!r}: the model name is missing")
    if ":" in model.split("/", 1)[0]:
        prefix = model.split(":", 1)[0]
        raise ConfigError(f"model string {spec!r}: unknown cache prefix '{prefix}:'; use "
                          "'cached:' (read-write) or 'replay:' (replay-only)")
    if any(c.isspace() for c in model):
        raise ConfigError(f"model string {spec!r}: model {model!r} contains whitespace")
    if model.split("/", 1)[0] == "scripted":
        raise ConfigError(f"model string {spec!r}: scripted models are test fakes and have no "
                          "model string; build workbench.testing.ScriptedModel(replies=[...]) in code")
    if model != EXTRACTIVE and model != LOCAL and "/" not in model:
        near = closest(model, [EXTRACTIVE, LOCAL])
        hint = f" (did you mean {near!r}?)" if near else ""
        raise ConfigError(f"model string {spec!r}: {model!r} names no provider{hint}; litellm "
                          f"models are provider/model, e.g. 'openai/{model}' (or use "
                          "'extractive' or 'local/<name>')")
    if model.startswith(LOCAL + "/") and not model[len(LOCAL) + 1:]:
        raise ConfigError(f"model string {spec!r}: 'local/' needs a model name or .gguf path, "
                          f"e.g. 'local/{DEFAULT_LOCAL}'")
    if model.endswith("/") or model.startswith("/"):
        raise ConfigError(f"model string {spec!r}: {model!r} is not provider/model")
    return ModelSpec(model=model, cache_mode=cache_mode, window=window)


PROVIDERS_URL = "https://docs.litellm.ai/docs/providers"


def check_model_string(spec: str, params: Mapping[str, object] | None = None) -> ModelSpec:
    """Parse `spec` and check what can be checked before any call: a litellm model's provider
    must be one litellm knows, and the extractive model takes only generation parameters.

    Imports litellm only for litellm models. Used when an experiment is loaded, so a typo fails
    the spec (and ``--dry-run``) at once instead of failing every cell of that model.

    Raises:
        ConfigError: a bad string, an unknown provider or a parameter the model cannot take.
    """
    parsed = parse_model_spec(spec)
    if parsed.kind == "extractive":
        unknown = sorted(set(params or {}) - GENERATION_PARAMS)
        if unknown:
            raise ConfigError(f"model {spec!r}: the extractive model takes no parameters "
                              f"besides {', '.join(sorted(GENERATION_PARAMS))}; got "
                              f"{', '.join(unknown)}")
    elif parsed.kind == "litellm":
        # The gateway loads on first use, as the package's `_LAZY` has it: a run of another
        # model never needs its modules (0.05 s of imports).
        from workbench.models._litellm import retry_from_params

        try:
            retry_from_params(params or {})
        except ConfigError as exc:
            raise ConfigError(f"model {spec!r}: {exc}") from None
        provider = parsed.model.split("/", 1)[0]
        known = _litellm_providers()
        if known and provider not in known:
            raise ConfigError(f"model string {spec!r}: unknown provider "
                              f"{provider!r}{did_you_mean(provider, known)}; litellm "
                              f"providers include openai, anthropic, gemini, ollama, openrouter, "
                              f"hosted_vllm (full list: {PROVIDERS_URL})")
    return parsed


def _litellm_providers() -> frozenset[str]:
    try:
        # litellm itself, seconds to import: only for a litellm model's string
        from workbench.models._errors_map import load_litellm

        litellm = load_litellm()
    except ImportError:
        return frozenset()  # without litellm there is nothing to check against
    names = {getattr(p, "value", p) for p in getattr(litellm, "provider_list", [])}
    names |= {str(entry.get("provider")) for entry in getattr(litellm, "custom_provider_map", [])
              if isinstance(entry, dict)}
    return frozenset(str(n) for n in names)


_caches: dict[Path, ResponseCache] = {}
_caches_lock = threading.Lock()


def shared_cache(path: str | Path | None, mode: str = "rw") -> ResponseCache:
    """The process-wide `ResponseCache` connection to the file `path` (the user's default
    recording when None), the one every cached model `load_model` builds here uses.

    A recording that may not be written is opened read-only for a replay.

    Args:
        path: The recording file.
        mode: The cache mode it is opened for: ``"rw"`` or ``"replay"``.

    Raises:
        ConfigError: the file may not be written and `mode` is not ``"replay"``.
    """
    resolved = Path(path).expanduser().resolve() if path is not None else default_path().resolve()
    read_only = is_read_only(resolved)
    if read_only and mode != "replay":
        raise ConfigError(f"response cache {resolved} is read-only: replay it ('replay:' prefix "
                          "or cache mode 'replay'), or copy it somewhere writable to record")
    with _caches_lock:
        cache = _caches.get(resolved)
        if cache is None or cache.closed or (cache.read_only and not read_only):
            cache = _caches[resolved] = ResponseCache(resolved, read_only=read_only)
        return cache


def release_shared_cache(path: str | Path | None) -> None:
    """Close the run-wide connection to the cache file `path`, if one is open (before the file
    is moved, replaced or vacuumed); the next `load_model` opens a new one."""
    resolved = Path(path).expanduser().resolve() if path is not None else default_path().resolve()
    with _caches_lock:
        cache = _caches.pop(resolved, None)
    if cache is not None and not cache.closed:
        cache.close()


def _build_base(spec: ModelSpec, params: Mapping[str, object]) -> CompactionModel:
    if spec.kind == "extractive":
        unknown = sorted(set(params) - GENERATION_PARAMS)
        if unknown:
            raise ConfigError(f"model 'extractive' takes no parameters; got {', '.join(unknown)}")
        return ExtractiveModel()
    if spec.kind == "local":
        # The llama.cpp model loads on first use, as the package's `_LAZY` has it.
        from workbench.models._local import LocalModel

        name = DEFAULT_LOCAL if spec.model == LOCAL else spec.model[len(LOCAL) + 1:]
        return _built(spec, LocalModel, name, params)
    # The gateway loads on first use, as the package's `_LAZY` has it.
    from workbench.models._litellm import LiteLLMModel

    return _built(spec, LiteLLMModel, spec.model, params)


def _built(spec: ModelSpec, make: Callable[..., CompactionModel], name: str,
           params: Mapping[str, object]) -> CompactionModel:
    """``make(name, **params)``: the user's parameters go to the model's constructor unread,
    and it checks them (an unknown or misspelt one is a TypeError, said as a ConfigError)."""
    try:
        return make(name, **params)
    except TypeError as exc:
        raise ConfigError(f"model {spec.model!r}: bad parameter ({exc})") from exc


def load_model(spec: str | ModelSpec, *, window: int | None = None, cache: str | None = None,
               cache_path: str | Path | None = None, counts: PromptCounts | None = None,
               **params: object) -> CompactionModel:
    """Build a `CompactionModel` from a model string: the model behind its window and cache
    steps (`workbench.models.compose`).

    Args:
        spec: A model string (see the module docstring) or a parsed `ModelSpec`.
        window: Simulated window in tokens; overrides the string's ``@window``.
        cache: ``"rw"``, ``"replay"`` or ``"off"``; overrides the string's prefix.
        cache_path: The response-cache file; the user dir's ``cache/responses.db`` by default.
        counts: Recorded prompt sizes for the window (`PromptCounts`); by default those of the
            response cache, when there is one (a Ray worker passes a snapshot instead).
        **params: Passed to the provider (``api_base``, ``api_key``, ``temperature``...).

    Returns:
        The model, or a `ModelPipeline` of it when it has a window or a cache.

    Raises:
        ConfigError: a bad string, window, cache mode or parameter.
    """
    return load_model_with(spec, params, window=window, cache=cache, cache_path=cache_path,
                           counts=counts)


def load_model_with(spec: str | ModelSpec, params: Mapping[str, object], *,
                    window: int | None = None, cache: str | None = None,
                    cache_path: str | Path | None = None,
                    counts: PromptCounts | None = None) -> CompactionModel:
    """`load_model` with the provider's parameters as one mapping (a spec's ``params`` table),
    so they never meet the keywords above."""
    parsed = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec)
    if window is not None:
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigError(f"window must be a positive number of tokens, got {window!r}")
        check_window(window, "window")
        parsed = parsed.model_copy(update={"window": window})
    mode = cache if cache is not None else (parsed.cache_mode or "off")
    if mode not in ("rw", "replay", "off"):
        raise ConfigError(f"unknown cache mode {mode!r}; use rw, replay or off")
    model = _build_base(parsed, params)
    store = shared_cache(cache_path, mode) if mode != "off" else None
    window_step = cache_step = None
    if parsed.window is not None:
        if counts is None and store is not None:
            counts = RecordedCounts(store, writable=mode == "rw")
        window_step = WindowStep(parsed.window, WindowCounter(model, counts=counts))
    if store is not None:
        cache_step = CacheStep(store, mode=mode)  # type: ignore[arg-type]
    if window_step is None and cache_step is None:
        return model
    return compose(model, window=window_step, cache=cache_step)
