"""The encodings a secret can take on its way back from a provider, and a byte scan for them.

A careless proxy or a debugging endpoint may echo a credential in any of these forms: raw,
URL-encoded (partly or byte by byte), JSON-escaped (``\\u002d`` for ``-``, ``\\/`` for ``/``,
or every character as ``\\uXXXX``), hex, and base64 (alone or inside other data, at any of the
three alignments). `ProviderServer` echoes them with ``echo_forms``; `leaks` finds them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

PREFIX_CHARS = 12
"""A scan also looks for the first 12 characters of each secret (a cut-off echo leaks a part)."""


def encoded_forms(value: str) -> list[str]:
    """`value` in every text encoding a provider might echo it in."""
    raw = value.encode()
    return list(dict.fromkeys([
        value,
        quote(value, safe=""),
        quote_plus(value),
        "".join(f"%{b:02X}" for b in raw),
        "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value),
        json.dumps(value)[1:-1].replace("/", "\\/"),
        "".join(f"\\u{ord(c):04X}" for c in value),
        raw.hex(),
        raw.hex().upper(),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
    ]))


def scan_forms(value: str) -> list[bytes]:
    """What a byte scan must not find: every encoded form, base64 inside other data at every
    alignment, and the first `PREFIX_CHARS` characters of the raw value."""
    raw = value.encode()
    found = [form.encode() for form in encoded_forms(value)]
    for prefix in (b"u", b"us", b"user:", b"X-Custom-Auth: "):
        found.append(base64.b64encode(prefix + raw + b"\n"))
        found.append(base64.urlsafe_b64encode(prefix + raw))
    found.append(raw[:PREFIX_CHARS])
    return found


def leaks(data: bytes, planted: list[str]) -> list[str]:
    """Which planted secrets `data` holds, and in which form."""
    hits = []
    for secret in planted:
        for form in scan_forms(secret):
            if form in data:
                hits.append(f"{secret[:16]}... as {form[:24]!r}")
    return hits


def all_bytes(*folders: Path) -> dict[Path, bytes]:
    """Every file under `folders` (WAL and journal files included), read whole."""
    return {p: p.read_bytes() for folder in folders if folder.exists()
            for p in folder.rglob("*") if p.is_file()}
