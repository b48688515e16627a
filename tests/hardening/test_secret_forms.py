"""Every form of every secret: a key longer than any bound, a proxy's ``user:password``, a
credentials table nested in ``extra_body``, header and query values, echoed back by the provider
URL-encoded, JSON-escaped, as hex and as base64, land in no byte the workbench writes or prints,
and the stored spec stays valid JSON."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import string
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from tests.conftest import ROOT
from tests.hardening._forms import all_bytes, encoded_forms, leaks
from tests.hardening._provider_server import ProviderServer
from workbench._redact import MASK, redact, redact_obj, register_secret
from workbench.messages import Message
from workbench.sessions import Session


def _token(prefix: str, length: int) -> str:
    """A random value with the characters encodings change (``/``, ``+``, ``=``, ``-``)."""
    alphabet = string.ascii_letters + string.digits + "/+=-"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def _sessions(folder: Path) -> None:
    for sid in ("s1", "s2"):
        messages = [Message.user(f"fix the bug in app.py ({sid})"),
                    Message.assistant("looking").with_tool_request(
                        "t0", "shell", {"command": "cat app.py"}),
                    Message.user().with_tool_response("t0", "print(1)"),
                    Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")


def toml_value(value: object) -> str:
    """`value` as a TOML inline value (tables inline, strings JSON-quoted)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def test_every_encoded_form_of_a_registered_value_is_masked() -> None:
    value = _token("fm/", 20) + "/+="
    register_secret(value)
    for form in encoded_forms(value):
        masked = redact(f'provider said "{form}" here')
        # A base64 text keeps its last character or two: they depend on the bytes after it.
        assert form not in masked and masked.startswith(f'provider said "{MASK}'), form
        assert masked.endswith('" here') and len(masked) <= len('provider said "***" here') + 2
    # Nested escaping (a JSON body inside a JSON string, a URL encoded twice) is caught too.
    twice = quote(quote(value, safe=""), safe="")
    assert redact(f"url {twice} end") == f"url {MASK} end"
    escaped = encoded_forms(value)[4].replace("\\", "\\\\")
    assert redact(f"body {escaped} end") == f"body {MASK} end"


def test_a_value_longer_than_any_old_bound_is_masked() -> None:
    value = _token("long-", 9000)
    register_secret(value)
    assert redact(f"echo {value} end") == f"echo {MASK} end"


def test_redacting_json_text_keeps_it_valid_json() -> None:
    table = {"credentials": {"client_id": "cid-000111222", "scopes": ["scope-a1b2c3"]},
             "note": 'password=ab\\"c', "temperature": 0}
    text = json.dumps({"models": [{"params": {"extra_body": table}}]})
    cleaned = redact(text)
    assert json.loads(cleaned) == {"models": [{"params": {"extra_body": {
        "credentials": {"client_id": MASK, "scopes": [MASK]}, "note": 'password=***"c',
        "temperature": 0}}}]}
    assert redact_obj(table)["credentials"] == {"client_id": MASK, "scopes": [MASK]}


def test_no_form_of_any_secret_reaches_a_file_or_the_output(tmp_path: Path,
                                                            server: ProviderServer) -> None:
    long_key = _token("Lk-", 5000)                 # longer than the old 4,096-character bound
    key = _token("Zk-", 24)
    header = _token("hd/", 20)                     # X-Custom-Auth
    query = _token("q/", 20)                       # ?key=..., URL-encoded in api_base
    client_id, private = _token("cid-", 16), _token("pk/", 24)
    scope = _token("scp-", 12)                     # extra_body.credentials, nested and in a list
    proxy_user, proxy_pass = "pu" + secrets.token_hex(6), _token("px/", 16) + "@:"
    planted = [long_key, key, header, query, client_id, private, scope, proxy_user, proxy_pass,
               f"{proxy_user}:{proxy_pass}"]
    server.echo_forms = True       # every credential, in every encoding, in every answer
    server.echo_in_reply = True    # ... into the 200 summaries too (summaries, raw, cache)
    server.unauthorized = {"rejects"}

    inputs, out, cache = tmp_path / "inputs", tmp_path / "run", tmp_path / "cache"
    inputs.mkdir()
    _sessions(inputs)
    shared = {"api_base": server.base(query="key=" + quote(query, safe="")),
              "extra_headers": {"X-Custom-Auth": header},
              "extra_body": {"credentials": {"client_id": client_id, "private_key": private,
                                             "scopes": [scope]}}}
    models = [{"model": "cached:openai/echoes", "params": {**shared, "api_key": key,
                                                          "temperature": 0}},
              {"model": "openai/rejects", "params": {**shared, "api_key": long_key}}]
    spec = inputs / "spec.toml"
    spec.write_text("\n".join([
        'name = "forms"', 'sessions = ["s*.json"]', "models = " + toml_value(models),
        "[cache]", f'path = "{cache / "responses.db"}"']), encoding="utf-8")
    proxy = f"http://{proxy_user}:{quote(proxy_pass, safe='')}@127.0.0.1:{server.port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HTTP_PROXY": proxy, "http_proxy": proxy,
           "NO_PROXY": "", "no_proxy": ""}
    env.pop("OPENAI_API_KEY", None)
    run = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out", str(out),
                          "--no-progress"], cwd=ROOT, env=env, capture_output=True, timeout=300)
    report = subprocess.run([sys.executable, "-m", "workbench", "report", str(out)], cwd=ROOT,
                            env=env, capture_output=True, timeout=300)
    assert run.returncode == 3, run.stderr.decode()[-3000:]  # the 401s are infrastructure errors
    assert report.returncode == 0, report.stderr.decode()[-3000:]

    # Every secret really went out (through the proxy) and came back in every form.
    sent = [r for r in server.requests if r["model"] == "echoes"]
    assert sent and sent[0]["headers"]["authorization"] == f"Bearer {key}"
    assert sent[0]["headers"]["proxy-authorization"].startswith("Basic ")
    assert any(r["headers"]["authorization"] == f"Bearer {long_key}" for r in server.requests)

    files = all_bytes(out, cache)
    assert {"spec.toml", "results.sqlite", "report.html", "cells.csv"} <= {p.name for p in files}
    outputs = {"run stdout": run.stdout, "run stderr": run.stderr,
               "report stdout": report.stdout, "report stderr": report.stderr}
    for where, data in [*((str(p), b) for p, b in files.items()), *outputs.items()]:
        assert not leaks(data, planted), f"{leaks(data, planted)} in {where}"

    db = sqlite3.connect(out / "results.sqlite")
    (spec_json,) = db.execute("SELECT spec_json FROM runs").fetchone()
    stored = json.loads(spec_json)  # valid JSON, the nested table masked leaf by leaf
    assert stored["models"][0]["params"]["extra_body"] == {"credentials": {
        "client_id": MASK, "private_key": MASK, "scopes": [MASK]}}
    statuses = sorted(db.execute("SELECT model LIKE 'openai/rejects%', status FROM cells"))
    assert statuses == [(0, "ok"), (0, "ok"), (1, "error"), (1, "error")]
    for (metrics,) in db.execute("SELECT metrics_json FROM cells WHERE metrics_json IS NOT NULL"):
        json.loads(metrics)
    cell = next(r[0] for r in db.execute("SELECT cell_id FROM cells WHERE status = 'ok'"))
    text = (out / "summaries" / f"{cell}.raw.txt").read_text(encoding="utf-8")
    assert text.count(MASK) >= 4 * len(encoded_forms(key))  # the echoes were there, masked
