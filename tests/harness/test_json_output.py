"""``--json PATH``: the one `Verdict` as data, validated against its documented schema, with
the run's provenance; the recommendation can be recomputed from the comparisons it holds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.session_files import write_tool_sessions
from workbench import __version__
from workbench.cli import cli
from workbench.harness import Results
from workbench.harness.report._json import SCHEMA_VERSION, RunDocument


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("json")
    write_tool_sessions(root, 6, turns=4, padding=150)
    (root / "exp.toml").write_text(
        'name = "json"\nsessions = ["s*.json"]\nmodels = ["extractive"]\n'
        'templates = ["default", "lean-facts", "top3-intent"]\nwindows = ["8k", "32k"]\n',
        encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def document(project: Path) -> dict:
    out = project / "run.json"
    done = CliRunner().invoke(cli, ["run", str(project / "exp.toml"), "--out",
                                    str(project / "run"), "--no-progress", "--json", str(out)])
    assert done.exit_code == 0, done.output
    assert f"json: {out}" in done.output
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_json_validates_against_the_documented_schema_and_is_the_verdict(
        project: Path, document: dict) -> None:
    parsed = RunDocument.model_validate(document)  # extra keys or a wrong type would raise
    assert (parsed.schema_version, parsed.command) == (SCHEMA_VERSION, "run")
    results = Results.load(project / "run")
    verdict = results.verdict()
    assert document["verdict"]["recommendation"]["text"] == verdict.recommendation.to_text()
    assert [s["title"] for s in document["verdict"]["strata"]] == [s.title for s in
                                                                   verdict.strata]
    assert document["recommendation"] == document["verdict"]["recommendation"]
    assert len(document["table"]) == len(results.table()) == 6
    comparison = document["verdict"]["strata"][0]["metrics"][0]["comparisons"][0]
    assert set(comparison) >= {"variant", "best", "mean_diff", "ci_low", "ci_high",
                               "p_adjusted", "status"}
    schema = RunDocument.model_json_schema()  # documented: every field says what it is
    assert all(field.get("description") for field in schema["properties"].values())
    for name in ("ComparisonDoc", "StratumDoc", "Provenance", "ErrorDoc"):
        fields = schema["$defs"][name]["properties"].values()
        assert all(field.get("description") for field in fields), name


def test_the_provenance_names_version_and_hashes_spec_sessions_and_templates(
        project: Path, document: dict) -> None:
    prov = document["provenance"]
    assert prov["workbench_version"] == __version__
    spec = (project / "run" / "spec.toml").read_bytes()
    assert prov["spec_sha256"] == hashlib.sha256(spec).hexdigest()
    assert prov["sessions"] == {f"s{i}": hashlib.sha256(
        (project / f"s{i}.json").read_bytes()).hexdigest() for i in range(6)}
    assert prov["models"] == ["extractive"]
    assert sorted(prov["templates"]) == ["default", "lean-facts", "top3-intent"]
    assert all(len(h) == 64 for h in prov["templates"].values())


def recompute(stratum: dict) -> str:
    """The default rule (min-retained-safe) from the JSON alone: among the templates not
    significantly worse than the best on recall nor on failures, the fewest retained tokens."""
    metrics = {m["metric"]: m for m in stratum["metrics"]}

    def worse(metric: str, template: str) -> bool:
        found = metrics.get(metric)
        if found is None or found["best"] in (None, template):
            return False
        return any(c["variant"] == template and c["status"] == "worse"
                   for c in found["comparisons"])

    retained = metrics["retained_tokens"]["means"]
    eligible = [t for t in stratum["variants"] if t in retained
                and not worse("probe_recall", t) and not worse("failed", t)]
    return min(eligible, key=lambda t: (retained[t], -metrics["probe_recall"]["means"][t], t))


def test_the_recommendation_is_recomputed_from_the_jsons_comparisons(document: dict) -> None:
    strata = document["verdict"]["strata"]
    assert document["verdict"]["rule"] == "min-retained-safe" and len(strata) == 2
    picks = [recompute(s) for s in strata]
    assert picks == [s["recommendation"]["template"] for s in strata]
    # the run's pick: recommended in the most strata among those eligible everywhere
    everywhere = set.intersection(*(set(s["recommendation"]["eligible"]) for s in strata))
    run_pick = max(sorted(everywhere), key=picks.count)
    assert document["recommendation"]["template"] == run_pick == "lean-facts"


def test_report_and_compare_write_the_same_schema(project: Path, document: dict) -> None:
    report = project / "report.json"
    done = CliRunner().invoke(cli, ["report", str(project / "run"), "--json", str(report)])
    assert done.exit_code == 0, done.output
    again = json.loads(report.read_text(encoding="utf-8"))
    assert again["command"] == "report" and again["verdict"] == document["verdict"]
    compared = project / "compare.json"
    done = CliRunner().invoke(cli, ["compare", str(project / "run"), str(project / "run"),
                                    "--json", str(compared)])
    assert done.exit_code == 0, done.output
    found = RunDocument.model_validate_json(compared.read_text(encoding="utf-8"))
    assert found.command == "compare" and "Paired comparison, B - A" in str(
        found.extra["comparison"])


def test_regress_json_needs_the_kept_run_folder() -> None:
    done = CliRunner().invoke(cli, ["regress", "--json", "x.json"])
    assert done.exit_code == 2
    assert "--json needs --out" in done.output
