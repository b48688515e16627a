"""The one JSON string scanner (`workbench.compaction._json_scan`) and its four readers."""

from __future__ import annotations

import pytest

from workbench.compaction._candidates import naive_json_candidates
from workbench.compaction._json_decode import repair_truncated_json
from workbench.compaction._json_scan import brackets_outside_strings, string_end
from workbench.models._grammar import close_truncated_json
from workbench.sessions.importers._readers import open_brackets, too_deep_at


def test_brackets_outside_strings_skips_every_bracket_inside_a_string() -> None:
    text = '{"a": [1, "x]}{"], "b": {}}'
    assert list(brackets_outside_strings(text)) == [
        (0, "{"), (6, "["), (16, "]"), (24, "{"), (25, "}"), (26, "}")]


def test_escaped_quotes_and_backslashes_do_not_end_a_string() -> None:
    # "a\"{" holds an escaped quote; "b\\" ends with an escaped backslash, so its quote closes it.
    text = r'["a\"{", "b\\", {}]'
    assert list(brackets_outside_strings(text)) == [(0, "["), (16, "{"), (17, "}"), (18, "]")]


def test_nested_quotes_in_a_string_value() -> None:
    text = r'{"q": "she said \"[no]\" twice"}'
    assert list(brackets_outside_strings(text)) == [(0, "{"), (31, "}")]


def test_an_unterminated_string_ends_the_scan_at_the_end_of_the_text() -> None:
    text = '{"a": ["open {'
    assert list(brackets_outside_strings(text)) == [(0, "{"), (6, "["), (14, '"')]


def test_a_lone_trailing_backslash_is_where_the_open_string_stops() -> None:
    text = '{"a": "cut\\'
    assert list(brackets_outside_strings(text)) == [(0, "{"), (10, '"')]
    assert string_end(text, 7) == 10


@pytest.mark.parametrize(("text", "after_quote", "end"), [
    ('"abc"', 1, 4),
    (r'"a\"b"', 1, 5),
    (r'"a\\"', 1, 4),
    ('"\\u00e9x"', 1, 8),
    ('"never closed', 1, 13),
    ('""', 1, 1),
])
def test_string_end_is_the_index_of_the_closing_quote(text: str, after_quote: int,
                                                      end: int) -> None:
    assert string_end(text, after_quote) == end


def test_start_begins_the_scan_later() -> None:
    assert list(brackets_outside_strings('[] {"]"}', start=2)) == [(3, "{"), (7, "}")]


def test_the_four_readers_agree_on_the_same_text() -> None:
    text = '{"a": "x}\\"]", "b": [{"c": "open'
    assert list(open_brackets(text)) == [(0, 1), (20, 2), (21, 3)]
    assert too_deep_at(text, limit=2) == 21
    assert repair_truncated_json(text) == text + '"}]}'
    assert close_truncated_json(text) == text + '"}]}'
    assert naive_json_candidates('{"k": "}{"} tail') == ['{"k": "}{"}']
