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


FAMILIES = ("raw", "url", "json", "hex", "base64")
"""The encodings, by family, as `forms_by_family` names them."""


def forms_by_family(value: str) -> dict[str, list[str]]:
    """`value` in every text encoding a provider might echo it in, by family."""
    raw = value.encode()
    return {
        "raw": [value],
        "url": list(dict.fromkeys([quote(value, safe=""), quote_plus(value),
                                   "".join(f"%{b:02X}" for b in raw)])),
        "json": list(dict.fromkeys([
            "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value),
            json.dumps(value)[1:-1].replace("/", "\\/"),
            "".join(f"\\u{ord(c):04X}" for c in value)])),
        "hex": [raw.hex(), raw.hex().upper()],
        "base64": [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()],
    }


def encoded_forms(value: str) -> list[str]:
    """`value` in every text encoding a provider might echo it in."""
    return list(dict.fromkeys(f for forms in forms_by_family(value).values() for f in forms))


def scan_forms(value: str, families: tuple[str, ...] = FAMILIES) -> list[bytes]:
    """What a byte scan must not find: the encoded forms of `families`; with ``base64``, the
    value inside other data at every alignment too; with ``raw``, its first `PREFIX_CHARS`
    characters (a cut-off echo leaks a part)."""
    raw = value.encode()
    by_family = forms_by_family(value)
    found = [form.encode() for family in families for form in by_family[family]]
    if "base64" in families:
        for prefix in (b"u", b"us", b"user:", b"X-Custom-Auth: "):
            found.append(base64.b64encode(prefix + raw + b"\n"))
            found.append(base64.urlsafe_b64encode(prefix + raw))
    if "raw" in families:
        found.append(raw[:PREFIX_CHARS])
    return list(dict.fromkeys(found))


def leaks(data: bytes, planted: list[str], families: tuple[str, ...] = FAMILIES) -> list[str]:
    """Which planted secrets `data` holds, and in which form."""
    hits = []
    for secret in planted:
        for form in scan_forms(secret, families):
            if form in data:
                hits.append(f"{secret[:16]}... as {form[:24]!r}")
    return hits


def toml_value(value: object) -> str:
    """`value` as a TOML inline value (tables inline, strings JSON-quoted), for writing specs."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}"
                                for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def all_bytes(*folders: Path) -> dict[Path, bytes]:
    """Every file under `folders` (WAL and journal files included), read whole."""
    return {p: p.read_bytes() for folder in folders if folder.exists()
            for p in folder.rglob("*") if p.is_file()}
