"""`Usage.to_dict` / `Usage.from_dict`: the round trip a recorded reply's usage takes."""

from __future__ import annotations

from workbench.compaction import Usage


def test_a_usage_survives_its_dict() -> None:
    usage = Usage(model="m", input_tokens=10, output_tokens=3, total_tokens=13,
                  cache_read_input_tokens=0, cost=0.25, extra={"finish_reason": "stop"})
    assert Usage.from_dict(usage.to_dict()) == usage


def test_unknown_keys_join_extra_and_missing_fields_are_unreported() -> None:
    usage = Usage.from_dict({"model": "m", "input_tokens": 5, "extra": {"a": 1}, "b": [2]})
    assert usage == Usage(model="m", input_tokens=5, extra={"a": 1, "b": [2]})


def test_a_field_of_another_json_type_reads_as_unreported() -> None:
    usage = Usage.from_dict({"model": 7, "input_tokens": "5", "output_tokens": True,
                             "cost": "0.1", "extra": ["x"]})
    assert usage == Usage()
