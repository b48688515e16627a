"""Cell expansion: counts, order, stable ids, session sources."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.harness import Experiment, expand_cells
from workbench.harness.experiment._cells import cell_key, template_names
from workbench.messages import Message
from workbench.sessions import Session


def make_session(folder: Path, sid: str) -> Path:
    path = folder / f"{sid}.json"
    Session(sid, "goose-json", str(path), [Message.user(f"task {sid}"),
                                           Message.assistant("done")]).write_goose_json(path)
    return path


def spec(tmp_path: Path, **over: object) -> Experiment:
    data: dict[str, object] = {"sessions": ["s*.json"], "models": ["extractive", "openai/gpt-4o-mini"],
                               "templates": ["default", "top3-intent"], "windows": ["8k", None],
                               "repeats": 2, "base_dir": str(tmp_path)}
    data.update(over)
    return Experiment.from_dict(data)


@pytest.fixture
def two_sessions(tmp_path: Path) -> Path:
    make_session(tmp_path, "s1")
    make_session(tmp_path, "s2")
    return tmp_path


def test_cells_are_the_full_product_in_nesting_order(two_sessions: Path) -> None:
    cells = expand_cells(spec(two_sessions))
    assert len(cells) == 2 * 1 * 2 * 2 * 2 * 2
    assert [(c.session_id, c.model, c.template, c.window, c.repeat) for c in cells[:5]] == [
        ("s1", "extractive", "default", 8192, 0), ("s1", "extractive", "default", 8192, 1),
        ("s1", "extractive", "default", None, 0), ("s1", "extractive", "default", None, 1),
        ("s1", "extractive", "top3-intent", 8192, 0)]
    assert cells[-1].session_id == "s2" and cells[-1].model == "openai/gpt-4o-mini"
    assert len({c.cell_id for c in cells}) == len(cells)


def test_cell_ids_are_the_sha256_prefix_of_the_key(two_sessions: Path) -> None:
    first = expand_cells(spec(two_sessions))[0]
    assert first.key == "s1|goose|extractive|default|8k|0"
    assert first.cell_id == hashlib.sha256(first.key.encode()).hexdigest()[:16]
    assert cell_key("s1", "goose", "m", "t", None, 3) == "s1|goose|m|t|none|3"


def test_ids_do_not_depend_on_order_or_other_axes(two_sessions: Path) -> None:
    a = {c.key: c.cell_id for c in expand_cells(spec(two_sessions))}
    b = {c.key: c.cell_id for c in expand_cells(spec(two_sessions, repeats=1,
                                                     models=["openai/gpt-4o-mini", "extractive"]))}
    assert all(a[k] == v for k, v in b.items())
    assert len(b) == 16


def test_overlapping_session_entries_do_not_duplicate_cells(two_sessions: Path) -> None:
    cells = expand_cells(spec(two_sessions, sessions=["s1.json", "s*.json"], models=["extractive"],
                              repeats=1))
    assert len(cells) == 2 * 1 * 2 * 2


def test_an_unmatched_glob_and_an_unknown_name_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^sessions: glob 'x\*.json' matched no files"):
        expand_cells(spec(tmp_path, sessions=["x*.json"]))
    with pytest.raises(ConfigError, match=r"^sessions: 'nope' is neither a file"):
        expand_cells(spec(tmp_path, sessions=["nope"]))


def test_all_templates_expands_to_the_project_variant_folders(tmp_path: Path) -> None:
    names = template_names(spec(tmp_path, templates=["all"]))
    assert "default" in names and names == sorted(names)


def test_shipped_dataset_names_resolve_through_the_manifest(tmp_path: Path) -> None:
    from workbench.harness.experiment._cells import read_manifest

    manifest = read_manifest()
    if "gen-005k-s1" not in manifest:
        pytest.skip("datasets/manifest.json does not ship gen-005k-s1")
    one = spec(tmp_path, sessions=["gen-005k-s1"], repeats=1, models=["extractive"],
               templates=["default"], windows=[None])
    (cell,) = expand_cells(one)
    assert (cell.session_format, Path(cell.session_path).name) == ("goose-json", "gen-005k-s1.json")
    every = expand_cells(one.model_copy(update={"sessions": spec(tmp_path, sessions=["dataset:all"]).sessions}))
    assert len(every) == len(manifest)
