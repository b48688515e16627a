"""Record and replay model responses: the pipeline's cache step, and `CachedModel`.

`CacheStep` looks a call up in a `ResponseCache` (`workbench.models._recording`) by its cache
key (`workbench.models._cache_keys`): ``"rw"`` looks up, lets the call through on a miss and
records the answer; ``"replay"`` only looks up and raises `CacheMiss` on a miss (CI); ``"off"``
passes every call through. Failed calls are never recorded; the real model's own refusals of
a prompt as too long are (so a replayed removal ladder takes the same steps). A hit returns
the recorded `Message` and the recorded `Usage` (the billed figures of the original call, so
a replay reproduces cost); the pipeline flags it ``usage.extra["cache_hit"]``
(`workbench.models._billing`). A simulated window comes before this step, so a prompt too long
for it is refused without a lookup and such refusals are never recorded.
"""

from __future__ import annotations

import time
from typing import ClassVar, Literal

from workbench.compaction._model import CompactionModel
from workbench.errors import CacheMiss, ConfigError, ContextLengthExceeded
from workbench.models._cache_keys import KEY_VERSION, cache_key, canonical_json, prompt_hash
from workbench.models._pipeline import Call, ModelPipeline, Proceed, Reply
from workbench.models._recording import (
    MIGRATIONS,
    Refusal,
    ResponseCache,
    decode_response,
    is_read_only,
    refusal_row,
    response_row,
)

__all__ = ["CACHE_MISS_MESSAGE", "CACHE_MODES", "KEY_VERSION", "MIGRATIONS", "CacheMode",
           "CacheStep", "CachedModel", "Refusal", "ResponseCache", "cache_key", "canonical_json",
           "decode_response", "is_read_only", "prompt_hash", "refusal_row", "response_row"]

CACHE_MISS_MESSAGE = (
    "replay-only cache has no recording for model {model} (prompt sha256:{prompt12}): a "
    "template, session or parameter set it was not recorded with; record it with `workbench "
    "record SPEC` (calls the real model), or leave it out of the model entry's `templates` or "
    "`sessions`"
)
"""Text of the `CacheMiss` a replay-only cache raises (``prompt12``: first 12 hex digits of the
prompt hash, which is stored in the ``prompt_hash`` column of recordings)."""

CacheMode = Literal["rw", "replay", "off"]
CACHE_MODES: tuple[str, ...] = ("rw", "replay", "off")


class CacheStep:
    """The pipeline's cache step (see the module docstring).

    Args:
        cache: The store.
        mode: ``"rw"``, ``"replay"`` or ``"off"``.

    Raises:
        ConfigError: unknown `mode`.
    """

    kind: ClassVar[str] = "cache"

    def __init__(self, cache: ResponseCache, mode: CacheMode = "rw") -> None:
        if mode not in CACHE_MODES:
            raise ConfigError(f"unknown cache mode {mode!r}; use one of {', '.join(CACHE_MODES)}")
        self.cache = cache
        self.mode = mode

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Answer from the recording when there is one, else per the mode.

        Raises:
            CacheMiss: replay-only mode and no recording for this prompt.
            ContextLengthExceeded: the recording holds the real model's refusal.
        """
        if self.mode == "off":
            return await proceed(call)
        # SQLite calls run inline: they take tens of microseconds, far less than a thread hop.
        key = cache_key(call.identity, call.system, call.messages)
        found = self.cache.get(key, count_hit=self.mode == "rw")
        if isinstance(found, Refusal):
            raise ContextLengthExceeded(found.message, model=call.model)
        if found is not None:
            call.cache_hit = True
            return found
        phash = call.prompt_hash()
        if self.mode == "replay":
            raise CacheMiss(CACHE_MISS_MESSAGE.format(model=call.model, prompt12=phash[:12]),
                            model=call.model)
        started = time.perf_counter()
        try:
            message, usage = await proceed(call)
        except ContextLengthExceeded as exc:
            # The real model's own window: record it so the replayed ladder takes the same steps.
            self.cache.put_refusal(key, model=call.model, prompt_sha256=phash, error=str(exc))
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        self.cache.put(key, model=call.model, prompt_sha256=phash, message=message, usage=usage,
                       latency_ms=latency_ms)
        call.cache_hit = False
        return message, usage


class CachedModel(ModelPipeline):
    """A model whose calls are served from a `ResponseCache` (a pipeline of one cache step,
    merged into any pipeline it is composed with).

    Args:
        inner: The wrapped model.
        cache: The store.
        mode: ``"rw"``, ``"replay"`` or ``"off"``.

    Raises:
        ConfigError: unknown `mode`.
    """

    def __init__(self, inner: CompactionModel, cache: ResponseCache,
                 mode: CacheMode = "rw") -> None:
        super().__init__(inner, [CacheStep(cache, mode)])
        self.cache = cache
        self.mode = mode
