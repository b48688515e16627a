"""Keys of recorded answers: canonical JSON, a prompt's hash, and the response-cache key.

The cache key is a sha256 over canonical JSON of everything that changes the answer: the model
identity (``cache_identity()``: model id, base URL, generation parameters), the system prompt,
the request messages (Goose JSON without the volatile ``created`` and ``id``) and `KEY_VERSION`.
It never holds an API key, a timeout or a retry setting; those are stripped from identities
even if a model reports them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

from workbench._json_types import JSONObject
from workbench._memo import memo
from workbench.messages import Message

__all__ = ["KEY_VERSION", "cache_key", "canonical_json", "messages_json", "prompt_hash"]

KEY_VERSION = 1
"""Bump when the key recipe changes; old recordings then simply miss."""

VOLATILE_MESSAGE_KEYS = ("created", "id")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=str)
"""One encoder for every key (``json.dumps`` with options would build one per call)."""


def canonical_json(value: object) -> str:
    """Deterministic JSON: sorted keys, no spaces, non-ASCII kept."""
    return _CANONICAL.encode(value)


def _message_for_key(message: Message) -> JSONObject:
    data = message.to_goose()
    for key in VOLATILE_MESSAGE_KEYS:
        data.pop(key, None)
    return data


def prompt_hash(system: str, messages: Sequence[Message]) -> str:
    """sha256 hex of the prompt alone (system + messages), whatever the model.

    The digest of canonical JSON ``{"messages": [...], "system": ...}``. A rendered prompt
    (`workbench.tokens.PromptText`) keeps its digests while it lives, so the cell's record
    step, a recorded count and the cache key hash its text once.
    """
    request = messages_json(messages)
    return _remembered(system, ("prompt", request), lambda: _prompt_digest(system, request))


def cache_key(identity: object, system: str, messages: Sequence[Message]) -> str:
    """sha256 hex of the model identity, the prompt and `KEY_VERSION`.

    The digest of canonical JSON ``{"key_version", "messages", "model", "system"}`` (sorted
    keys), streamed from parts so the system prompt is encoded once per key.

    Args:
        identity: The model identity, already stripped of secrets (see `model_identity`).
        system: The system prompt.
        messages: The request messages.
    """
    identity_json, request = canonical_json(identity), messages_json(messages)
    return _remembered(system, ("key", identity_json, request),
                       lambda: _key_digest(identity_json, system, request))


def _remembered(system: str, key: tuple[str, ...], digest: Callable[[], str]) -> str:
    known = getattr(system, "known", None)  # a PromptText: its digests live with it
    if known is None:
        return str(digest())
    found = known.get(key)
    if found is None:
        found = known[key] = digest()
    return str(found)


def messages_json(messages: Sequence[Message]) -> str:
    """The request messages as canonical JSON (Goose JSON without ``created`` and ``id``), item
    by item: each message's JSON is built once while it lives (the run memo's ``key_json``)."""
    get = memo().key_json.get
    return "[" + ",".join(get(m, None, _message_json, m) for m in messages) + "]"


def _message_json(message: Message) -> str:
    return canonical_json(_message_for_key(message))


def _system_json(system: str) -> bytes:
    """The system prompt as a canonical JSON string, UTF-8 encoded (a `PromptText` is escaped
    as it is, with no plain copy made first)."""
    return canonical_json(system).encode()


def _prompt_digest(system: str, messages_json: str) -> str:
    digest = hashlib.sha256(b'{"messages":')
    digest.update(messages_json.encode())
    digest.update(b',"system":')
    digest.update(_system_json(system))
    digest.update(b"}")
    return digest.hexdigest()


def _key_digest(identity_json: str, system: str, messages_json: str) -> str:
    digest = hashlib.sha256(f'{{"key_version":{canonical_json(KEY_VERSION)},"messages":'.encode())
    digest.update(messages_json.encode())
    digest.update(b',"model":')
    digest.update(identity_json.encode())
    digest.update(b',"system":')
    digest.update(_system_json(system))
    digest.update(b"}")
    return digest.hexdigest()
