"""Built-in importers; importing this package registers each of them.

Registration order is detection order: the Goose export format comes first because our own
exports carry the original recording's meta (which may look like another format).
"""

from workbench.sessions.importers import (  # noqa: F401
    _aider,
    _claude_code,
    _codex,
    _goose_db,
    _goose_json,
    _goose_jsonl,
    _mini_swe_agent,
    _openai_chat,
    _openhands,
    _swe_agent,
)
