"""Generated sessions: determinism, size, planted facts, the shipped datasets and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli._sessions_generate import command
from workbench.messages import Message
from workbench.sessions._generate import (
    SHAPES,
    SHIPPED,
    dataset_name,
    generate_dataset,
    generate_session,
    message_text,
    prose_tokens,
    tool_share,
)
from workbench.tokens import default_estimator

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def test_the_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    a, _ = generate_session(11, 8000)
    b, _ = generate_session(11, 8000)
    pa, pb = a.write_goose_json(tmp_path / "a.json"), b.write_goose_json(tmp_path / "b.json")
    assert pa.read_bytes() == pb.read_bytes()
    c, _ = generate_session(12, 8000)
    assert c.write_goose_json(tmp_path / "c.json").read_bytes() != pa.read_bytes()


@pytest.mark.parametrize("target", [5_000, 12_000, 30_000])
def test_sizes_land_within_15_percent_of_the_target(target: int) -> None:
    session, _ = generate_session(3, target, version=2)
    tokens = default_estimator().count_context_tokens(session.messages)
    assert abs(tokens - target) <= 0.15 * target, tokens


def test_every_planted_fact_is_in_its_message_and_the_stale_one_comes_first() -> None:
    session, facts = generate_session(5, 20_000, version=2)
    assert session.meta["planted_facts"] == [f.to_dict() for f in facts]
    assert session.meta["generator"] == {"seed": 5, "target_tokens": 20_000, "version": 2}
    assert {f.kind for f in facts} == {"path", "error", "identifier", "constraint", "value"}
    for fact in facts:
        assert fact.text in message_text(session.messages[fact.message_index]), fact
        earlier = "\n".join(message_text(m) for m in session.messages[:fact.message_index])
        assert fact.text not in earlier, fact
    [stale] = [f for f in facts if f.stale]
    update = next(f for f in facts if f.id == stale.superseded_by)
    assert stale.kind == update.kind == "value"
    assert stale.message_index < update.message_index
    assert stale.text != update.text
    errors = [f for f in facts if f.kind == "error"]
    for fact in errors:  # quoted in a failing tool result
        [result] = session.messages[fact.message_index].tool_responses()
        assert result.tool_result.is_error and fact.text in result.text()
    where = {(f.kind, session.messages[f.message_index].role,
              session.messages[f.message_index].has_tool_response()) for f in facts}
    assert ("identifier", "user", False) in where  # asked for by the user
    assert ("identifier", "assistant", False) in where  # introduced in the assistant's own text
    assert ("error", "user", True) in where  # quoted in a tool result only


def test_every_tool_call_has_its_result_in_the_next_message() -> None:
    session, _ = generate_session(2, 12_000, version=2)
    for i, msg in enumerate(session.messages):
        for request in msg.tool_requests():
            assert [r.id for r in session.messages[i + 1].tool_responses()] == [request.id]
    assert {r.name for m in session.messages for r in m.tool_requests()} == {
        "search", "read_file", "edit_file", "write_file", "shell"}


@pytest.mark.parametrize("seed,target", [(3, 8_000), (7, 30_000)])
def test_tool_results_hold_about_three_quarters_of_the_tokens(seed: int, target: int) -> None:
    session, _ = generate_session(seed, target, version=2)
    assert 0.65 <= tool_share(session.messages) <= 0.85


def _shipped() -> tuple[dict, list[dict]]:
    manifest = json.loads((DATASETS / "manifest.json").read_text())
    return manifest, manifest["sessions"]


def test_the_shipped_manifest_matches_the_files() -> None:
    manifest, entries = _shipped()
    assert sorted((e["seed"], e["target_tokens"], e["shape"], e["version"]) for e in entries) \
        == sorted(tuple(s) for s in SHIPPED)
    assert manifest["generator_version"] == 3
    est = default_estimator()
    total = 0
    for entry in entries:
        path = DATASETS / entry["file"]
        total += path.stat().st_size
        data = json.loads(path.read_text())
        meta = data["meta"]
        messages = [Message.from_goose(d) for d in data["conversation"]]
        assert entry["file"] == f"{dataset_name(entry['seed'], entry['target_tokens'])}.json"
        assert entry["name"] == data["id"] == entry["file"][:-5]
        assert entry["format"] == "goose-json"
        assert entry["tokens"] == est.count_context_tokens(messages), entry["file"]
        assert entry["tokens_without_tool_output"] == prose_tokens(messages), entry["file"]
        tolerance = 0.15 if entry["version"] == 2 else 0.25  # small v3 shapes are chunkier
        assert abs(entry["tokens"] - entry["target_tokens"]) <= tolerance * entry["target_tokens"]
        assert entry["messages"] == len(messages)
        assert entry["tool_calls"] == sum(len(m.tool_requests()) for m in messages)
        assert entry["tool_share"] == round(tool_share(messages), 3), entry["file"]
        assert entry["planted_facts"] == len(meta["planted_facts"])
        assert entry["truth"]["planted_facts"] == meta["planted_facts"]
        assert meta["generator"] == {"seed": entry["seed"], "target_tokens": entry["target_tokens"],
                                     "version": entry["version"]}
        if entry["version"] == 2:  # the original six: planted facts only
            assert set(entry["truth"]) == {"planted_facts"} and "shape" not in meta
            continue
        assert meta["shape"] == entry["shape"]
        for key in ("errors", "files_changed", "pending_tasks", "decisions"):
            assert entry[key] == len(meta[key]) > 0, (entry["file"], key)
            assert entry["truth"][key] == meta[key], (entry["file"], key)
    assert total < 12_000_000


def test_the_corpus_has_every_shape_and_sizes_from_5k_to_150k() -> None:
    _, entries = _shipped()
    assert len(entries) >= 48
    shapes = {shape: [e for e in entries if e["shape"] == shape] for shape in SHAPES}
    assert all(len(v) >= 6 for v in shapes.values()), {k: len(v) for k, v in shapes.items()}
    assert min(e["tokens"] for e in entries) >= 5_000
    assert 140_000 <= max(e["tokens"] for e in entries) <= 155_000
    assert sum(e["tokens"] <= 30_000 for e in entries) >= 30  # most are small or medium
    # history the ladder cannot save at 8k: more than 8k tokens left without tool output
    over = [e["name"] for e in entries if e["tokens_without_tool_output"] > 8192]
    assert len(over) >= 12
    assert all(e["tokens_without_tool_output"] > 8192 for e in shapes["discussion"])


def test_debugging_and_tool_loop_sessions_are_mostly_tool_output() -> None:
    _, entries = _shipped()
    for entry in entries:
        if entry["shape"] in ("debugging", "tool-loop"):
            assert 0.7 <= entry["tool_share"] <= 0.86, entry["file"]
        elif entry["shape"] == "discussion":
            assert entry["tool_share"] <= 0.45, entry["file"]
        else:
            assert 0.5 <= entry["tool_share"] <= 0.85, entry["file"]


SAMPLE = [*SHIPPED[:3], *(next(s for s in SHIPPED if s.shape == shape and s.version == 3)
                          for shape in SHAPES)]
"""The version-2 files the recordings key on, and the smallest version-3 file of each shape."""


def test_the_shipped_files_are_what_the_generator_writes_today(tmp_path: Path) -> None:
    manifest = generate_dataset(tmp_path, SAMPLE)
    shipped = {e["file"]: e for e in _shipped()[1]}
    for spec in SAMPLE:
        name = f"{dataset_name(spec.seed, spec.target_tokens)}.json"
        assert (tmp_path / name).read_bytes() == (DATASETS / name).read_bytes(), name
    for entry in manifest["sessions"]:
        assert entry == shipped[entry["file"]], entry["file"]


def test_the_cli_generates_one_seed_per_size_and_updates_the_manifest(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, ["--seed", "7", "--tokens", "5k,6000",
                                          "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "gen-005k-s7.json", "gen-006k-s7.json", "manifest.json"]
    first = result.output.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'gen-005k-s7.json'}: debugging, ")
    assert "planted facts" in first
    CliRunner().invoke(command, ["--seed", "8", "--tokens", "5000", "--out", str(tmp_path)])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [e["file"] for e in manifest["sessions"]] == [
        "gen-005k-s7.json", "gen-005k-s8.json", "gen-006k-s7.json"]
    bad = CliRunner().invoke(command, ["--seed", "1", "--seed", "2", "--tokens", "5k,6k,7k",
                                       "--out", str(tmp_path)])
    assert bad.exit_code == 2
    assert "2 seeds for 3 sizes: give one seed, or one per size" in bad.output


def test_the_cli_writes_the_shape_it_is_given(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, ["--seed", "9", "--tokens", "6k", "--shape", "review",
                                          "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{tmp_path / 'gen-006k-s9.json'}: review, ")
    [entry] = json.loads((tmp_path / "manifest.json").read_text())["sessions"]
    assert (entry["shape"], entry["version"], entry["seed"]) == ("review", 3, 9)
    bad = CliRunner().invoke(command, ["--tokens", "6k", "--shape", "poetry",
                                       "--out", str(tmp_path)])
    assert bad.exit_code == 2
    assert ("'poetry' is not one of debugging, feature, refactor, review, tool-loop, "
            "discussion") in bad.output


def test_the_datasets_readme_lists_every_file_as_the_manifest_measures_it() -> None:
    rows = {}
    for line in (DATASETS / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `gen-"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0].strip("`")] = cells
    _, entries = _shipped()
    assert sorted(rows) == sorted(e["file"] for e in entries)
    for e in entries:
        row = rows[e["file"]]
        assert row[1:9] == [e["shape"], str(e["version"]), str(e["seed"]),
                            f"{e['target_tokens']:,}", f"{e['tokens']:,}",
                            f"{e['tokens_without_tool_output']:,}", f"{e['tool_share']:.3f}",
                            str(e["planted_facts"])], e["file"]
        assert row[9:] == [str(e.get(k, "-")) for k in ("errors", "files_changed",
                                                        "pending_tasks", "decisions")]
