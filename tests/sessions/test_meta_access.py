"""Reading `Session.meta` (decoded JSON): `meta_list`, `meta_records` and `as_int` narrow it."""

from __future__ import annotations

import pytest

from workbench._json_types import JSONValue
from workbench.sessions import Session, as_int, meta_list, meta_records


def _session(**meta: JSONValue) -> Session:
    return Session(id="s", format="generated", path="s.json", messages=[], meta=dict(meta))


def test_meta_list_is_the_recorded_list_itself_or_empty() -> None:
    warnings = ["a", 1]
    session = _session(warnings=warnings, models="gpt", usage={"input": 1})
    assert meta_list(session, "warnings") is warnings  # appending to it writes the meta
    assert meta_list(session, "models") == []  # not a list
    assert meta_list(session, "usage") == []
    assert meta_list(session, "missing") == []


def test_meta_records_keeps_the_objects_of_a_list() -> None:
    facts = [{"id": "f1"}, "stray", None, {"id": "f2"}]
    assert meta_records(_session(planted_facts=facts), "planted_facts") == [{"id": "f1"},
                                                                            {"id": "f2"}]
    assert meta_records(_session(planted_facts={"id": "f1"}), "planted_facts") == []


def test_as_int_reads_numbers_and_numeric_text_and_refuses_other_shapes() -> None:
    assert (as_int(3), as_int(2.9), as_int("12"), as_int(True)) == (3, 2, 12, 1)
    with pytest.raises(TypeError, match=r"not a number: \[1\]"):
        as_int([1])
    with pytest.raises(TypeError, match="not a number: None"):
        as_int(None)
    with pytest.raises(ValueError):
        as_int("twelve")
