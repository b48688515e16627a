"""Hostile experiment specs: each one is a `ConfigError` naming the key (and the bound), at load
and in ``--dry-run``, in bounded time; gateway parameters mean what they say."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.hardening._provider_server import ProviderServer
from workbench.errors import ConfigError
from workbench.harness import Experiment, run_experiment
from workbench.harness.experiment._cells import check_cell_count
from workbench.messages import Message
from workbench.models._errors_map import TransientModelError
from workbench.models._litellm import LiteLLMModel
from workbench.sessions import Session

BASE: dict[str, Any] = {"name": "t", "sessions": ["s1.json"], "models": ["extractive"]}


def _refused(**over: Any) -> str:
    with pytest.raises(ConfigError) as info:
        Experiment.from_dict({**BASE, **over})
    return str(info.value)


def _cli(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    return done, time.monotonic() - started


def test_numbers_that_multiply_work_are_bounded_naming_the_key_and_the_bound() -> None:
    cases = {
        "repeats": ({"repeats": 1_000_000_000},
                    "experiment: repeats: Input should be less than or equal to 1000"),
        "concurrency": ({"concurrency": 10**12},
                        "experiment: concurrency: Input should be less than or equal to 512"),
        "model concurrency": ({"models": [{"model": "extractive", "concurrency": 10**6}]},
                              "experiment: models[0].concurrency: Input should be less than or "
                              "equal to 512"),
        "window": ({"windows": [12345678901234567890]},
                   "experiment: windows[0]: a window of 12,345,678,901,234,567,890 tokens is over "
                   "the limit of 104,857,600 tokens (100m)"),
        "window text": ({"windows": ["9" * 5000 + "k"]},
                        "experiment: windows[0]: a window of a 5,000-digit number of tokens is "
                        "over the limit of 104,857,600 tokens (100m)"),
        "model window": ({"models": ["extractive@99999999999999999999k"]},
                         "experiment: models[0]: model string 'extractive@99999999999999999999k': "
                         "window '@99999999999999999999k' is over the limit of 104,857,600 "
                         "tokens (100m)"),
        "ray retries": ({"executor": {"kind": "ray", "max_retries": 10**9}},
                        "experiment: executor.max_retries: Input should be less than or equal "
                        "to 100"),
        "cells": ({"templates": ["default"] * 600, "repeats": 1000},
                  "experiment: the experiment would have at least 600,000 cells (models x "
                  "templates x windows x repeats x strategies, before sessions); the limit is "
                  "250,000 cells"),
    }
    for case, (over, message) in cases.items():
        assert _refused(**over) == message, case


def test_the_full_cell_count_is_checked_before_any_cell_is_built() -> None:
    experiment = Experiment.from_dict({**BASE, "repeats": 1000, "windows": ["8k", "32k"]})
    assert check_cell_count(experiment, sessions=125, templates=1) == 250_000
    with pytest.raises(ConfigError) as info:
        check_cell_count(experiment, sessions=126, templates=1)
    assert str(info.value) == (
        "the experiment would have up to 252,000 cells (126 sessions x 1 strategies x 1 models x "
        "1 templates x 2 windows x 1,000 repeats); the limit is 250,000 cells: split it into "
        "several experiments")


def test_booleans_are_strict_in_the_spec_and_in_strategy_settings() -> None:
    for value in ("yes", 1, "true", 0.0):
        assert _refused(manual_compact=value) == (
            f"experiment: manual_compact: expected true or false, not {value!r}")
    assert _refused(strategies=[{"name": "awaken", "backoff": "on"}]) == (
        "experiment: strategies[0]: backoff: expected true or false, not 'on'")
    assert Experiment.from_dict({**BASE, "manual_compact": True}).manual_compact is True


def test_the_same_model_twice_is_refused() -> None:
    assert _refused(models=["extractive", "extractive"]) == (
        "experiment: models: models[0] and models[1] are the same model 'extractive'; list it "
        "once")


def test_a_cache_path_that_is_a_folder_or_a_system_path_is_refused(tmp_path: Path) -> None:
    assert _refused(cache={"path": "/etc"}) == (
        "experiment: cache.path: /etc is inside the system folder /etc; keep recordings in a "
        "folder of your own (e.g. cache/responses.db beside the spec)")
    assert _refused(cache={"path": "/usr/lib/responses.db"}).startswith(
        "experiment: cache.path: /usr/lib/responses.db is inside the system folder /usr;")
    link = tmp_path / "innocent.db"
    link.symlink_to("/etc/passwd")
    assert _refused(cache={"path": str(link)}, base_dir=str(tmp_path)).startswith(
        f"experiment: cache.path: {link} is inside the system folder /etc;")
    assert _refused(cache={"path": "."}, base_dir=str(tmp_path)) == (
        f"experiment: cache.path: {tmp_path} is a folder; name the recording file in it, e.g. "
        f"{tmp_path / 'responses.db'}")
    ok = Experiment.from_dict({**BASE, "cache": {"path": "cache/responses.db"},
                               "base_dir": str(tmp_path)})
    assert ok.cache_file() == tmp_path / "cache" / "responses.db"


def test_deeply_nested_toml_is_a_config_error_naming_the_line_not_a_recursion_error(
        tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    for body, message in (
            ('name = "t"\nsessions = ["s1.json"]\nmodels = ["extractive"]\nx = '
             + "[" * 100_000 + "]" * 100_000 + "\n",
             f"{spec}:4: arrays or tables nested deeper than 32 levels"),
            ('name = "t"\n' + "a = " + "{ b = " * 5000 + "1" + " }" * 5000 + "\n",
             f"{spec}:2: arrays or tables nested deeper than 32 levels"),
            ('name = "t"\n' + "p." * 5000 + "q = 1\n",
             f"{spec}: keys nested deeper than 32 levels")):
        spec.write_text(body, encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            Experiment.from_toml(spec)
        assert str(info.value).startswith(message), str(info.value)[:200]
    # A bracket inside a string or a comment is not nesting.
    spec.write_text('name = "t"  # [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n'
                    'sessions = ["' + "[" * 40 + '"]\nmodels = ["extractive"]\n', encoding="utf-8")
    assert Experiment.from_toml(spec).sessions[0].path == "[" * 40


def test_hostile_specs_fail_fast_in_dry_run_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "s1.json"
    Session("s1", "goose-json", str(path), [Message.user("fix"), Message.assistant("ok")]
            ).write_goose_json(path)
    cases = {
        "repeats = 1000000000": "repeats: Input should be less than or equal to 1000",
        'manual_compact = "yes"': "manual_compact: expected true or false, not 'yes'",
        "windows = [12345678901234567890]": "windows[0]: a window of 12,345,678,901,234,567,890",
        'cache = { path = "/etc" }': "cache.path: /etc is inside the system folder /etc",
        "concurrency = 99999999999": "concurrency: Input should be less than or equal to 512",
        "x = " + "[" * 50_000 + "]" * 50_000: "arrays or tables nested deeper than 32 levels",
    }
    for line, message in cases.items():
        spec = tmp_path / "spec.toml"
        models = 'models = ["extractive"]' if "cache" not in line else \
            'models = ["cached:extractive"]'
        spec.write_text('name = "t"\nsessions = ["s1.json"]\n' + models + "\n" + line + "\n",
                        encoding="utf-8")
        done, elapsed = _cli(["run", str(spec), "--dry-run", "--out", str(tmp_path / "run")],
                             tmp_path)
        assert done.returncode == 1, (line[:40], done.stdout, done.stderr[-2000:])
        assert message in done.stderr, (line[:40], done.stderr[-2000:])
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
        assert elapsed < 60, (line[:40], elapsed)
    assert not (tmp_path / "run").exists()
    doubled = tmp_path / "double.toml"
    doubled.write_text('sessions = ["s1.json"]\nmodels = ["extractive", "extractive"]\n',
                       encoding="utf-8")
    done, _ = _cli(["run", str(doubled), "--dry-run"], tmp_path)
    assert done.returncode == 1
    assert "models[0] and models[1] are the same model 'extractive'; list it once" in done.stderr


async def test_num_retries_zero_means_one_attempt_and_two_means_three(
        server: ProviderServer) -> None:
    server.status_for = {"busy": 503}
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    for retries, attempts in ((0, 1), (2, 3)):
        server.requests.clear()
        waits.clear()
        model = LiteLLMModel("openai/busy", api_base=server.base(), api_key="sk-" + "z" * 30,
                             num_retries=retries, sleep=sleep)
        assert model.retry.max_attempts == attempts
        with pytest.raises(TransientModelError) as info:
            await model.complete("s", [Message.user("u")])
        assert len(server.requests) == attempts, retries
        assert len(waits) == attempts - 1
        text = str(info.value)
        assert "KeyError" not in text and "num_retries" not in text
        assert text.startswith("gave up after 3 attempts: " if retries else "openai/busy: "), text


def test_retry_parameters_are_checked_at_load() -> None:
    assert _refused(models=[{"model": "openai/m", "params": {"num_retries": -1}}]) == (
        "experiment: models[0]: model 'openai/m': num_retries = -1: expected a whole number of "
        "retries from 0 to 100 (0 = a single attempt)")
    assert _refused(models=[{"model": "openai/m", "params": {"num_retries": 1,
                                                              "max_retries": 3}}]) == (
        "experiment: models[0]: model 'openai/m': num_retries = 1 and max_retries = 3 disagree; "
        "give one of them")


def test_num_retries_zero_in_a_run_gives_error_rows_naming_the_server_not_a_key_error(
        tmp_path: Path, server: ProviderServer) -> None:
    server.status_for = {"busy": 503}
    path = tmp_path / "s1.json"
    Session("s1", "goose-json", str(path), [Message.user("fix"), Message.assistant("ok")]
            ).write_goose_json(path)
    spec = Experiment.from_dict({**BASE, "base_dir": str(tmp_path), "models": [
        {"model": "openai/busy", "params": {"api_base": server.base(), "num_retries": 0,
                                            "api_key": "sk-" + "q" * 30}}]})
    (row,) = run_experiment(spec, tmp_path / "run", progress=False).cells.to_dict("records")
    assert (row["status"], row["error_class"]) == ("error", "TransientModelError")
    assert "KeyError" not in row["traceback"]
    assert len(server.requests) == 1
