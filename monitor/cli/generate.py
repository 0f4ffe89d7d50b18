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
        "everything could be generated.",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file (m3mon/v1)")
    p.add_argument("-o", "--output", default=".", metavar="DIR", help="output directory (default: .)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.errors import ConfigError
    from monitor.generate.output import rendered_files, write_files
    from monitor.model import load_model

    model = load_model(args.config)
    try:
        text = Path(args.config).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{args.config}: cannot read: {exc}"]) from exc
    files = rendered_files(model, Path(args.config).as_posix(), text)
    written = write_files(files, Path(args.output))
    print(f"m3mon generate: wrote {len(written)} files under {args.output}")
    return 0
