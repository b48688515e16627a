"""Fixtures of the hardening tests: a local provider stand-in on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hardening._provider_server import ProviderServer


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A running `ProviderServer`, stopped after the test."""
    srv = ProviderServer().start()
    yield srv
    srv.stop()
