"""``m3mon maintenance add|list``: plan maintenance windows and see when they run (docs/maintenance.md).

``add`` checks one window (and, with ``-c``, its class and endpoint names against the config)
and prints it as the YAML list item to paste under ``maintenance:``; it edits nothing unless
told: ``--write`` appends it to the config's ``maintenance_file``, ``--file F`` to ``F`` (created
with ``version: m3mon/v1`` when missing), refusing a duplicate name and writing atomically. The
service reads that file again on every reload. ``list`` prints every occurrence overlapping
``(now - since, now + until]`` with its state (past, in progress, planned). Exit status 0, 2 on a
bad option, name or config, 1 when the file cannot be written.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.config import ConfigSpec
    from monitor.maintenance import MaintenanceSpec, Occurrence
    from monitor.model import Model


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "maintenance",
        help="plan maintenance windows (excluded from every SLI) and list when they run",
        description="Maintenance windows: events inside them count in no SLI. See docs/maintenance.md.",
    )
    actions = p.add_subparsers(dest="maintenance_command", metavar="ACTION", required=True)
    _register_add(actions)
    ls = actions.add_parser(
        "list",
        help="every occurrence from --since ago to --until ahead, with its state",
        description="List the occurrences of the config's windows (and its maintenance_file's) that "
        "overlap (now - SINCE, now + UNTIL], in UTC, oldest first.",
    )
    ls.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    ls.add_argument("--since", default="7d", metavar="DURATION", help="how far back (default 7d)")
    ls.add_argument("--until", default="7d", metavar="DURATION", help="how far ahead (default 7d)")
    ls.add_argument("--class", dest="request_class", metavar="CLASS", help="only windows touching CLASS")
    ls.add_argument(
        "--now", metavar="TIME", help="ISO 8601 time or Unix seconds to list around (default: now)"
    )
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=run_list)


def _register_add(actions: Any) -> None:
    add: argparse.ArgumentParser = actions.add_parser(
        "add",
        help="check a window and print its YAML, or append it to a maintenance file",
        description="Check one maintenance window. Without --write or --file, print the YAML list item "
        "to paste under 'maintenance:' and edit nothing.",
    )
    add.add_argument("--name", required=True, help="window name (lower case, digits, '_', '.', '-')")
    add.add_argument(
        "--start", required=True, metavar="TIME", help="first start, RFC 3339 (no offset: --timezone)"
    )
    length = add.add_mutually_exclusive_group(required=True)
    length.add_argument("--duration", metavar="DURATION", help="length of each occurrence (90m, 2h)")
    length.add_argument("--end", metavar="TIME", help="end of the first occurrence, RFC 3339")
    add.add_argument("--rrule", metavar="RULE", help="RFC 5545 recurrence, e.g. FREQ=WEEKLY;BYDAY=SU")
    add.add_argument("--timezone", metavar="ZONE", help="IANA zone the recurrence keeps wall-clock time in")
    add.add_argument(
        "--class", dest="classes", action="append", metavar="CLASS", help="request class (repeat)"
    )
    add.add_argument(
        "--endpoint", dest="endpoints", action="append", metavar="NAME", help="endpoint (repeat)"
    )
    add.add_argument("--reason", default="", help="why (shown in listings and the report)")
    add.add_argument("-c", "--config", metavar="FILE", help="check names against this config")
    where = add.add_mutually_exclusive_group()
    where.add_argument("--write", action="store_true", help="append to the config's maintenance_file")
    where.add_argument("--file", metavar="FILE", help="append to FILE (created when missing)")
    add.set_defaults(func=run_add)


def run_add(args: argparse.Namespace) -> int:
    from monitor.cli import maintenance_file as mf
    from monitor.config import load_config

    spec, entry = mf.validated(mf.item(args))
    config = load_config(args.config) if args.config else None
    target = _target(args, config)
    if target is None:
        mf.check_names(spec, config.maintenance if config else (), config)
        print(
            "# paste under 'maintenance:' in the config (or add --write / --file FILE to append it to a file)"
        )
        print(mf.dump([entry]), end="")
        _note_past(spec)
        return 0
    count = mf.add_to_file(target, entry, spec, config)
    print(f"added maintenance window {spec.name!r} to {target} ({count} window(s) in the file)")
    read = _config_file(args.config, config, strict=False) if config is not None else None
    if config is not None and (read is None or read.resolve() != target.resolve()):
        print(f"note: {args.config} does not read {target} (set maintenance_file: to it for the service to)")
    listen = _listen(config)
    print(f"the service reads it on reload: kill -HUP <pid of m3mon run>, or curl -X POST {listen}/-/reload")
    _note_past(spec)
    return 0


def _note_past(spec: MaintenanceSpec) -> None:
    """A one-off window that already began excludes nothing already counted: say so (stderr)."""
    if spec.rrule is None and spec.local_start.timestamp() < datetime.now(UTC).timestamp():
        print(
            "m3mon maintenance add: note: this window began in the past; events already counted stay "
            "counted (docs/maintenance.md)",
            file=sys.stderr,
        )


def _target(args: argparse.Namespace, config: ConfigSpec | None) -> Path | None:
    """The file to append to: --file, the config's maintenance_file with --write, else None."""
    if args.file:
        return Path(args.file)
    if not args.write:
        return None
    if config is None:
        raise UsageError("--write: needs -c/--config (its maintenance_file is written); or use --file FILE")
    return _config_file(args.config, config)


def _config_file(path: str, config: ConfigSpec, strict: bool = True) -> Path | None:
    """The config's maintenance file, relative to the config's folder."""
    if config.maintenance_file is None:
        if strict:
            raise UsageError(
                f"--write: {path} has no maintenance_file; add 'maintenance_file: maintenance.yaml' "
                "to it, or use --file FILE"
            )
        return None
    file = Path(config.maintenance_file)
    return file if file.is_absolute() else Path(path).parent / file


def _listen(config: ConfigSpec | None) -> str:
    if config is None:
        return "http://<exporter.listen>"
    host, _, port = str(config.exporter.listen).rpartition(":")
    scheme = "https" if config.exporter.credentials and config.exporter.credentials.ca_file else "http"
    return f"{scheme}://{'127.0.0.1' if host in ('', '0.0.0.0', '::', '[::]') else host}:{port}"


def _seconds(option: str, text: str) -> float:
    from monitor.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def run_list(args: argparse.Namespace) -> int:
    from monitor.cli.slo import parse_time
    from monitor.model import load_model

    model = load_model(args.config)
    now = parse_time(args.now, "--now")
    since, until = now - _seconds("--since", args.since), now + _seconds("--until", args.until)
    if args.request_class and args.request_class not in {c.name for c in model.classes}:
        known = ", ".join(c.name for c in model.classes)
        raise UsageError(f"--class: unknown request class {args.request_class!r}; known: {known}")
    rows = [_row(model, o, now) for o in model.maintenance.occurrences(since, until, args.request_class)]
    if args.json:
        print(
            json.dumps(
                {"now": _iso(now), "since": _iso(since), "until": _iso(until), "occurrences": rows}, indent=2
            )
        )
        return 0
    print(f"maintenance from {_iso(since)} to {_iso(until)} (UTC), now {_iso(now)}")
    print(_table(rows) if rows else "no maintenance in this range")
    return 0


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _row(model: Model, o: Occurrence, now: float) -> dict[str, Any]:
    from monitor.report.occurrences import applies_to, state

    w = model.maintenance.window(o.window)
    return {
        "window": o.window,
        "classes": list(w.classes),
        "endpoints": list(w.endpoints),
        "applies_to": applies_to(w.classes, w.endpoints),
        "start": _iso(o.start),
        "end": _iso(o.end),
        "duration_seconds": o.end - o.start,
        "state": state(o, now),
        "reason": o.reason,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    from monitor.report.occurrences import length

    head = ["window", "state", "start", "end", "duration", "applies to", "reason"]
    cells = [head] + [
        [
            r["window"],
            r["state"],
            r["start"],
            r["end"],
            length(r["duration_seconds"]),
            r["applies_to"],
            r["reason"],
        ]
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)
