"""Where a problem in a YAML file is, and how to say it: ``FILE:LINE: yaml.path: message``.

Shared by everything the user writes in YAML: the configuration and its maintenance file
(:mod:`monitor.config`) and the replay profile (:mod:`monitor.replay.profile`). Line numbers
come from PyYAML's node marks; messages turn pydantic's errors into what was expected and what
was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import ValidationError

from monitor.errors import ConfigError

#: A problem's place (keys and list indexes) and its message.
Problem = tuple[tuple[str | int, ...], str]


def read_yaml(text: str, source: str) -> tuple[Any, Any]:
    """(node tree for line numbers, data) of YAML ``text``; :class:`ConfigError` naming the line if
    it is not YAML."""
    try:
        return yaml.compose(text), yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError([f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None


def format_path(loc: tuple[str | int, ...]) -> str:
    """``request_classes[0].slos[1].objective`` from pydantic's location."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def line_of(root: yaml.Node | None, loc: tuple[str | int, ...]) -> int | None:
    """1-based line of the deepest YAML node that ``loc`` reaches."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        nxt: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    nxt, line = value, key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def message(err: Any, pattern_words: Mapping[str, str]) -> str:
    """One pydantic error in words; ``pattern_words`` says what a value failing a pattern should
    have looked like."""
    kind, msg, given = str(err["type"]), str(err["msg"]), err.get("input")
    if kind == "extra_forbidden":
        return "unknown key (not part of m3mon/v1)"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        return f"expected {msg.removeprefix('Input should be ')}, got {given!r}"
    if kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern", "")
        return f"expected {pattern_words.get(pattern, 'a value matching ' + pattern)}, got {given!r}"
    if kind == "too_short":
        return f"expected at least {err.get('ctx', {}).get('min_length', 1)} item(s), got none"
    msg = str(msg).removeprefix("Value error, ")
    if kind.endswith(("_parsing", "_type")) or kind.startswith(("greater", "less")):
        return f"{msg[0].lower()}{msg[1:]}, got {given!r}"
    return msg


def validation_problems(
    exc: ValidationError, pattern_words: Mapping[str, str] | None = None
) -> list[Problem]:
    return [(tuple(e["loc"]), message(e, pattern_words or {})) for e in exc.errors()]


def problem_lines(problems: list[Problem], root: Any, source: str) -> list[str]:
    """``FILE:LINE: path: message`` for every problem."""
    return [f"{source}:{line_of(root, loc)}: {format_path(loc)}: {msg}" for loc, msg in problems]
