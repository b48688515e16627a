"""Built-in importers; importing this package registers each of them.

Registration order is detection order: the Goose export format comes first because our own
exports carry the original recording's meta (which may look like another format).
"""

from workbench.sessions.importers import (  # noqa: F401
    _goose_json,
    _goose_db,
    _goose_jsonl,
    _claude_code,
    _codex,
    _openai_chat,
    _swe_agent,
    _mini_swe_agent,
    _openhands,
    _aider,
)
