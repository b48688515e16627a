"""The JSON a probe model's reply holds: a fenced block, else the outermost brackets.

The probe author answers with a list and the judge with an object; both replies are read the
same lenient way, and a reply without valid JSON is a `ReplyFormatError` naming who sent it.
"""

from __future__ import annotations

import json
import re

from workbench._json_types import JSONValue
from workbench.errors import ReplyFormatError

_FENCES = {
    "[]": re.compile(r"```(?:json)?\s*(\[.*?\])\s*```", re.DOTALL),
    "{}": re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL),
}
_WHAT = {"[]": "JSON list", "{}": "JSON object"}


def json_in_reply(text: str, brackets: str, who: str) -> JSONValue:
    """Parse the JSON value `text` holds between `brackets` (``"[]"`` or ``"{}"``).

    Args:
        text: The model's reply.
        brackets: The opening and closing bracket of the expected value.
        who: The sender, named in errors (``"the judge"``).

    Raises:
        ReplyFormatError: no such value in the reply, or it is not valid JSON.
    """
    fenced = _FENCES[brackets].search(text)
    opening, closing = brackets[0], brackets[1]
    body = fenced.group(1) if fenced else text[text.find(opening):text.rfind(closing) + 1]
    if not body:
        raise ReplyFormatError(f"{who}'s reply holds no {_WHAT[brackets]}")
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyFormatError(f"{who}'s reply is not valid JSON ({exc.msg})") from None
