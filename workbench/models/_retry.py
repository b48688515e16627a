"""Retry model calls that may succeed later: 429s, timeouts and transient 5xx/connection errors.

Backoff is exponential with jitter, capped by ``max_delay``; a ``Retry-After`` the provider sent
(kept on the mapped error as ``retry_after``) replaces the computed delay, still capped. Credential
and bad-request errors are never retried: another attempt cannot fix them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from workbench.errors import ConfigError, ModelCallError, ModelTimeout, RateLimited
from workbench.models._errors_map import TransientModelError

__all__ = ["RETRYABLE", "RetryPolicy", "call_with_retries"]

T = TypeVar("T")

RETRYABLE: tuple[type[ModelCallError], ...] = (RateLimited, ModelTimeout, TransientModelError)
"""Error classes worth another attempt."""

Sleep = Callable[[float], Awaitable[object]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a model call.

    Attributes:
        max_attempts: Total attempts including the first (1 disables retries).
        base_delay: Delay in seconds before the second attempt; doubles after each failure.
        max_delay: Upper bound on any single wait, including a provider's Retry-After.
        jitter: Random extra wait as a fraction of the delay (0.5 adds up to 50 %).
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0 or self.jitter < 0:
            raise ConfigError("RetryPolicy delays and jitter must not be negative")

    def delay(self, failures: int, retry_after: float | None = None,
              rng: random.Random | None = None) -> float:
        """Seconds to wait after the `failures`-th failed attempt (1-based).

        A provider's `retry_after` wins over the computed backoff (no jitter added: the
        provider named the moment); both are capped by `max_delay`.
        """
        if retry_after is not None:
            return min(self.max_delay, max(0.0, retry_after))
        backoff = self.base_delay * (2 ** (failures - 1))
        backoff += backoff * self.jitter * (rng or random).random()
        return min(self.max_delay, backoff)


def _give_up(last: ModelCallError, attempts: int, model: str) -> ModelCallError:
    """Same class as the last error, with a message that says retries ran out."""
    err = type(last)(f"gave up after {attempts} attempts: {last}", last.model or model)
    for name in ("retry_after", "status_code"):
        if hasattr(last, name):
            setattr(err, name, getattr(last, name))
    err.attempts = attempts  # type: ignore[attr-defined]
    return err


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    model: str,
    *,
    sleep: Sleep | None = None,
    on_retry: Callable[[int, ModelCallError, float], None] | None = None,
) -> T:
    """Await `fn()` until it succeeds, retrying retryable `ModelCallError`s under `policy`.

    Args:
        fn: A zero-argument coroutine factory (a fresh coroutine per attempt).
        policy: Attempt budget and backoff.
        model: The model id named in the final error.
        sleep: Async sleep function (tests inject a fake that records waits).
        on_retry: Called as ``on_retry(failed_attempt, error, wait_seconds)`` before each wait.

    Returns:
        What `fn` returned on the first successful attempt.

    Raises:
        ModelCallError: a non-retryable error at once; a retryable one, re-raised as the same
            class with "gave up after N attempts: ..." once the budget is spent (``from`` the last).
    """
    do_sleep = sleep or asyncio.sleep
    attempt = 0
    while True:
        attempt += 1
        try:
            return await fn()
        except RETRYABLE as exc:
            if attempt >= policy.max_attempts:
                if policy.max_attempts == 1:
                    raise
                raise _give_up(exc, attempt, model) from exc
            wait = policy.delay(attempt, getattr(exc, "retry_after", None))
            if on_retry is not None:
                on_retry(attempt, exc, wait)
            await do_sleep(wait)
