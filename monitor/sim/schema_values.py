"""Values that satisfy a tool's JSON schema, for simulated tool-call arguments."""

from __future__ import annotations

import re
from typing import Any

_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})\b")


def arguments_for(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """An object valid against ``schema`` (an object schema); strings borrow a proper noun from ``prompt``."""
    value = value_for(schema, "arguments", prompt, depth=0)
    return value if isinstance(value, dict) else {}


def value_for(schema: dict[str, Any], name: str, prompt: str, depth: int) -> Any:
    """A value valid against ``schema`` (types, enums, const, required properties, min/max)."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return value_for(schema[key][0], name, prompt, depth)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(part)
        return value_for(merged, name, prompt, depth)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _by_type(str(kind), schema, name, prompt, depth)


def _by_type(kind: str, schema: dict[str, Any], name: str, prompt: str, depth: int) -> Any:
    if kind == "object":
        props: dict[str, Any] = schema.get("properties") or {}
        wanted = schema.get("required") or list(props)
        return {k: value_for(props.get(k, {}), k, prompt, depth + 1) for k in wanted if depth < 8}
    if kind == "array":
        n = max(1, int(schema.get("minItems", 1)))
        return [value_for(schema.get("items") or {}, name, prompt, depth + 1) for _ in range(n)]
    if kind == "integer":
        v = max(1, int(schema.get("minimum", 1)))
        return min(v, int(schema.get("maximum", v)))
    if kind == "number":
        lo, hi = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 3.0))
        return (lo + hi) / 2
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string_for(schema, name, prompt)


def _string_for(schema: dict[str, Any], name: str, prompt: str) -> str:
    fmt = schema.get("format")
    if fmt == "date":
        return "2026-01-15"
    if fmt == "date-time":
        return "2026-01-15T12:00:00Z"
    proper = _PROPER.findall(prompt)
    text = proper[0] if proper else f"example {name}"
    lo, hi = int(schema.get("minLength", 0)), int(schema.get("maxLength", 10_000))
    text = text.ljust(lo, "x")[:hi]
    return text
