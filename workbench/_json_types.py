"""Names for JSON-shaped data, so a signature says what it carries instead of `Any`.

A value decoded from JSON (a session file, a provider's reply, a results row's JSON column) is
one of a handful of shapes; `JSONValue` names them all, recursively. Code that reads such a value
narrows it (`isinstance`) where it needs one shape, which is where a malformed input gets its
clear error. pydantic models use pydantic's own `JsonValue`, which validates the same shapes.
"""

from __future__ import annotations

from typing import TypeAlias, Union

__all__ = ["JSONObject", "JSONScalar", "JSONValue"]

JSONScalar: TypeAlias = str | int | float | bool | None
"""A JSON leaf: string, number, true/false or null."""

JSONValue: TypeAlias = Union[JSONScalar, list["JSONValue"], dict[str, "JSONValue"]]
"""Any JSON value, nested to any depth."""

JSONObject: TypeAlias = dict[str, JSONValue]
"""A decoded JSON object."""
