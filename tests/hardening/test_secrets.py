"""No secret is written anywhere: store, spec copy, labels, cache, reports, logs, output."""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.hardening._provider_server import ProviderServer
from workbench._redact import (
    MASK,
    install_log_redaction,
    is_secret_name,
    public_params,
    redact,
    redact_obj,
    register_secret,
)
from workbench.harness import Experiment
from workbench.messages import Message
from workbench.sessions import Session


def _all_bytes(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_secret_names_are_recognised_and_plural_token_counts_are_not() -> None:
    for name in ("api_key", "Authorization", "x-api-key", "OPENAI_API_KEY", "HF_TOKEN",
                 "db_password", "client_secret", "AWS_SECRET_ACCESS_KEY", "token", "Cookie"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "input_tokens", "key", "cache_key", "api_base", "PWD", "model"):
        assert not is_secret_name(name), name


def test_redact_masks_user_info_bearer_tokens_assignments_and_provider_keys() -> None:
    text = ('curl "https://bob:hunter2@host.example/v1?api_key=abc123&x=1" '
            '-H "Authorization: Bearer zzzzzzzzzz" password=pw1 {"token": "t0k", "max_tokens": 5} '
            'key: stays sk-abcdefghijklmnopqrstu')
    assert redact(text) == (
        'curl "https://***@host.example/v1?api_key=***&x=1" -H "Authorization: Bearer ***" '
        'password=*** {"token": "***", "max_tokens": 5} key: stays ***')


def test_values_of_secret_env_vars_and_registered_values_are_masked_anywhere(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env_value = "env-" + secrets.token_hex(8)
    monkeypatch.setenv("ACME_SERVICE_TOKEN", env_value)
    monkeypatch.setenv("ACME_SHORT_TOKEN", "abc")  # too short to be treated as a secret
    registered = "reg-" + secrets.token_hex(8)
    register_secret(f"Bearer {registered}")
    text = f"echo {env_value}; got {registered}abc; abc stays"
    assert redact(text) == f"echo {MASK}; got {MASK}abc; abc stays"


def test_redact_obj_masks_secret_keys_at_any_depth_and_public_params_drop_them() -> None:
    params = {"api_key": "k", "temperature": 0,
              "extra_headers": {"X-Api-Key": "h", "Accept": "json"},
              "api_base": "http://u:p@host/v1"}
    # Every header value is a secret by position, whatever the header is called.
    assert redact_obj(params) == {"api_key": MASK, "temperature": 0,
                                  "extra_headers": {"X-Api-Key": MASK, "Accept": MASK},
                                  "api_base": "http://***@host/v1"}
    assert public_params(params) == {"temperature": 0, "api_base": "http://host/v1"}


def test_model_labels_and_the_spec_copy_never_carry_secret_params() -> None:
    experiment = Experiment.from_dict({
        "sessions": ["x.json"],
        "models": [{"model": "cached:openai/m", "params": {
            "api_key": "sk-secret-0000000000", "temperature": 0,
            "api_base": "http://alice:pw-123456@h/v1",
            "extra_headers": {"Authorization": "Bearer hdr-123456789"}}}]})
    assert experiment.models[0].label == "openai/m[api_base=http://h/v1,temperature=0]"
    text = experiment.to_toml()
    for secret in ("sk-secret-0000000000", "pw-123456", "hdr-123456789", "alice",
                   "Authorization", "api_key"):
        assert secret not in text
    assert tomllib.loads(text)["models"][0]["params"] == {"temperature": 0,
                                                          "api_base": "http://h/v1"}
    # The copy is still a runnable spec with the same model label (hence the same cell ids).
    copy = Experiment.from_dict(tomllib.loads(text))
    assert copy.models[0].label == experiment.models[0].label


def test_log_records_are_redacted_by_the_handlers_they_reach(
        caplog: pytest.LogCaptureFixture) -> None:
    secret = "logged-" + secrets.token_hex(8)
    register_secret(secret)
    install_log_redaction()
    with caplog.at_level(logging.WARNING, logger="workbench.harness"):
        logging.getLogger("workbench.harness").warning("provider said %s", secret)
    assert caplog.messages == [f"provider said {MASK}"]


def _write_sessions(folder: Path, planted: str) -> None:
    for sid in ("s1", "s2"):
        messages = [Message.user(f"fix the bug in app.py ({sid}); the deploy token is {planted}"),
                    Message.assistant("looking").with_tool_request(
                        "t0", "shell", {"command": "cat app.py"}),
                    Message.user().with_tool_response("t0", "print(1)"),
                    Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")


def test_a_key_echoed_by_a_401_lands_in_no_byte_of_run_folder_cache_reports_or_output(
        tmp_path: Path, server: ProviderServer) -> None:
    key_env = "envkey" + secrets.token_hex(12)      # OPENAI_API_KEY, used by two models
    key_param = "paramkey" + secrets.token_hex(12)  # params.api_key
    key_header = "hdrkey" + secrets.token_hex(12)   # extra_headers X-Api-Key
    url_pass = "urlpw" + secrets.token_hex(8)       # api_base user-info
    planted = "plant" + secrets.token_hex(10)       # ACME_DEPLOY_TOKEN, inside the sessions
    planted_all = [key_env, key_param, key_header, url_pass, planted]
    server.unauthorized = {"leaky", "env-only"}
    server.echo_in_reply = True  # the 200 answers echo the bearer token into the summary

    inputs, out = tmp_path / "inputs", tmp_path / "run"
    inputs.mkdir()
    _write_sessions(inputs, planted)
    models = [
        {"model": "openai/leaky", "params": {
            "api_key": key_param, "api_base": server.base(),
            "extra_headers": {"X-Api-Key": key_header}}},
        {"model": "openai/env-only", "params": {"api_base": server.base()}},
        {"model": "cached:openai/echo", "params": {"api_base": server.base(), "temperature": 0}},
        # The HTTP client refuses user-info next to a key header: fails at once, never sent.
        {"model": "openai/userinfo", "params": {"api_base": server.base(f"alice:{url_pass}")}},
    ]
    spec = inputs / "spec.toml"
    spec.write_text("\n".join([
        'name = "leak-test"', 'sessions = ["s*.json"]',
        "models = " + json.dumps(models).replace('": ', '" = ').replace('{"', '{ "'),
        "[cache]", f'path = "{tmp_path / "cache" / "responses.db"}"']), encoding="utf-8")
    Experiment.from_toml(spec)  # the spec itself is valid
    env = {**os.environ, "OPENAI_API_KEY": key_env, "ACME_DEPLOY_TOKEN": planted,
           "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out", str(out),
                          "--no-progress"], cwd=ROOT, env=env, capture_output=True, timeout=300)
    report = subprocess.run([sys.executable, "-m", "workbench", "report", str(out)], cwd=ROOT,
                            env=env, capture_output=True, timeout=300)
    # The 401s are infrastructure errors (a rejected key), so the run exits 3.
    assert run.returncode == 3, run.stderr.decode()
    assert report.returncode == 0, report.stderr.decode()

    # The secrets really were sent and echoed: the test would catch a leak.
    sent = " ".join(c for r in server.requests for c in r["credentials"])
    for secret in (key_env, key_param, key_header):
        assert secret in sent
    by_model: dict[str, int] = {}
    for r in server.requests:
        by_model[r["model"]] = by_model.get(r["model"], 0) + 1
    assert by_model == {"leaky": 2, "env-only": 2, "echo": 2}  # 401s are never retried

    files = _all_bytes(out) | _all_bytes(tmp_path / "cache")
    assert (out / "spec.toml") in files and (out / "report" / "cells.csv") in files
    assert any(p.name.startswith("responses.db") for p in files)
    outputs = {"run stdout": run.stdout, "run stderr": run.stderr,
               "report stdout": report.stdout, "report stderr": report.stderr}
    for where, data in [*((str(p), b) for p, b in files.items()), *outputs.items()]:
        for secret in planted_all:
            assert secret.encode() not in data, f"{secret} found in {where}"
        assert b"alice" not in data, f"URL user name found in {where}"

    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute("SELECT model, status, error_message, traceback FROM cells "
                      "ORDER BY model").fetchall()
    base = f"api_base=http://127.0.0.1:{server.port}/v1"
    assert [(m, s) for m, s, _, _ in rows] == [
        (f"openai/echo[{base},temperature=0]", "ok"), (f"openai/echo[{base},temperature=0]", "ok"),
        (f"openai/env-only[{base}]", "error"), (f"openai/env-only[{base}]", "error"),
        (f"openai/leaky[{base}]", "error"), (f"openai/leaky[{base}]", "error"),
        (f"openai/userinfo[{base}]", "error"), (f"openai/userinfo[{base}]", "error")]
    env_only_error = rows[2][2]
    assert ("credentials were missing or rejected; set OPENAI_API_KEY to a valid key (or pass "
            "api_key=...)") in env_only_error
    assert "Bearer ***" in rows[2][3]  # the echoed token was there, and masked
    assert rows[6][2] == ("openai/userinfo: api_base carries user:password@ and the client also "
                          "sends the API key header, which cannot be combined; put the "
                          "credentials in api_key or extra_headers instead")
    cache = sqlite3.connect(tmp_path / "cache" / "responses.db")
    recorded = [r[0] for r in cache.execute("SELECT text FROM responses")]
    assert len(recorded) == 2 and all(t.endswith("authorization: Bearer ***") for t in recorded)
