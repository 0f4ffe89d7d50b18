"""``m3mon check-config FILE``: validate a configuration and print a summary."""

from __future__ import annotations

import argparse
from typing import Any

from monitor.model import Model, load_model
from monitor.store.engine import display_url


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check-config",
        help="validate a configuration file and print a summary",
        description="Validate FILE against the m3mon/v1 schema. Every problem names the file, the line, "
        "the YAML path and what was expected. Exit status 0 when valid, 2 when not.",
    )
    p.add_argument("file", metavar="FILE", help="configuration file (YAML, version: m3mon/v1)")
    p.set_defaults(func=run)


def summary(model: Model) -> str:
    lines = [f"{model.source}: valid m3mon/v1 configuration"]
    lines.append(f"  endpoints ({len(model.endpoints)}):")
    for e in model.endpoints:
        lines.append(
            f"    {e.name:<20} {e.backend:<7} {e.base_url:<28} model={e.model} "
            f"scrape={e.scrape_interval:g}s classes={','.join(e.classes)}"
        )
    lines.append(f"  request classes ({len(model.classes)}):")
    for c in model.classes:
        lines.append(
            f"    {c.name:<20} ctx={c.max_context_tokens:<7} probes={','.join(c.probe.kinds)} "
            f"every {c.probe.interval:g}s"
        )
        for s in c.slos:
            thr = f" < {s.threshold:g}s" if s.threshold is not None else ""
            lines.append(
                f"      - {s.name:<14} {s.sli}{thr} objective {s.objective * 100:g}% over "
                f"{s.period_window} from {s.source}"
            )
    storage = display_url(model.storage.url)
    lines.append(f"  SLOs: {len(model.slos)}; storage: {storage}; exporter: {model.exporter_listen}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    print(summary(load_model(args.file)))
    return 0
