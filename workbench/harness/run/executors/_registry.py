"""Choosing an executor by name: the registry apart from the seam, so `_base` imports no
concrete executor and each executor imports only `_base`."""

from __future__ import annotations

from typing import Unpack

from workbench.errors import ConfigError
from workbench.harness.run.executors._base import Executor
from workbench.harness.run.executors._local import LocalExecutor
from workbench.harness.run.executors._ray import RayExecutor, RayOptions

RAY_EXTRA_MESSAGE = ('the Ray executor needs the `ray` extra: pip install '
                     '"compaction-workbench[ray]"')
"""Text of the `ConfigError` raised when ``--executor ray`` is asked for without Ray installed."""

EXECUTOR_KINDS: tuple[str, ...] = ("local", "ray")


def make_executor(kind: str = "local", address: str | None = None,
                  **options: Unpack[RayOptions]) -> Executor:
    """The executor named `kind`.

    Args:
        kind: ``"local"`` (the asyncio runner in this process) or ``"ray"``.
        address: Ray only: ``None`` (start a private local instance), ``"auto"`` (join the
            cluster this machine belongs to) or ``"ray://host:port"`` (a remote cluster).
        **options: Ray only: ``cpus_per_cell``, ``max_retries``, ``init_options``.

    Raises:
        ConfigError: an unknown kind, an address for the local executor, or the Ray executor
            without the ``ray`` extra installed.
    """
    if kind == "local":
        if address is not None:
            raise ConfigError(f"--address {address!r} needs --executor ray (the local executor "
                              "runs in this process)")
        return LocalExecutor()
    if kind == "ray":
        try:
            import ray  # noqa: F401 - only to say at once when the optional extra is missing
        except ImportError:
            raise ConfigError(RAY_EXTRA_MESSAGE) from None
        return RayExecutor(address=address, **options)
    raise ConfigError(f"unknown executor {kind!r}; use one of {', '.join(EXECUTOR_KINDS)}")
