"""Specs validated before anything runs: names, ``winner_name``, paths that lead out of the
project, a cache that is another run's store, and lists bounded before they are expanded.

Each measured bullet of issue 34 (item 4) is a test here, at load and through ``workbench run``
subprocesses where the spec reaches files (nothing written, no traceback, the file and the key
named).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.hardening._sessions import write_session
from workbench.errors import ConfigError
from workbench.harness import Experiment
from workbench.harness.experiment._validate import MAX_LIST_ITEMS
from workbench.harness.results._store import ResultsStore

BASE: dict[str, Any] = {"name": "t", "sessions": ["s1.json"], "models": ["extractive"]}
SYSTEM_FILE = Path("/etc/passwd")


def _refused(**over: Any) -> str:
    with pytest.raises(ConfigError) as info:
        Experiment.from_dict({**BASE, **over})
    return str(info.value)


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _spec(folder: Path, *lines: str) -> Path:
    write_session(folder, "s1")
    spec = folder / "spec.toml"
    spec.write_text("\n".join(['name = "t"', 'sessions = ["s1.json"]', *lines]) + "\n",
                    encoding="utf-8")
    return spec


def test_names_with_a_trailing_newline_or_control_characters_are_refused() -> None:
    assert _refused(name="mixed\n").startswith(
        "experiment: name: 'mixed\\n' is not a safe run folder name")
    assert _refused(models=[{"model": "extractive", "name": "fast\tmodel"}]) == (
        "experiment: models[0].name: the name 'fast\\tmodel' holds the non-printing character "
        "U+0009 (a control or format character) at position 5; use printable characters only")
    assert _refused(strategies=[{"name": "mask", "label": "m\x1b[31m"}]) == (
        "experiment: strategies[0].label: the label 'm\\x1b[31m' holds the non-printing "
        "character U+001B (a control or format character) at position 2; use printable "
        "characters only")
    assert _refused(templates=["lean\n"]) == (
        "experiment: templates: entry 0 'lean\\n' holds the non-printing character U+000A (a "
        "control or format character) at position 5; use printable characters only")


def test_names_differing_only_by_normalisation_or_a_zero_width_character_are_not_distinct(
) -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    assert _refused(templates=[nfc, nfd]) == (
        "experiment: templates: entries 0 and 1 ('caf\\xe9' and 'cafe\\u0301') are one name "
        "after Unicode normalisation (NFC); list it once")
    assert _refused(models=[{"model": "extractive", "name": nfc},
                            {"model": "extractive", "name": nfd}]) == (
        "experiment: models: models[0] and models[1] are the same model 'café'; list it once")
    assert _refused(models=[{"model": "extractive", "name": "fast"},
                            {"model": "extractive", "name": "fa\u200bst"}]) == (
        "experiment: models[1].name: the name 'fa\\u200bst' holds the zero-width character "
        "U+200B at position 3: names that look the same must be the same; remove it")
    assert _refused(strategies=[{"name": "mask", "label": "m", "keep_last": 2},
                                {"name": "mask", "label": "m", "keep_last": 3}]) == (
        "experiment: strategies[0] and strategies[1] are both named 'm'; its cells would be "
        "one strategy's: give one a distinct label = \"...\"")
    # A name written decomposed is stored composed: the same cells as the composed spelling.
    kept = Experiment.from_dict({**BASE, "models": [{"model": "extractive", "name": nfd}]})
    assert kept.models[0].label == nfc


def test_winner_name_is_a_plain_folder_name_checked_at_load() -> None:
    tune = {"variant": "lean"}
    assert _refused(tune={**tune, "winner_name": "lean\x00"}) == (
        "experiment: tune.winner_name: winner_name 'lean\\x00' holds the non-printing character "
        "U+0000 (a control or format character) at position 5; use printable characters only")
    assert _refused(tune={**tune, "winner_name": "w" * 300}) == (
        "experiment: tune.winner_name: winner_name has 300 characters (300 bytes); a folder "
        "name takes 1 to 100 characters and at most 255 bytes")
    assert _refused(tune={**tune, "winner_name": "../outside"}) == (
        "experiment: tune.winner_name: winner_name '../outside' is not a plain folder name (no "
        "/ or \\, no braces, not starting with a dot); use a name such as lean-tuned")
    ok = Experiment.from_dict({**BASE, "tune": {**tune, "winner_name": "lean-tuned"}})
    assert ok.tune is not None and ok.tune.winner_name == "lean-tuned"


def test_a_variant_folder_linked_to_the_root_is_refused_not_run_as_the_built_ins(
        tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "evil").symlink_to("/")
    spec = _spec(tmp_path, 'models = ["extractive"]', 'templates = ["evil"]')
    out = tmp_path / "run"
    for extra in (["--dry-run"], []):
        done = _cli(["run", str(spec), "--out", str(out), "--no-progress", *extra], tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr[-2000:]
        assert (f"templates: variant 'evil': {tmp_path / 'prompts' / 'evil'} leads to /, "
                f"outside {tmp_path / 'prompts'}; keep variant folders inside the project folder") \
            in done.stderr, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
    assert not out.exists()


def test_a_template_linked_to_a_system_file_is_refused_before_anything_is_sent(
        tmp_path: Path) -> None:
    if not SYSTEM_FILE.is_file():
        pytest.skip(f"{SYSTEM_FILE} is missing on this system")
    variant = tmp_path / "prompts" / "leaky"
    variant.mkdir(parents=True)
    (variant / "compaction.md").symlink_to(SYSTEM_FILE)
    spec = _spec(tmp_path, 'models = ["extractive"]', 'templates = ["leaky"]')
    out = tmp_path / "run"
    done = _cli(["run", str(spec), "--out", str(out), "--no-progress"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert (f"{variant / 'compaction.md'}: leads to {SYSTEM_FILE}, outside the variant folder "
            f"{variant}; a template is sent to the model") in done.stderr, done.stderr[-2000:]
    assert not out.exists()
    # A link that stays inside the variant folder is the folder's own file.
    (variant / "compaction.md").unlink()
    (variant / "base.md").write_text("Summarize: {{ messages }}", encoding="utf-8")
    (variant / "compaction.md").symlink_to("base.md")
    done = _cli(["run", str(spec), "--out", str(out), "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


def test_a_cache_path_at_another_runs_store_is_refused_and_the_store_left_unchanged(
        tmp_path: Path) -> None:
    other = tmp_path / "runs" / "other" / "results.sqlite"
    other.parent.mkdir(parents=True)
    ResultsStore(other).close()
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    for line in (f'cache = {{ path = "{other}" }}',
                 f'models = [{{ model = "cached:extractive", cache_path = "{other}" }}]'):
        spec = _spec(tmp_path, *(['models = ["cached:extractive"]', line]
                                 if line.startswith("cache") else [line]))
        done = _cli(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"],
                    tmp_path)
        key = "cache.path" if line.startswith("cache") else "models[0].cache_path"
        assert done.returncode == 1, done.stdout + done.stderr[-2000:]
        assert (f"{spec}: {key}: {other} is a run's results store, not a response cache; "
                "recording into it would change that run") in done.stderr, done.stderr[-2000:]
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before
    assert not (tmp_path / "run").exists()


def test_every_list_is_bounded_before_its_items_are_checked() -> None:
    assert _refused(replay={"thresholds": [0.5] * (MAX_LIST_ITEMS + 1)}) == (
        "experiment: replay.thresholds has 10,001 items; a list of a spec holds at most "
        "10,000: split the experiment into several")
    assert _refused(sessions=["s1.json"] * 2_000_000) == (
        "experiment: sessions has 2,000,000 items; a list of a spec holds at most 10,000: "
        "split the experiment into several")
    assert _refused(models=[{"model": "extractive", "sessions": ["s1"] * 50_000}]) == (
        "experiment: models[0].sessions has 50,000 items; a list of a spec holds at most "
        "10,000: split the experiment into several")
    assert _refused(tune={"variant": "lean", "params": {"k": list(range(20_000))}}) == (
        "experiment: tune.params.k has 20,000 items; a list of a spec holds at most 10,000: "
        "split the experiment into several")


def test_products_are_bounded_before_anything_is_expanded() -> None:
    assert _refused(replay={"windows": [8000 + i for i in range(5000)],
                            "thresholds": [0.5] * 5000}) == (
        "experiment: replay: 25,000,000 replays (1 sessions x 1 strategies x 5,000 windows x "
        "5,000 thresholds); the limit is 100,000: list fewer windows or thresholds, or split "
        "the experiment")
    assert _refused(tune={"variant": "lean", "sample": 10**9}) == (
        "experiment: tune.sample: 1,000,000,000 points; a tune draws at most 100,000")


def test_huge_lists_fail_fast_in_dry_run_through_the_cli(tmp_path: Path) -> None:
    thresholds = ", ".join(["0.5"] * 200_000)
    spec = _spec(tmp_path, 'models = ["extractive"]', "[replay]", f"thresholds = [{thresholds}]")
    done = _cli(["run", str(spec), "--dry-run", "--out", str(tmp_path / "run")], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert (f"{spec}: replay.thresholds has 200,000 items; a list of a spec holds at most "
            "10,000") in done.stderr
    assert "Traceback" not in done.stderr
