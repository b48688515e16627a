"""The pytest plugin: ``pytest --workbench-regress`` runs the regression gate as one test.

Registered through the ``pytest11`` entry point, so installing the workbench makes the options
available; the item fails with the same report ``workbench regress`` prints (diffs, both
numbers of a metric, the cell a missing recording belongs to). Without the flag it adds nothing.

Options: ``--workbench-regress-spec`` (default ``experiments/regress.toml``, or the
``workbench_regress_spec`` ini value, under the rootdir) and ``--workbench-regress-baseline``
(default ``regress/<experiment name>`` under the rootdir).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from workbench.errors import WorkbenchError
from workbench.regress._defaults import BASELINE_ROOT, DEFAULT_SPEC

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

ITEM_NAME = "workbench-regress"


class RegressFailed(Exception):
    """The gate did not pass; the message is its report."""


class RegressItem(pytest.Item):
    """The gate as a test item."""

    def __init__(self, *, spec: Path, baseline: Path | None, name: str, parent: pytest.Session,
                 nodeid: str) -> None:
        super().__init__(name, parent, nodeid=nodeid)
        self.spec = spec
        self.baseline = baseline

    def runtest(self) -> None:
        """Replay the experiment and compare; raise `RegressFailed` with the report if not 0."""
        # pytest loads this plugin in every session: the gate's machinery (pandas, pydantic,
        # jinja2) loads only when --workbench-regress runs it
        from workbench.regress import run_regress

        report = run_regress(self.spec, self.baseline)
        if report.exit_code != 0:
            raise RegressFailed(report.render())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        """The gate's report as the failure text (no traceback)."""
        if isinstance(excinfo.value, RegressFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test comes from: the experiment file."""
        return self.spec, None, f"workbench regress {self.spec}"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--workbench-regress`` and its options."""
    group = parser.getgroup("workbench-regress", "compaction workbench regression gate")
    group.addoption("--workbench-regress", action="store_true", default=False,
                    help="also run the workbench regression gate (replayed summaries and "
                         "metrics against the committed baseline) as a test")
    group.addoption("--workbench-regress-spec", default=None, metavar="SPEC",
                    help=f"experiment file of the gate (default: {DEFAULT_SPEC})")
    group.addoption("--workbench-regress-baseline", default=None, metavar="DIR",
                    help=f"baseline folder (default: {BASELINE_ROOT}/<experiment name>)")
    parser.addini("workbench_regress_spec", default=DEFAULT_SPEC,
                  help="experiment file of the workbench regression gate, under the rootdir")


def _path(config: pytest.Config, option: str | None, fallback: str | None) -> Path | None:
    if option is not None:
        path = Path(option)
        return path if path.is_absolute() else config.invocation_params.dir / path
    return None if fallback is None else config.rootpath / fallback


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselection, so they apply to the gate too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Append the gate item when ``--workbench-regress`` is given."""
    if not config.getoption("workbench_regress"):
        return
    spec = _path(config, config.getoption("workbench_regress_spec"),
                 str(config.getini("workbench_regress_spec")))
    baseline = _path(config, config.getoption("workbench_regress_baseline"), None)
    if baseline is None:
        baseline = _default_baseline(config, spec)
    assert spec is not None
    items.append(RegressItem.from_parent(session, name=ITEM_NAME, nodeid=ITEM_NAME, spec=spec,
                                         baseline=baseline))


def _default_baseline(config: pytest.Config, spec: Path | None) -> Path | None:
    # The baseline is named after the experiment; an unreadable spec is reported by the item.
    # only with --workbench-regress: the spec's model loads pydantic and jinja2 (see runtest)
    from workbench.harness import Experiment

    try:
        name = Experiment.from_toml(spec).name if spec is not None else None
    except WorkbenchError:
        return None
    return None if name is None else config.rootpath / BASELINE_ROOT / name
