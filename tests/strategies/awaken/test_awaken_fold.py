"""The durable fold: compaction marks on stored summaries and the committed view built from them."""

from __future__ import annotations

import pytest

from tests.strategies.awaken.helpers import assistant, texts, tool, user
from workbench.errors import ConfigError
from workbench.messages import Message
from workbench.strategies.awaken import (
    CompactionMark,
    compaction_mark,
    effective_committed_view,
    effective_messages,
    stamp_compaction_mark,
    strip_unpaired_tool_calls,
    summary_message,
    with_compaction_mark,
)


def records(n: int) -> list[Message]:
    """`n` committed records r1..rn (seq = position)."""
    return [user(f"r{i}", id=f"r{i}") if i % 2 else assistant(f"r{i}", id=f"r{i}")
            for i in range(1, n + 1)]


def marked(name: str, start: int, end: int) -> Message:
    return with_compaction_mark(summary_message(name), CompactionMark(start, end))


def labels(messages: list[Message]) -> list[str]:
    return [t.removeprefix("<conversation-summary>\n").removesuffix("\n</conversation-summary>")
            for t in texts(messages)]


def test_effective_no_compaction_passes_through() -> None:
    log = records(5)
    assert effective_messages(log) == log


def test_effective_single_interval_replaces_and_keeps_tail() -> None:
    assert labels(effective_messages([*records(8), marked("S", 1, 6)])) == ["S", "r7", "r8"]


def test_effective_multiple_non_adjacent_intervals_ordered() -> None:
    log = [*records(8), marked("A", 1, 2), marked("B", 5, 6)]
    assert labels(effective_messages(log)) == ["A", "r3", "r4", "B", "r7", "r8"]


def test_effective_interval_to_end_keeps_no_tail() -> None:
    assert labels(effective_messages([*records(4), marked("S", 1, 4)])) == ["S"]


def test_effective_cumulative_prefix_largest_summary_wins() -> None:
    log = [*records(4), marked("narrow", 1, 2), *records(7)[4:], marked("wide", 1, 6)]
    assert labels(effective_messages(log)) == ["wide", "r6", "r7"]


def test_of_two_equal_intervals_the_later_summary_wins() -> None:
    log = [*records(4), marked("first", 1, 3), marked("second", 1, 3)]
    assert labels(effective_messages(log)) == ["second", "r4"]


def test_effective_committed_view_folds_marks_and_strips_unpaired_calls() -> None:
    call = assistant("calling", ["c1", "c2"], id="call")
    log = [*records(4), marked("S", 1, 4), call, tool("c1", "done"), tool("zz", "orphan")]
    view = effective_committed_view(log)
    assert labels(view) == ["S", "calling", "done"]
    assert [r.id for r in view[1].tool_requests()] == ["c1"]
    assert len(log[5].tool_requests()) == 2, "the stored record is unchanged"


def test_strip_unpaired_tool_calls_drops_an_assistant_left_empty() -> None:
    view = strip_unpaired_tool_calls([user("go"), assistant("", ["c9"]), assistant("ok")])
    assert labels(view) == ["go", "ok"]


def test_from_message_projects_metadata_compaction_mark() -> None:
    summary = marked("S", 1, 6)
    back = Message.from_goose(summary.to_goose())
    assert compaction_mark(back) == CompactionMark(1, 6)
    assert summary.to_goose()["metadata"]["compactionMark"] == {"fromSeq": 1, "toSeq": 6}
    assert compaction_mark(user("plain")) is None


def test_stamp_compaction_marks_resolves_boundary_seq_at_commit_time() -> None:
    committed = records(5)
    stamped = stamp_compaction_mark(committed, summary_message("S"), "r3")
    assert compaction_mark(stamped) == CompactionMark(1, 3)


def test_stamp_compaction_marks_skips_when_boundary_absent_from_committed() -> None:
    summary = summary_message("S")
    assert compaction_mark(stamp_compaction_mark(records(3), summary, "later")) is None


@pytest.mark.parametrize(("mark", "own", "error"), [
    (CompactionMark(0, 3), None, "sequence numbers start at 1"),
    (CompactionMark(4, 3), None, "empty interval"),
    (CompactionMark(1, 5), 5, "covers the summary's own seq 5"),
])
def test_storage_rejects_bad_marks(mark: CompactionMark, own: int | None, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        with_compaction_mark(summary_message("S"), mark, own)
