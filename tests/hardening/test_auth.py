"""Missing or rejected credentials fail at once, never retried, naming the variable to set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hardening._provider_server import ProviderServer
from workbench.errors import AuthenticationError, ModelCallError
from workbench.harness import Experiment, run_experiment
from workbench.messages import Message
from workbench.models._errors_map import load_litellm, missing_key_error, to_workbench_error
from workbench.models._litellm import LiteLLMModel
from workbench.models._retry import RetryPolicy
from workbench.sessions import Session

pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_a_missing_key_fails_before_any_request_naming_the_variable(
        server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    sleeps = Sleeps()
    model = LiteLLMModel("anthropic/claude-3-5-haiku-latest", api_base=server.base(),
                         retry=RetryPolicy(max_attempts=5), sleep=sleeps)
    with pytest.raises(AuthenticationError) as err:
        await model.complete("s", [Message.user("u")])
    assert str(err.value) == (
        "anthropic/claude-3-5-haiku-latest: no API key was given; set ANTHROPIC_API_KEY to a "
        "valid key (or pass api_key=...)")
    assert err.value.model == "anthropic/claude-3-5-haiku-latest"
    assert server.requests == [] and sleeps.waits == []


async def test_a_rejected_key_is_tried_once_and_names_the_variable(
        server: ProviderServer) -> None:
    server.unauthorized = {"rejected"}
    sleeps = Sleeps()
    model = LiteLLMModel("openai/rejected", api_base=server.base(), api_key="sk-wrong-0000000000",
                         retry=RetryPolicy(max_attempts=5), sleep=sleeps)
    with pytest.raises(AuthenticationError) as err:
        await model.complete("s", [Message.user("u")])
    assert str(err.value).startswith(
        "openai/rejected: credentials were missing or rejected; set OPENAI_API_KEY to a valid "
        "key (or pass api_key=...). Provider said (host "
        f"127.0.0.1:{server.port}, HTTP 401): ")
    assert "sk-wrong-0000000000" not in str(err.value)
    assert len(server.requests) == 1 and sleeps.waits == []


def test_an_sdk_missing_credentials_500_is_an_authentication_error_not_a_transient_one() -> None:
    litellm = load_litellm()
    exc = litellm.InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`, or set the "
                "`OPENAI_API_KEY` environment variable.",
        llm_provider="openai", model="gpt-x")
    mapped = to_workbench_error(exc, "openai/gpt-x")
    assert type(mapped) is AuthenticationError
    assert str(mapped).startswith("openai/gpt-x: credentials were missing or rejected; set "
                                  "OPENAI_API_KEY to a valid key (or pass api_key=...).")


def test_the_missing_key_check_only_judges_providers_that_need_just_a_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert isinstance(missing_key_error("openai/gpt-4o-mini", {}), AuthenticationError)
    assert missing_key_error("openai/gpt-4o-mini", {"api_key": "sk-x"}) is None
    assert missing_key_error("openai/gpt-4o-mini", {"mock_response": "hi"}) is None
    assert missing_key_error("ollama/llama3", {}) is None
    assert missing_key_error("bedrock/anthropic.claude-v2", {}) is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-000000")
    assert missing_key_error("openai/gpt-4o-mini", {}) is None


def test_in_a_run_every_cell_of_a_keyless_model_fails_at_once_with_the_fix(
        tmp_path: Path, server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for sid in ("s1", "s2"):
        messages = [Message.user(f"fix the bug ({sid})"), Message.assistant("done")]
        Session(sid, "goose-json", str(tmp_path / f"{sid}.json"), messages).write_goose_json(
            tmp_path / f"{sid}.json")
    spec = Experiment.from_dict({
        "name": "keyless", "sessions": ["s*.json"], "base_dir": str(tmp_path),
        "models": [{"model": "openai/keyless", "params": {"api_base": server.base()}}]})
    results = run_experiment(spec, tmp_path / "run", progress=False)
    cells = results.cells
    assert list(cells["status"]) == ["error", "error"]
    assert list(cells["attempts"]) == [1, 1]
    assert set(cells["error_message"]) == {
        "openai/keyless: no API key was given; set OPENAI_API_KEY to a valid key (or pass "
        "api_key=...)"}
    assert "AuthenticationError" in cells["traceback"].iloc[0]
    assert server.requests == []
    assert issubclass(AuthenticationError, ModelCallError)


def test_the_runs_error_summary_names_the_variable_to_set(tmp_path: Path,
                                                          server: ProviderServer) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    for sid in ("s1", "s2"):
        messages = [Message.user(f"fix the bug ({sid})"), Message.assistant("done")]
        Session(sid, "goose-json", str(tmp_path / f"{sid}.json"), messages).write_goose_json(
            tmp_path / f"{sid}.json")
    server.unauthorized = {"rejected"}
    spec = tmp_path / "spec.toml"
    spec.write_text("\n".join([
        'name = "keys"', 'sessions = ["s*.json"]',
        f'models = [{{ model = "openai/keyless", params = {{ api_base = "{server.base()}" }} }},',
        f'          {{ model = "anthropic/keyless", params = {{ api_base = "{server.base()}" }} }},',
        f'          {{ model = "openai/rejected", params = {{ api_base = "{server.base()}", '
        'api_key = "sk-wrong-000000000000" } }]']), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",
                                                             "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                           str(tmp_path / "run"), "--no-progress"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert ("6 x authentication (error): the provider rejected or did not get an API key: set "
            "ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment (or pass api_key=...)"
            ) in done.stdout
    assert "set the key in the environment" not in done.stdout
    assert [r["model"] for r in server.requests] == ["rejected", "rejected"]
