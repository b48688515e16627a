"""Secrets by position: a header value whatever its name, an ``api_base`` query value, and the
base64 forms of both, land in no byte the workbench writes, even when the provider echoes them."""

from __future__ import annotations

import base64
import json
import os
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT
from tests.hardening._provider_server import ProviderServer
from workbench._redact import MASK, base64_forms, mask_query, public_params, redact, redact_obj
from workbench.harness import Experiment
from workbench.harness.results._results import read_cell_text
from workbench.messages import Message
from workbench.sessions import Session


def _all_bytes(*folders: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for folder in folders for p in folder.rglob("*") if p.is_file()}


def _encodings(value: str) -> list[bytes]:
    """The value and every base64 text a scan must not find: alone and inside other data."""
    raw = value.encode()
    found = [raw]
    for prefix in (b"", b"u", b"us", b"user:", b"X-Custom-Auth: "):
        encoded = base64.b64encode(prefix + raw + b"\n")
        found.append(encoded)
        found.append(base64.urlsafe_b64encode(prefix + raw))
    return found


def _leaks(data: bytes, planted: list[str]) -> list[str]:
    hits = []
    for secret in planted:
        for form in _encodings(secret):
            if form in data:
                hits.append(f"{secret} as {form[:24]!r}...")
    return hits


def test_header_values_and_query_values_are_masked_by_position_in_labels_and_objects() -> None:
    params = {"api_base": "https://gw.example/v1?key=AIzaQ123456&alt=sse",
              "extra_headers": {"X-Custom-Auth": "custom-000111", "Accept": "application/json"},
              "temperature": 0}
    assert public_params(params) == {"api_base": "https://gw.example/v1?key=***&alt=***",
                                     "temperature": 0}
    assert redact_obj(params) == {"api_base": "https://gw.example/v1?key=***&alt=***",
                                  "extra_headers": {"X-Custom-Auth": MASK, "Accept": MASK},
                                  "temperature": 0}
    assert mask_query("http://h/v1?a=1&b=&c#frag") == "http://h/v1?a=***&b=&c#frag"
    # 'sse' is a secret by position, too short to mask in free text: accepted only when asked.
    label = Experiment.from_dict({"sessions": ["x.json"], "allow_short_secrets": True, "models": [
        {"model": "openai/m", "params": params}]}).models[0].label
    assert label == "openai/m[api_base=https://gw.example/v1?key=***&alt=***,temperature=0]"


def test_base64_forms_catch_a_value_at_every_alignment_inside_encoded_data() -> None:
    value = "hunter2-" + secrets.token_hex(6)
    forms = base64_forms(value)
    for prefix in (b"", b"a", b"ab", b"abc", b"user:", b"Authorization: Basic "):
        for suffix in (b"", b"x", b"\n\n"):
            blob = base64.b64encode(prefix + value.encode() + suffix).decode()
            assert any(form in blob for form in forms), (prefix, suffix)
            assert any(form in base64.urlsafe_b64encode(prefix + value.encode()).decode()
                       for form in forms)
    from workbench._redact import register_secret

    register_secret(value)
    blob = base64.b64encode(b"debug dump: " + value.encode() + b" end").decode()
    assert blob not in redact(f"proxy said {blob}")
    assert MASK in redact(f"proxy said {blob}")


def _sessions(folder: Path) -> None:
    for sid in ("s1", "s2"):
        messages = [Message.user(f"fix the bug in app.py ({sid})"),
                    Message.assistant("looking").with_tool_request(
                        "t0", "shell", {"command": "cat app.py"}),
                    Message.user().with_tool_response("t0", "print(1)"),
                    Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")


def _toml_models(models: list[dict[str, object]]) -> str:
    return "models = " + json.dumps(models).replace('": ', '" = ').replace('{"', '{ "')


def _stored_cells(db: Path) -> int:
    if not db.is_file():
        return 0
    try:
        conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM cells").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def test_an_echoing_provider_leaks_no_header_query_or_base64_byte_into_any_output(
        tmp_path: Path, server: ProviderServer) -> None:
    header_secret = "hdr" + secrets.token_hex(12)     # X-Custom-Auth: a name that says nothing
    other_header = "plain" + secrets.token_hex(10)    # X-Tenant: not even a hint of a secret
    query_secret = "AIza" + secrets.token_hex(14)     # ?key=... as Google-style endpoints take it
    query_other = "proj" + secrets.token_hex(8)       # &project=...
    planted = [header_secret, other_header, query_secret, query_other]
    server.echo_everything = True   # every header, the path and base64 forms, in every answer
    server.echo_in_reply = True     # ... into the 200 summaries too (summaries, raw, cache)
    server.unauthorized = {"rejects"}
    server.held = {"held"}          # keeps the run alive while the cache's WAL is scanned

    inputs, out, cache = tmp_path / "inputs", tmp_path / "run", tmp_path / "cache"
    inputs.mkdir()
    _sessions(inputs)
    headers = {"X-Custom-Auth": header_secret, "X-Tenant": other_header}
    query = f"key={query_secret}&project={query_other}"
    models = [
        {"model": "cached:openai/echoes", "params": {
            "api_base": server.base(query=query), "api_key": "sk-" + "k" * 30,
            "extra_headers": headers, "temperature": 0}},
        {"model": "openai/rejects", "params": {"api_base": server.base(query=query),
                                               "api_key": "sk-" + "r" * 30,
                                               "extra_headers": headers}},
        {"model": "cached:openai/held", "params": {"api_base": server.base(query=query),
                                                   "api_key": "sk-" + "h" * 30,
                                                   "extra_headers": headers}},
    ]
    spec = inputs / "spec.toml"
    spec.write_text("\n".join(['name = "by-position"', 'sessions = ["s*.json"]',
                               _toml_models(models), "[cache]",
                               f'path = "{cache / "responses.db"}"']), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OPENAI_API_KEY", None)
    run = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                            str(out), "--no-progress"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while _stored_cells(out / "results.sqlite") < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _stored_cells(out / "results.sqlite") == 4  # echoes and rejects; held waits
        live = _all_bytes(out, cache)
        assert any(p.name.endswith("-wal") for p in live), sorted(p.name for p in live)
        for where, data in live.items():
            assert not _leaks(data, planted), f"{_leaks(data, planted)} in {where} (live run)"
    finally:
        server.release.set()
        stdout, stderr = run.communicate(timeout=300)
    report = subprocess.run([sys.executable, "-m", "workbench", "report", str(out)], cwd=ROOT,
                            env=env, capture_output=True, timeout=300)
    assert run.returncode == 3, stderr.decode()  # the 401s are infrastructure errors
    assert report.returncode == 0, report.stderr.decode()

    # The secrets really went out and came back: a leak would have been seen.
    sent = [r for r in server.requests if r["model"] == "echoes"]
    assert sent and sent[0]["headers"]["x-custom-auth"] == header_secret
    assert query_secret in sent[0]["path"]

    files = _all_bytes(out, cache)
    assert {"spec.toml", "results.sqlite", "report.html", "cells.csv"} <= {p.name for p in files}
    outputs = {"run stdout": stdout, "run stderr": stderr, "report stdout": report.stdout,
               "report stderr": report.stderr}
    for where, data in [*((str(p), b) for p, b in files.items()), *outputs.items()]:
        assert not _leaks(data, planted), f"{_leaks(data, planted)} in {where}"

    db = sqlite3.connect(out / "results.sqlite")
    labels = sorted({r[0] for r in db.execute("SELECT model FROM cells")})
    base = f"api_base=http://127.0.0.1:{server.port}/v1?key=***&project=***"
    assert labels == [f"openai/echoes[{base},temperature=0]", f"openai/held[{base}]",
                      f"openai/rejects[{base}]"]
    assert sorted(db.execute("SELECT model LIKE 'openai/rejects%', status FROM cells")) == [
        (0, "ok")] * 4 + [(1, "error")] * 2
    cell = next(r[0] for r in db.execute("SELECT cell_id FROM cells WHERE status = 'ok'"))
    text = read_cell_text(out, cell, "raw.txt") or ""
    assert "x-custom-auth: ***" in text.lower()  # the echo was there, and masked
