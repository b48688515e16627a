"""Every form of every secret: a key longer than any bound, a proxy's ``user:password``, a
credentials table nested in ``extra_body``, header and query values, echoed back by the provider
URL-encoded, JSON-escaped, as hex and as base64, land in no byte the workbench writes or prints,
and the stored spec stays valid JSON.

One real run (``workbench run`` and ``workbench report`` subprocesses against the echoing
127.0.0.1 server, through an HTTP proxy that is the same server) is shared by the end-to-end
tests; each checks one measured leak on every written file and the captured output.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import string
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import ROOT
from tests.hardening._forms import all_bytes, encoded_forms, leaks, toml_value
from tests.hardening._provider_server import ProviderServer
from tests.hardening._sessions import write_session
from workbench._redact import MASK, redact, redact_obj, register_secret
from workbench.harness.results._results import read_cell_text


def _token(prefix: str, length: int) -> str:
    """A random value with the characters encodings change (``/``, ``+``, ``=``, ``-``)."""
    alphabet = string.ascii_letters + string.digits + "/+=-"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


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


@dataclass
class Run:
    """What the shared run wrote and printed, and the secrets it was given."""

    secrets: dict[str, str]
    written: dict[str, bytes]
    db: Path
    server: ProviderServer

    def leaks(self, names: list[str], families: tuple[str, ...]) -> list[str]:
        planted = [self.secrets[name] for name in names]
        return [f"{hit} in {where}" for where, data in self.written.items()
                for hit in leaks(data, planted, families)]


@pytest.fixture(scope="module")
def echoed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """One run whose provider echoes every credential in every encoding."""
    proxy_user = "pu" + secrets.token_hex(6)
    planted = {
        "long_key": _token("Lk-", 5000),           # longer than the old 4,096-character bound
        "key": _token("Zk-", 24),
        "header": _token("hd/", 20),               # X-Custom-Auth
        "query": _token("q/", 20),                 # ?key=..., URL-encoded in api_base
        "client_id": _token("cid-", 16),           # extra_body.credentials ...
        "private": _token("pk/", 24),
        "scope": _token("scp-", 12),               # ... nested in a list
        "proxy_user": proxy_user,                  # HTTP_PROXY=http://user:password@...
        "proxy_pass": _token("px/", 16) + "@:",
    }
    planted["proxy_userinfo"] = f"{proxy_user}:{planted['proxy_pass']}"
    server = ProviderServer().start()
    server.echo_forms = True       # every credential, in every encoding, in every answer
    server.echo_in_reply = True    # ... into the 200 summaries too (summaries, raw, cache)
    server.unauthorized = {"rejects"}
    folder = tmp_path_factory.mktemp("forms")
    inputs, out, cache = folder / "inputs", folder / "run", folder / "cache"
    inputs.mkdir()
    for sid in ("s1", "s2"):
        write_session(inputs, sid)
    shared = {"api_base": server.base(query="key=" + quote(planted["query"], safe="")),
              "extra_headers": {"X-Custom-Auth": planted["header"]},
              "extra_body": {"credentials": {"client_id": planted["client_id"],
                                             "private_key": planted["private"],
                                             "scopes": [planted["scope"]]}}}
    models = [{"model": "cached:openai/echoes", "params": {**shared, "api_key": planted["key"],
                                                          "temperature": 0}},
              {"model": "openai/rejects", "params": {**shared, "api_key": planted["long_key"]}}]
    spec = inputs / "spec.toml"
    spec.write_text("\n".join([
        'name = "forms"', 'sessions = ["s*.json"]', "models = " + toml_value(models),
        "[cache]", f'path = "{cache / "responses.db"}"']), encoding="utf-8")
    proxy = f"http://{proxy_user}:{quote(planted['proxy_pass'], safe='')}@127.0.0.1:{server.port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HTTP_PROXY": proxy, "http_proxy": proxy,
           "NO_PROXY": "", "no_proxy": ""}
    env.pop("OPENAI_API_KEY", None)
    try:
        run = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                              str(out), "--no-progress"], cwd=ROOT, env=env,
                             capture_output=True, timeout=300)
        report = subprocess.run([sys.executable, "-m", "workbench", "report", str(out)],
                                cwd=ROOT, env=env, capture_output=True, timeout=300)
    finally:
        server.stop()
    assert run.returncode == 3, run.stderr.decode()[-3000:]  # the 401s are infrastructure errors
    assert report.returncode == 0, report.stderr.decode()[-3000:]
    written = {str(p): data for p, data in all_bytes(out, cache).items()}
    assert {"spec.toml", "results.sqlite", "report.html", "cells.csv"} <= {
        Path(p).name for p in written}
    written |= {"run stdout": run.stdout, "run stderr": run.stderr,
                "report stdout": report.stdout, "report stderr": report.stderr}
    yield Run(planted, written, out / "results.sqlite", server)


ECHOED = ["key", "header", "query", "client_id", "private", "scope", "proxy_user", "proxy_pass",
          "proxy_userinfo"]


def test_every_secret_really_went_out_and_came_back_in_every_form(echoed: Run) -> None:
    requests = echoed.server.requests
    sent = [r for r in requests if r["model"] == "echoes"]
    assert sent and sent[0]["headers"]["authorization"] == f"Bearer {echoed.secrets['key']}"
    assert sent[0]["headers"]["x-custom-auth"] == echoed.secrets["header"]
    assert sent[0]["headers"]["proxy-authorization"].startswith("Basic ")  # through the proxy
    assert any(r["headers"]["authorization"] == f"Bearer {echoed.secrets['long_key']}"
               for r in requests)
    db = sqlite3.connect(echoed.db)
    statuses = sorted(db.execute("SELECT model LIKE 'openai/rejects%', status FROM cells"))
    assert statuses == [(0, "ok"), (0, "ok"), (1, "error"), (1, "error")]
    cell = next(r[0] for r in db.execute("SELECT cell_id FROM cells WHERE status = 'ok'"))
    text = read_cell_text(echoed.db.parent, cell, "raw.txt") or ""
    assert text.count(MASK) >= 4 * len(encoded_forms(echoed.secrets["key"]))  # masked echoes


def test_no_url_encoded_echo_reaches_a_file_or_the_output(echoed: Run) -> None:
    assert echoed.leaks(ECHOED, ("url",)) == []


def test_no_json_escaped_echo_reaches_a_file_or_the_output(echoed: Run) -> None:
    assert echoed.leaks(ECHOED, ("json",)) == []


def test_no_hex_echo_reaches_a_file_or_the_output(echoed: Run) -> None:
    assert echoed.leaks(ECHOED, ("hex",)) == []


def test_a_key_longer_than_the_old_bound_is_masked_in_every_form(echoed: Run) -> None:
    assert echoed.leaks(["long_key"], ("raw", "url", "json", "hex", "base64")) == []


def test_a_proxy_user_password_is_masked_in_every_form(echoed: Run) -> None:
    assert echoed.leaks(["proxy_user", "proxy_pass", "proxy_userinfo"],
                        ("raw", "url", "json", "hex", "base64")) == []


def test_a_credentials_table_nested_in_extra_body_is_masked_in_every_form(echoed: Run) -> None:
    assert echoed.leaks(["client_id", "private", "scope"],
                        ("raw", "url", "json", "hex", "base64")) == []


def test_the_stored_spec_and_json_columns_stay_valid_json(echoed: Run) -> None:
    db = sqlite3.connect(echoed.db)
    (spec_json,) = db.execute("SELECT spec_json FROM runs").fetchone()
    stored = json.loads(spec_json)  # valid JSON, the nested table masked leaf by leaf
    assert stored["models"][0]["params"]["extra_body"] == {"credentials": {
        "client_id": MASK, "private_key": MASK, "scopes": [MASK]}}
    assert stored["models"][0]["params"]["extra_headers"] == {"X-Custom-Auth": MASK}
    for (metrics,) in db.execute("SELECT metrics_json FROM cells WHERE metrics_json IS NOT NULL"):
        json.loads(metrics)
