"""mini-swe-agent trajectories (``trajectory_format: "mini-swe-agent-1"``).

mini-swe-agent has no structured tool calls: an assistant message whose content holds exactly
one fenced ```` ```bash ```` block (the same rule mini-swe-agent applies) is a call. Mapping:

- the ``system`` message becomes ``meta["system_prompt"]``;
- an assistant message becomes, in order, a `ThinkingContent` (the provider's ``reasoning``
  from ``extra.response``, when recorded), a text item (the THOUGHT, i.e. the content without
  the bash block) and a `ToolRequest` named ``bash`` with ``{"command": <block>}`` and the
  deterministic id ``call_<n>``;
- the user message right after a call is its `ToolResponse` (the full observation text):
  ``<returncode>N</returncode>`` outputs are errors when N != 0, the timeout message is an
  error, and the final raw ``git diff`` answers the submit command;
- an assistant message with zero or several bash blocks is plain text, and the format-error
  reply that follows stays user text (nothing ran);
- per-message ``extra.response.usage`` is summed into ``meta["usage"]``; the SWE-bench
  ``logs/<id>/report.json`` beside the ``trajs`` folder goes to ``meta["report"]``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._model import Usage
from workbench.messages import Message, ThinkingContent
from workbench.sessions._registry import Errors, importer
from workbench.sessions._session import Session
from workbench.sessions.importers._agent_common import (
    Problems,
    as_dict,
    read_json,
    require_key,
    sum_usage,
    unknown_message,
    usage_from_openai,
)
from workbench.sessions.importers._readers import loads

FORMAT = "mini-swe-agent"
EXPECTED = 'a mini-swe-agent trajectory JSON object with "messages"'
BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
RETURNCODE = re.compile(r"\A\s*<returncode>(-?\d+)</returncode>")
TIMEOUT_PREFIX = "The last command <command>"


def _detect(path: Path, head: str) -> bool:
    if head.lstrip()[:1] != "{":
        return False
    return ('"mini_version"' in head or '"trajectory_format": "mini-swe-agent' in head
            or "minisweagent." in head)


def observation_is_error(text: str) -> bool:
    """True for a non-zero return code or a killed (timed-out) command."""
    m = RETURNCODE.match(text)
    if m:
        return int(m.group(1)) != 0
    return text.startswith(TIMEOUT_PREFIX)


def _report_path(path: Path, instance_id: str) -> Path:
    # trajs/<id>/<id>.traj.json -> logs/<id>/report.json two folders up.
    return path.parent.parent.parent / "logs" / instance_id / "report.json"


@importer(FORMAT, detect=_detect, description="mini-swe-agent trajectory JSON")
def load_mini_swe_agent(path: Path, errors: Errors = "raise", **select: object) -> list[Session]:
    """Read one mini-swe-agent trajectory into a `Session`."""
    data = read_json(path, EXPECTED)
    records = require_key(path, data, "messages", list, EXPECTED)
    doc = as_dict(data)  # require_key refused anything but an object
    problems = Problems(path, errors)
    info = as_dict(doc.get("info"))
    model = str(as_dict(as_dict(info.get("config")).get("model")).get("model_name") or "")
    messages: list[Message] = []
    meta: JSONObject = {}
    usages: list[Usage] = []
    pending: str | None = None
    calls = created = 0

    for i, rec in enumerate(records):
        where = f"messages[{i}]"
        if not isinstance(rec, dict) or not isinstance(rec.get("content"), (str, type(None))):
            problems.bad(where, "a message without string content",
                         expected="an object with role and content (a string)")
            continue
        role, text = rec.get("role"), rec.get("content") or ""
        response = as_dict(rec.get("extra")).get("response")
        if isinstance(response, dict) and isinstance(stamp := response.get("created"), int):
            created = stamp
        if role == "system" and "system_prompt" not in meta:
            meta["system_prompt"] = text
        elif role == "assistant":
            msg = Message(role="assistant", created=created)
            reasoning = _reasoning(response)
            if reasoning:
                msg.content.append(ThinkingContent(thinking=reasoning, signature=""))
            blocks = list(BASH_BLOCK.finditer(text))
            if len(blocks) == 1:
                block = blocks[0]
                thought = (text[:block.start()] + text[block.end():]).strip()
                if thought:
                    msg.with_text(thought)
                calls += 1
                pending = f"call_{calls}"
                msg.with_tool_request(pending, "bash", {"command": block.group(1)})
            else:
                msg.with_text(text)
            if isinstance(response, dict):
                usages.append(usage_from_openai(response.get("usage"),
                                                str(response.get("model") or model)))
            messages.append(msg)
        elif role in ("user", "system"):
            msg = Message(role="user", created=created)
            if pending is not None and role == "user":
                msg.with_tool_response(pending, text, is_error=observation_is_error(text))
                pending = None
            else:
                msg.with_text(text)
            messages.append(msg)
        else:
            messages.append(unknown_message(rec, created=created))

    for key in ("instance_id", "trajectory_format"):
        if key in doc:
            meta[key] = doc[key]
    for key in ("exit_status", "submission", "model_stats", "mini_version"):
        if key in info:
            meta[key] = info[key]
    if model:
        meta["models"] = [model]
    usage = sum_usage(usages)
    if usage is not None:
        meta["usage"] = usage
    instance_id = str(doc.get("instance_id") or path.name.removesuffix(".traj.json"))
    report = _read_report(_report_path(path, instance_id), instance_id)
    if report is not None:
        meta["report"] = report
    problems.into(meta)
    return [Session(id=instance_id, format=FORMAT, path=str(path), messages=messages, meta=meta)]


def _reasoning(response: JSONValue) -> str:
    if not isinstance(response, dict):
        return ""
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    message = choices[0].get("message") or {}
    value = message.get("reasoning") if isinstance(message, dict) else None
    return value if isinstance(value, str) else ""


def _read_report(path: Path, instance_id: str) -> JSONObject | None:
    if not path.is_file():
        return None
    try:
        report = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # an unreadable companion report does not spoil the trajectory
    # SWE-bench harness reports are sometimes keyed by instance id.
    if isinstance(report, dict) and instance_id in report and isinstance(report[instance_id], dict):
        report = report[instance_id]
    return report if isinstance(report, dict) else None
