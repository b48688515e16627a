"""Names, endpoints, versions, commit hashes and limits, asked as blanks on their lines."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workbench.probes.extractors import History, identifier_questions
from workbench.probes.extractors._identifiers import AGENT, OUTPUT, WRITTEN, identifiers_in
from workbench.sessions import Session

CC = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


@pytest.mark.parametrize(("text", "origin", "found"), [
    ("Now `settle_totals` and `Spotter.Telemetry.Otel` change; `Dataset` stays.", AGENT,
     [("settle_totals", "identifier"), ("Spotter.Telemetry.Otel", "identifier")]),
    ("    def get_latest_lastmod(self):\ndefmodule Spotter.Repo do", WRITTEN,
     [("get_latest_lastmod", "identifier"), ("Spotter.Repo", "identifier")]),
    ("Calls GET /api/sessions/:id then https://hexdocs.pm/telemetry/.", AGENT,
     [("/api/sessions/:id", "value"), ("https://hexdocs.pm/telemetry/", "value")]),
    ("New: opentelemetry_api 1.5.0\nAider v0.48.2-dev", OUTPUT,
     [("1.5.0", "value"), ("0.48.2-dev", "value")]),
    ("Commit 503d567 fix: Update tokenizers\nhash 7a8b9c0d is on no such line", OUTPUT,
     [("503d567", "value")]),
    ("config :spotter, Oban, max_attempts: 3, pool_size = 10", WRITTEN,
     [("3", "number"), ("10", "number")]),
    # a tool output's names and limits are a file's listing, not something the agent said
    ("`settle_totals` with timeout: 30", OUTPUT, []),
])
def test_each_kind_of_identifier_is_found_where_it_counts(text: str, origin: str,
                                                         found: list[tuple[str, str]]) -> None:
    assert [(value, kind) for value, _, kind in identifiers_in(text, origin)] == found


def test_a_name_the_agent_wrote_is_a_blank_on_its_sentence(real: Callable[[str], Session]) -> None:
    questions = identifier_questions(History.read(real("sympy__sympy-16597")))
    first = questions[0]
    assert first.text == (
        'Fill in the blank with the exact value the conversation gives (its latest value, if it '
        'changed): "Let\'s look at the content of `sympy/core/assumptions.py` around line 170 to '
        'see the `____`."')
    assert first.expected == "_assume_rules" and first.answer_type == "value"
    assert first.blank_before == "see the `"
    assert [(e.message, e.quote) for e in first.evidence] == [
        (11, "Let's look at the content of `sympy/core/assumptions.py` around line 170 to see "
             "the `_assume_rules`.")]


def test_versions_limits_and_addresses_of_a_real_session(real: Callable[[str], Session]) -> None:
    questions = {q.expected: q for q in identifier_questions(History.read(real(CC)))}
    limit = questions["3"]
    assert limit.answer_type == "number" and "max_attempts: ____" in limit.text
    assert questions["http://localhost:4318"].text.endswith(
        'tlp_endpoint: System.get_env("OTEL_EXPORTER_OTLP_ENDPOINT") || "____""')
    version = questions["1.5.0"]
    assert "OpenTelemetry API v ____," in version.text
    python = identifier_questions(History.read(real("chat-history.md#12")))
    assert [q.expected for q in python if "pytest-8.3.1" in q.text] == ["3.12.4"]


def test_a_blank_whose_words_lead_elsewhere_to_another_value_is_not_asked(
        real: Callable[[str], Session]) -> None:
    history = History.read(real(CC))
    for q in identifier_questions(history):
        lead = q.blank_before.lower()
        at = history.corpus_lower.find(lead)
        assert at >= 0, q.id
        while at >= 0:  # every place these words stand, the blank's answer follows
            rest = history.corpus_lower[at + len(lead):].lstrip()
            assert rest.startswith(q.expected.lower()), (q.id, rest[:40])
            at = history.corpus_lower.find(lead, at + 1)
