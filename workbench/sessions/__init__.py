"""Recorded sessions: `load_session`, `load_sessions`, `Session`, importers by format.

Layers: `_session` (the dataclass), `_registry` (``@importer`` and detection), `_load` (the
entry points), `_limits` (record, file and message limits, checked before anything is
tokenized), `importers/` (one module per format), `_inspect` (per-session figures), `_generate`
(realistic sessions with planted, checkable facts).
"""

from workbench.errors import SessionFormatError
from workbench.sessions._generate import PlantedFact, generate_dataset, generate_session
from workbench.sessions._inspect import format_inspection, inspect_session
from workbench.sessions._limits import MAX_FILE_BYTES, MAX_MESSAGES, MAX_RECORD_BYTES
from workbench.sessions._load import load_session, load_sessions
from workbench.sessions._registry import IMPORTERS, detect_format, importer
from workbench.sessions._session import Session, as_int, meta_list, meta_records, prefix_session
from workbench.sessions.importers._goose_db import list_goose_sessions, write_goose_db_session

__all__ = ["IMPORTERS", "MAX_FILE_BYTES", "MAX_MESSAGES", "MAX_RECORD_BYTES", "PlantedFact", "Session", "SessionFormatError", "as_int",
           "detect_format",
           "format_inspection", "generate_dataset", "generate_session", "importer",
           "inspect_session", "list_goose_sessions", "load_session", "load_sessions", "meta_list",
           "meta_records",
           "prefix_session", "write_goose_db_session"]
