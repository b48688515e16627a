"""Redaction of log records: a filter on every handler, so no library's log line carries a
secret (see `install_log_redaction`)."""

from __future__ import annotations

import logging

from workbench._redact._mask import redact

__all__ = ["RedactingFilter", "install_log_redaction"]


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (arguments merged in first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is logging's own problem
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_FILTER = RedactingFilter()


def install_log_redaction() -> int:
    """Add the redacting filter to every handler of every logger known now (idempotent).

    Handler filters run for records of child loggers too (logger filters do not), so this
    covers the workbench's, litellm's and the root logger's output.

    Returns:
        How many handlers got the filter by this call.
    """
    loggers: list[logging.Logger] = [logging.getLogger()]
    loggers += [lg for lg in logging.root.manager.loggerDict.values()
                if isinstance(lg, logging.Logger)]
    handlers = [h for logger in loggers for h in logger.handlers]
    if logging.lastResort is not None:  # prints WARNING+ when no handler is configured
        handlers.append(logging.lastResort)
    added = 0
    for handler in handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
            added += 1
    return added
