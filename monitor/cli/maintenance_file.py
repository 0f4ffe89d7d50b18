"""What ``m3mon maintenance add`` checks and writes: one window from options, a maintenance file.

A window given on the command line is validated by the same
:class:`~monitor.maintenance.MaintenanceSpec` the config uses; every problem becomes one line
naming the option (``--rrule: not an RFC 5545 recurrence rule …``). A maintenance file is
appended to as text when its ``maintenance:`` list is the file's last block, so comments and
layout survive; otherwise it is written again from its data. Either way the whole resulting
file is validated before it replaces the old one (temporary file + rename).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from monitor.config import CONFIG_VERSION, ConfigSpec, parse_maintenance_file
from monitor.errors import M3MonError, UsageError
from monitor.maintenance import MaintenanceSpec, problems

#: Spec field -> the ``m3mon maintenance add`` option that sets it.
OPTIONS = {
    "name": "--name",
    "start": "--start",
    "duration": "--duration",
    "end": "--end",
    "rrule": "--rrule",
    "timezone": "--timezone",
    "classes": "--class",
    "endpoints": "--endpoint",
    "reason": "--reason",
}
#: Whole-window problems (no field of their own): a phrase of the message -> the options to name.
_WHOLE = (
    ("overlap", "--rrule/--duration"),
    ("whole minutes", "--duration/--end"),
    ("'duration' and 'end'", "--duration/--end"),
    ("classes", "--class/--endpoint"),
)


def item(args: Any) -> dict[str, Any]:
    """The window as the YAML list item the user would write, keys in the documented order."""
    out: dict[str, Any] = {"name": args.name, "start": args.start}
    out.update({k: v for k in ("duration", "end", "rrule", "timezone") if (v := getattr(args, k))})
    if args.classes:
        out["classes"] = list(args.classes)
    if args.endpoints:
        out["endpoints"] = list(args.endpoints)
    if args.reason:
        out["reason"] = args.reason
    return out


def _option(loc: Sequence[str | int], message: str) -> str:
    if loc and str(loc[0]) in OPTIONS:
        return OPTIONS[str(loc[0])]
    return next((opt for phrase, opt in _WHOLE if phrase in message), "window")


def validated(raw: dict[str, Any]) -> tuple[MaintenanceSpec, dict[str, Any]]:
    """The spec and the item to write (times normalised to ISO 8601); :class:`UsageError` naming the
    option of the first problem."""
    try:
        spec = MaintenanceSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        message = str(err["msg"]).removeprefix("Value error, ")
        given = err.get("input")
        if err["type"].startswith("datetime"):
            message = f"expected an RFC 3339 time such as 2026-12-06T02:00:00+01:00, got {given!r}"
        elif err["type"].endswith(("_parsing", "_type")):
            message = f"{message[0].lower()}{message[1:]}, got {given!r}"
        elif err["type"] == "string_pattern_mismatch":
            message = f"expected lower-case letters, digits, '_', '.', '-' (at most 63), got {given!r}"
        raise UsageError(f"{_option(tuple(err['loc']), message)}: {message}") from None
    out = dict(raw)
    out["start"] = spec.start.isoformat()
    if spec.end is not None:
        out["end"] = spec.end.isoformat()
    if spec.rrule is not None:
        out["rrule"] = spec.rrule
    return spec, out


def check_names(spec: MaintenanceSpec, others: Sequence[MaintenanceSpec], config: ConfigSpec | None) -> None:
    """Unknown class or endpoint (with a config), duplicate name: :class:`UsageError` naming the option."""
    if config is None:
        if any(o.name == spec.name for o in others):
            raise UsageError(f"--name: duplicate maintenance window {spec.name!r}")
        return
    index = len(others)
    for loc, message in problems([*others, spec], config.served()):
        if loc[0] == index:
            option = OPTIONS.get(str(loc[1]), "window") if len(loc) > 1 else "window"
            if loc[1:] == ("endpoints",):
                option = "--class/--endpoint"
            raise UsageError(f"{option}: {message}")


def read_windows(path: Path, config: ConfigSpec | None) -> tuple[str | None, list[MaintenanceSpec]]:
    """The file's text (None when it does not exist yet) and its windows, validated."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, []
    return text, parse_maintenance_file(text, str(path), config)


def dump(value: Any) -> str:
    """YAML block style, short lists inline (``classes: [chat]``), keys in the given order."""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=None, allow_unicode=True, width=4096)


def appended(text: str | None, entry: dict[str, Any]) -> str:
    """``text`` (a maintenance file, or None for a new one) with ``entry`` added to its list."""
    block = dump([entry])
    if text is None or not text.strip():
        return f"version: {CONFIG_VERSION}\nmaintenance:\n{block}"
    root = yaml.compose(text)
    if isinstance(root, yaml.MappingNode) and root.value and root.value[-1][0].value == "maintenance":
        value = root.value[-1][1]
        if isinstance(value, yaml.SequenceNode) and not value.flow_style and value.value:
            indent = " " * value.start_mark.column
            return text.rstrip("\n") + "\n" + "".join(indent + line + "\n" for line in block.splitlines())
        if isinstance(value, yaml.ScalarNode) and value.tag.endswith(":null") and not value.value:
            return text.rstrip("\n") + "\n" + block
    data = yaml.safe_load(text)
    data["maintenance"] = [*(data.get("maintenance") or []), entry]
    return dump(data)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` in one rename: a reader sees the old file or the new one."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_to_file(path: Path, entry: dict[str, Any], spec: MaintenanceSpec, config: ConfigSpec | None) -> int:
    """Append the window to the file at ``path`` (created when missing); returns its window count."""
    text, before = read_windows(path, config)
    check_names(spec, [*(config.maintenance if config else ()), *before], config)
    new_text = appended(text, entry)
    after = parse_maintenance_file(new_text, str(path), config)
    if len(after) != len(before) + 1 or after[-1] != spec:
        raise M3MonError(
            f"{path}: appending the window did not give the file plus that window; nothing written"
        )
    write_atomically(path, new_text)
    return len(after)
