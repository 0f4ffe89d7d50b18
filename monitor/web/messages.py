"""Short, plain messages for pydantic validation errors at the edge (receivers, web config)."""

from __future__ import annotations

from typing import Any


def field_message(err: Any) -> str:
    """``at most 200 characters (got 201)`` rather than pydantic's generic wording."""
    kind, ctx, given = str(err["type"]), err.get("ctx") or {}, err.get("input")
    if kind in ("string_too_long", "too_long") and "max_length" in ctx:
        got = f" (got {len(given)})" if isinstance(given, str | list | dict) else ""
        unit = "characters" if isinstance(given, str) else "items"
        return f"at most {ctx['max_length']} {unit}{got}"
    if kind in ("string_too_short", "too_short") and "min_length" in ctx:
        return f"at least {ctx['min_length']} characters" if isinstance(given, str) else "must not be empty"
    if kind == "less_than_equal":
        return f"at most {ctx.get('le')} (got {given})"
    if kind == "greater_than_equal":
        return f"at least {ctx.get('ge')} (got {given})"
    if kind == "string_pattern_mismatch":
        return f"does not match {ctx.get('pattern')}"
    return str(err["msg"]).removeprefix("Value error, ")
