"""Functional probes: questions about a session, answered from a context, graded.

String probes (`workbench.metrics`) ask whether text survived in a summary; these ask whether an
agent can *use* what it was left with. Everything here needs no model; the harness's run stage
sends the questions to an answerer, judge or author model (``harness/run/_qa_run.py``).

Layers, smallest first:

- `_questions`: `Question` and `QuestionSet` as data (JSON files under ``qa/questions/``);
- `_normalize`: one normaliser per answer type, and the one matching rule (`contains`);
- `_grade`: deterministic grades (exact, list share, word overlap);
- `_transcript`: what a transcript says (files modified, tool calls' main arguments);
- `_cloze`, `_spread`: fill-in-the-blank cutting, and the ends-and-middles-first order;
- `_build`: questions from a session's manifest, else its transcript (`build_questions`);
- `extractors/` and `_from_transcript`: a recording's questions from its transcript alone,
  one extractor per kind of fact, each question with its evidence;
- `_evidence`: the check that keeps a question only when its answer is verbatim in the history;
- `_units`: any text read into labelled statements, whatever its layout (headings, key/value
  lines, JSON, tables, tags, prose);
- `_lookup`, `_lookup_read`: the offline ``lookup`` answerer (retrieval, not a model) and
  what it reads out of the passages it chose;
- `_actions`: the recorded next action at a compaction boundary, and agreement with it;
- `_prompts`, `_judge`, `_author`: what answerer, judge and author models are asked, and the
  parsers of their replies (`ReplyFormatError` for a reply that does not follow the format);
- `_score`: a cell's ``qa_*`` metrics from its answered questions.
"""

from workbench.probes._actions import NextActionCase, actions_match, next_action_case, parse_action
from workbench.probes._author import (
    AUTHOR_SYSTEM,
    author_message,
    ground_authored,
    parse_author_reply,
)
from workbench.probes._build import (
    DEFAULT_PER_SESSION,
    MANIFEST_KEYS,
    build_questions,
    is_recording,
    select_questions,
)
from workbench.probes._evidence import check_evidence, locate_evidence, message_texts
from workbench.probes._from_transcript import (
    DEFAULT_MAX_QUESTIONS,
    DEFAULT_MIN_QUESTIONS,
    TOKENS_PER_QUESTION,
    build_transcript_questions,
    question_target,
    transcript_candidates,
)
from workbench.probes._grade import (
    GRADING_AUDIT,
    OVERLAP_PASS,
    grade_answer,
    is_unknown,
    stale_only,
)
from workbench.probes._judge import (
    DIMENSIONS,
    JUDGE_SYSTEM,
    JudgeGrade,
    judge_message,
    parse_judge_reply,
)
from workbench.probes._lookup import LookupAnswerer
from workbench.probes._normalize import (
    NORMALIZERS,
    contains,
    normalize_choice,
    normalize_command,
    normalize_error,
    normalize_number,
    normalize_path,
    normalize_text,
    path_matches,
)
from workbench.probes._prompts import ANSWERER_SYSTEM, next_action_system, question_message
from workbench.probes._questions import (
    AUTHOR_SOURCE,
    GRADERS,
    KINDS,
    Evidence,
    Question,
    QuestionSet,
    question_set_key,
    read_question_set,
    write_question_set,
)
from workbench.probes._score import (
    CALIBRATION_COUNTS,
    JUDGE_PASS,
    QA_METRICS,
    AnsweredQuestion,
    NextActionResult,
    calibration,
    qa_metrics,
)
from workbench.probes._transcript import ToolAction, action_of, main_argument, modified_files

__all__ = [
    "ANSWERER_SYSTEM", "AUTHOR_SOURCE", "AUTHOR_SYSTEM", "AnsweredQuestion", "CALIBRATION_COUNTS",
    "JUDGE_PASS",
    "DEFAULT_MAX_QUESTIONS", "DEFAULT_MIN_QUESTIONS", "DEFAULT_PER_SESSION", "DIMENSIONS",
    "Evidence", "GRADERS", "GRADING_AUDIT", "JUDGE_SYSTEM", "JudgeGrade", "KINDS", "LookupAnswerer",
    "MANIFEST_KEYS", "NORMALIZERS", "NextActionCase", "NextActionResult", "OVERLAP_PASS",
    "QA_METRICS", "Question", "QuestionSet", "TOKENS_PER_QUESTION", "ToolAction", "action_of",
    "actions_match", "calibration", "author_message", "build_questions", "build_transcript_questions",
    "check_evidence", "contains", "grade_answer", "ground_authored", "is_recording", "is_unknown",
    "judge_message", "locate_evidence", "main_argument", "message_texts", "modified_files",
    "next_action_case", "next_action_system", "normalize_choice", "normalize_command",
    "normalize_error", "normalize_number", "normalize_path", "normalize_text", "parse_action",
    "parse_author_reply", "parse_judge_reply", "path_matches", "qa_metrics", "question_message",
    "question_set_key", "question_target", "read_question_set", "select_questions", "stale_only",
    "transcript_candidates", "write_question_set",
]
