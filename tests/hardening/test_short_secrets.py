"""Secrets shorter than 6 characters: refused at load with a message that says why, unless
``allow_short_secrets = true``; then masked by position wherever the run stores them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

from tests.conftest import ROOT
from tests.hardening._forms import all_bytes, leaks, toml_value
from tests.hardening._provider_server import ProviderServer
from workbench._redact import MASK
from workbench.messages import Message
from workbench.sessions import Session

KEY, HEADER, QUERY, FIELD = "Q7#zX", "t9~Kq", "w!3Zr", "j4^Pv"  # 5 characters each


def _spec(folder: Path, server: ProviderServer, allow: bool) -> Path:
    messages = [Message.user("fix the bug in app.py"), Message.assistant("fixed it")]
    Session("s1", "goose-json", str(folder / "s1.json"), messages).write_goose_json(
        folder / "s1.json")
    params = {"api_key": KEY, "api_base": server.base(query=f"team={QUERY}"),
              "extra_headers": {"X-Team": HEADER},
              "extra_body": {"credentials": {"pin": FIELD}}, "temperature": 0}
    spec = folder / "spec.toml"
    lines = ['name = "short"', 'sessions = ["s1.json"]']
    if allow:
        lines.append("allow_short_secrets = true")
    lines.append("models = " + toml_value([{"model": "openai/short", "params": params}]))
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return spec


def _run(spec: Path, out: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                           str(out), "--no-progress"], cwd=ROOT, env=env, capture_output=True,
                          timeout=300)


def test_a_short_secret_is_refused_at_load_with_the_reason(tmp_path: Path,
                                                          server: ProviderServer) -> None:
    spec = _spec(tmp_path, server, allow=False)
    run = _run(spec, tmp_path / "run")
    assert run.returncode != 0
    message = " ".join(run.stderr.decode().split())
    assert (f"{spec}: models[0].params.api_key (5 characters), models[0].params.api_base query "
            "value 'team' (5 characters), models[0].params.extra_headers.X-Team (5 characters), "
            "models[0].params.extra_body.credentials.pin (5 characters): a secret shorter than 6 "
            "characters cannot be masked in free text (blanking so short a string everywhere "
            "would wreck the output), so a provider or proxy that echoes it back would write it "
            "into the results, logs and reports; it would be masked only where the spec stores "
            "it. Use a secret of at least 6 characters, or set allow_short_secrets = true in the "
            "experiment to accept that risk") in message, message
    assert not (tmp_path / "run").exists()
    assert server.requests == []
    assert not leaks(run.stdout + run.stderr, [KEY, HEADER, QUERY, FIELD])


def test_an_allowed_short_secret_is_masked_by_position_wherever_it_is_stored(
        tmp_path: Path, server: ProviderServer) -> None:
    spec = _spec(tmp_path, server, allow=True)
    out = tmp_path / "run"
    run = _run(spec, out)
    report = subprocess.run([sys.executable, "-m", "workbench", "report", str(out)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                            timeout=300)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    assert report.returncode == 0, report.stderr.decode()[-3000:]
    sent = server.requests[0]
    assert (sent["headers"]["authorization"], sent["headers"]["x-team"]) == (f"Bearer {KEY}",
                                                                            HEADER)
    assert f"?team={QUERY}" in unquote(sent["path"])

    files = all_bytes(out)
    assert {"spec.toml", "results.sqlite", "report.html"} <= {p.name for p in files}
    outputs = {"run stdout": run.stdout, "run stderr": run.stderr,
               "report stdout": report.stdout, "report stderr": report.stderr}
    for where, data in [*((str(p), b) for p, b in files.items()), *outputs.items()]:
        found = leaks(data, [KEY, HEADER, QUERY, FIELD])
        assert not found, f"{found} in {where}"
    db = sqlite3.connect(out / "results.sqlite")
    stored = json.loads(db.execute("SELECT spec_json FROM runs").fetchone()[0])
    params = stored["models"][0]["params"]
    assert (params["extra_headers"], params["extra_body"]) == (
        {"X-Team": MASK}, {"credentials": {"pin": MASK}})
    assert params["api_base"].endswith("?team=***") and "api_key" not in params
    assert stored["allow_short_secrets"] is True
    assert [r[0] for r in db.execute("SELECT status FROM cells")] == ["ok"]
