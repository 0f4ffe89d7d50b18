"""``m3mon generate -c FILE -o DIR``: write rules, routing, runbooks, dashboards and compose files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "generate",
        help="generate Prometheus rules, Alertmanager routing, Grafana dashboards and compose.yaml",
        description="Generate alerts/*.rules.yml, alerts/alertmanager.yml, alerts/runbooks/, dashboards/, "
        "deploy/ and compose.yaml under DIR from the configuration FILE. Nothing is written unless "
        "everything could be generated. DIR is created if its parent folder exists.",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file (m3mon/v1)")
    p.add_argument("-o", "--output", default=".", metavar="DIR", help="output directory (default: .)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.errors import ConfigError
    from monitor.generate.output import rendered_files, write_files
    from monitor.model import load_model

    model = load_model(args.config)
    out = _output(args.output)
    try:
        text = Path(args.config).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{args.config}: cannot read: {exc}"]) from exc
    files = rendered_files(model, Path(args.config).as_posix(), text)
    written = write_files(files, out)
    print(f"m3mon generate: wrote {len(written)} files under {args.output}")
    return 0


def _output(value: str) -> Path:
    """The output folder: an existing folder, or a new one in an existing folder (a mistyped
    ``-o`` must not create a tree of folders somewhere unexpected)."""
    from monitor.errors import UsageError

    out = Path(value)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o: {value} is not a directory")
    parent = out.absolute().parent
    if not out.exists() and not parent.is_dir():
        raise UsageError(f"-o: {parent} does not exist (generate creates DIR, not its parents)")
    return out
