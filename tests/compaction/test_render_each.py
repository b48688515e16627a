"""Several renders of one template in one request: each answer as it comes, each render under
its own time limit, and the summaries of a tune's points rendered at once and remembered,
exactly as one render each would make them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from workbench._memo import RunMemo, run_memo, use_memo
from workbench.compaction import RenderLimits, _sandbox, _sandbox_pool, render
from workbench.compaction._reuse import (
    expect_points,
    parsed_reply,
    remembered_summary,
    render_summary,
    render_summary_async,
)
from workbench.errors import TemplateError

REPLY = '```json\n{"user_intent": ["ship the parser", "fix the build"], "current_work": "tests"}\n```'
SUMMARY = "{{ user_intent[:limit] | join(', ') }} / {{ 12 // split }}"
SLOW = ("{% if slow %}{% for a in range(9999) %}{% for b in range(9999) %}{% endfor %}"
        "{% endfor %}{% endif %}done {{ n }}")


@pytest.fixture(autouse=True)
def _fresh_memos() -> object:
    with run_memo() as fresh:  # each test is a run of its own: nothing remembered before
        yield fresh


def _each(source: str, shared: Mapping[str, object], each: list[dict[str, object]],
          limits: RenderLimits | None = None) -> tuple[int, list[tuple[int, object]]]:
    got: list[tuple[int, object]] = []
    done = asyncio.run(_sandbox.render_each(source, shared, each, "each.md",
                                            limits or RenderLimits(),
                                            lambda i, value: got.append((i, value))))
    return done, got


def _error(source: str, context: dict[str, object]) -> str:
    with pytest.raises(TemplateError) as caught:
        render(source, context, "each.md")
    return str(caught.value)


def test_each_set_is_rendered_over_the_shared_variables_and_answered_in_order() -> None:
    done, got = _each("{{ a }}-{{ b }}", {"a": "x", "b": "0"}, [{"b": "1"}, {}, {"b": 2}])
    assert done == 3
    assert got == [(0, "x-1"), (1, "x-0"), (2, "x-2")]


def test_no_sets_send_no_request() -> None:
    assert _each("{{ a }} never compiled before", {}, []) == (0, [])
    assert render("{{ a }}", {"a": "next"}) == "next"  # nothing left unread in the pipe


def test_a_failing_set_gets_the_error_its_own_render_gives_and_the_others_still_render() -> None:
    done, got = _each("{{ 12 // d }}", {}, [{"d": 2}, {"d": 0}, {"d": 3}])
    assert done == 3
    assert [got[0], got[2]] == [(0, "6"), (2, "4")]
    assert isinstance(got[1][1], TemplateError)
    assert str(got[1][1]) == _error("{{ 12 // d }}", {"d": 0})


def test_a_source_that_does_not_compile_answers_its_error_for_every_set() -> None:
    done, got = _each("{% if %}", {}, [{}, {"x": 1}])
    assert done == 2
    assert [str(value) for _, value in got] == [_error("{% if %}", {})] * 2


def test_a_first_render_past_its_time_limit_fails_as_one_render_does() -> None:
    with pytest.raises(TemplateError, match="render time limit of 0.3 s exceeded"):
        _each(SLOW, {"n": 0}, [{"slow": True}, {}], RenderLimits(time_limit=0.3))
    assert render("{{ 2 }}", {}) == "2"  # a fresh process renders the next


def test_a_later_render_past_its_time_limit_stops_the_request_and_keeps_what_came_before(
        ) -> None:
    render("{{ 1 }}", {})
    before = [w.process.pid for w in _sandbox_pool.POOL.idle]
    done, got = _each(SLOW, {"n": 0}, [{"n": 1}, {"slow": True}, {"n": 3}],
                      RenderLimits(time_limit=0.3))
    assert done == 1
    assert got == [(0, "done 1")]
    assert not set(before) & {w.process.pid for w in _sandbox_pool.POOL.idle}  # killed
    assert render("{{ 3 }}", {}) == "3"


def _summary(params: dict[str, object]) -> str:
    summary = parsed_reply(REPLY).summary
    assert summary is not None
    return render(SUMMARY, {**summary.to_context(), **params}, "compaction_summary.md")


def _requests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = _sandbox.render_each

    async def counted(source: str, context: Mapping[str, object],
                      each: list[Mapping[str, object]], *rest: object) -> int:
        sizes.append(len(each))
        return await real(source, context, each, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_sandbox, "render_each", counted)
    return sizes


POINTS: list[dict[str, object]] = [{"limit": 1, "split": 3}, {"limit": 2, "split": 3},
                                   {"limit": 2, "split": 4}]


def test_the_expected_points_summaries_of_a_reply_render_in_one_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _requests(monkeypatch)
    expect_points(SUMMARY, [POINTS])
    summary = parsed_reply(REPLY).summary
    assert summary is not None

    first = asyncio.run(render_summary_async(REPLY, summary, SUMMARY, POINTS[1]))

    assert first == _summary(POINTS[1]) == "ship the parser, fix the build / 4"
    assert requests == [3]
    assert [remembered_summary(REPLY, SUMMARY, p) for p in POINTS] == \
        [_summary(p) for p in POINTS]
    asyncio.run(render_summary_async(REPLY, summary, SUMMARY, POINTS[2]))  # remembered
    assert requests == [3]


def test_cells_waiting_for_a_request_get_their_summaries_and_errors_from_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _requests(monkeypatch)
    broken = {"limit": 1, "split": 0}
    expect_points(SUMMARY, [[*POINTS, broken]])
    summary = parsed_reply(REPLY).summary
    assert summary is not None

    async def cells() -> list[str | BaseException]:
        return await asyncio.gather(
            *(render_summary_async(REPLY, summary, SUMMARY, p) for p in [*POINTS, broken]),
            return_exceptions=True)

    *texts, failed = asyncio.run(cells())

    assert texts == [_summary(p) for p in POINTS]
    assert requests == [4]  # the broken point's cell rendered it again on its own
    with run_memo():  # the same render without any expected point
        with pytest.raises(TemplateError) as alone:
            render_summary(REPLY, summary, SUMMARY, broken)
    assert isinstance(failed, TemplateError) and str(failed) == str(alone.value)
    assert remembered_summary(REPLY, SUMMARY, broken) is None  # never remembered


def test_the_callers_own_failing_render_raises_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _requests(monkeypatch)
    broken = {"limit": 1, "split": 0}
    expect_points(SUMMARY, [[broken, *POINTS]])
    summary = parsed_reply(REPLY).summary
    assert summary is not None

    with pytest.raises(TemplateError) as caught:
        asyncio.run(render_summary_async(REPLY, summary, SUMMARY, broken))

    assert "ZeroDivisionError" in str(caught.value)
    assert requests == [4]
    assert [remembered_summary(REPLY, SUMMARY, p) for p in POINTS] == \
        [_summary(p) for p in POINTS]


def test_a_reply_is_asked_for_once_so_a_failing_point_is_rendered_again_only_by_its_cell(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _requests(monkeypatch)
    broken = [{"limit": 1, "split": 0}, {"limit": 2, "split": 0}]
    expect_points(SUMMARY, [[*POINTS, *broken]])
    summary = parsed_reply(REPLY).summary
    assert summary is not None

    asyncio.run(render_summary_async(REPLY, summary, SUMMARY, POINTS[0]))
    for params in broken:
        with pytest.raises(TemplateError, match="ZeroDivisionError"):
            asyncio.run(render_summary_async(REPLY, summary, SUMMARY, params))

    assert requests == [5]  # each broken point's cell rendered it alone, once


def test_only_the_points_of_the_callers_group_render_with_its_reply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _requests(monkeypatch)
    expect_points(SUMMARY, [POINTS[:2], POINTS[2:]])  # two prompts: two replies per session
    summary = parsed_reply(REPLY).summary
    assert summary is not None

    asyncio.run(render_summary_async(REPLY, summary, SUMMARY, POINTS[0]))

    assert requests == [2]
    assert remembered_summary(REPLY, SUMMARY, POINTS[1]) == _summary(POINTS[1])
    assert remembered_summary(REPLY, SUMMARY, POINTS[2]) is None  # the other group's reply


def test_a_point_in_several_groups_is_rendered_with_each_but_asks_for_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _requests(monkeypatch)
    base, first, second = POINTS
    expect_points(SUMMARY, [[base, first], [base, second]])  # the baseline beside each group
    summary = parsed_reply(REPLY).summary
    assert summary is not None

    asyncio.run(render_summary_async(REPLY, summary, SUMMARY, base))  # alone
    assert requests == []
    assert remembered_summary(REPLY, SUMMARY, first) is None
    asyncio.run(render_summary_async(REPLY, summary, SUMMARY, second))  # the baseline is done
    assert requests == []

    with use_memo(RunMemo()):  # a fresh run
        expect_points(SUMMARY, [[base, first], [base, second]])
        asyncio.run(render_summary_async(REPLY, summary, SUMMARY, first))
        assert requests == [2]
        assert remembered_summary(REPLY, SUMMARY, base) == _summary(base)
        assert remembered_summary(REPLY, SUMMARY, second) is None
