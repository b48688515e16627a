"""Where a provider error came from: the host it went to and the HTTP status, or why no
response came at all; never a URL's user-info or query, which may hold keys."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

__all__ = ["UNKNOWN_HOST", "host_of", "status_of", "where"]


def status_of(exc: BaseException) -> int | None:
    """The HTTP status litellm's exception carries, or None."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


# litellm gives the exceptions it builds itself a request to its own site: not where the call went.
_PLACEHOLDER_HOSTS = frozenset({"litellm.ai", "www.litellm.ai"})
UNKNOWN_HOST = "the provider's default host"


def host_of(exc: BaseException, api_base: str | None) -> str | None:
    """``host[:port]`` the call went to: `api_base`'s, else the request's (litellm fills in
    the provider's default URL). Only host and port: a URL's user-info or query may hold keys."""
    url: object = api_base
    if not url:
        request = getattr(exc, "request", None)
        url = str(getattr(request, "url", "") or "") or None
    if not url:
        return None
    try:
        parts = urlsplit(str(url) if "://" in str(url) else f"//{url}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or host in _PLACEHOLDER_HOSTS:
        return None
    return f"{host}:{port}" if port else host


def _no_response(exc: BaseException) -> str | None:
    """Why no HTTP response came at all (the status litellm reports is then its own 500), or
    None when the server answered. Read from the exceptions the call was raised from."""
    seen: set[int] = set()
    current: BaseException | None = exc
    found = None
    while current is not None and id(current) not in seen and len(seen) < 12:
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return "no response: the host name did not resolve"
        if isinstance(current, ConnectionRefusedError):
            return "no response: connection refused"
        if isinstance(current, ConnectionError) or type(current).__name__ in (
                "APIConnectionError", "ConnectError", "ClientConnectorError"):
            found = "no response: the connection failed"
        current = current.__cause__ or current.__context__
    return found


def where(exc: BaseException, api_base: str | None = None) -> str:
    """``host 127.0.0.1:8080, HTTP 503``: the host an error came from and its status (or why
    there was no response), for error messages.

    Args:
        exc: The exception litellm raised.
        api_base: The call's ``api_base`` parameter, when it had one.
    """
    host = host_of(exc, api_base)
    failure = _no_response(exc)
    status = status_of(exc)
    what = failure or (f"HTTP {status}" if status is not None else "no HTTP status")
    return f"{'host ' + host if host else UNKNOWN_HOST}, {what}"
