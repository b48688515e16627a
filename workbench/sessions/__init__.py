"""Recorded sessions: `load_session`, `load_sessions`, `Session`, importers by format."""

from workbench.errors import SessionFormatError
from workbench.sessions._load import load_session, load_sessions
from workbench.sessions._registry import IMPORTERS, detect_format, importer
from workbench.sessions._session import Session

__all__ = ["IMPORTERS", "Session", "SessionFormatError", "detect_format", "importer",
           "load_session", "load_sessions"]
