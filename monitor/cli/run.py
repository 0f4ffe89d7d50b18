"""``m3mon run -c FILE``: the monitoring service."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "run",
        help="run the service: scrapes, probes, SLO evaluation, exporter, Alertmanager receiver",
        description="Run scrapes, probes, SLO evaluation, retention and the weekly report on schedule; "
        "serve the exporter (/metrics), the Alertmanager receiver (/alertmanager), the OTLP trace "
        "receiver (/v1/traces), /-/healthy, /-/ready and /-/reload on the configured address. "
        "SIGHUP reloads the configuration; SIGTERM (exit 0) or SIGINT (exit 130) stop cleanly. "
        "The store must be migrated (m3mon db upgrade), unless --upgrade is given.",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this many seconds")
    p.add_argument("--upgrade", action="store_true", help="apply database migrations before starting")
    p.add_argument(
        "--evaluation-step",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="evaluate SLOs at instants aligned to this step (default 60)",
    )
    p.add_argument("--no-report", action="store_true", help="do not send the scheduled weekly report")
    p.add_argument("--shard", metavar="K/N", help="fleet mode: watch the endpoints whose hashmod is K of N "
                   "(overrides fleet.shard/fleet.shards; PostgreSQL only, see docs/fleet.md)")  # fmt: skip
    p.add_argument("--replica", metavar="NAME", help="fleet mode: this replica's name (default host-pid)")
    p.add_argument("--listen", metavar="HOST:PORT", help="serve here instead of exporter.listen (replicas "
                   "sharing one configuration file)")  # fmt: skip
    p.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="exporter-toolkit web config (TLS, basic auth); overrides exporter.web_config_file",
    )
    p.add_argument(
        "--log.format",
        dest="log_format",
        choices=("plain", "logfmt", "json"),
        default="plain",
        help="log line format (default plain)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.service.logs import configure, unconfigure

    configure(args.log_format)
    try:
        return _serve(args)
    finally:
        unconfigure()


def _serve(args: argparse.Namespace) -> int:
    from monitor.cli.failures import EXIT_INTERRUPTED
    from monitor.fleet.role import fleet_role
    from monitor.model import load_model
    from monitor.service.reload import load_web
    from monitor.service.service import Service
    from monitor.web.config import check_exposure

    model = load_model(args.config)
    if args.listen:
        model = dataclasses.replace(model, exporter_listen=_listen(args.listen))
    # a bad web config or an unprotected non-loopback listen fails here, before the database is touched
    check_exposure(model.exporter_listen, load_web(model, args.web_config_file), model.source)
    fleet = fleet_role(model, args.shard, args.replica)  # SQLite refuses fleet mode here
    if args.upgrade:
        from monitor.store.migrate import upgrade

        upgrade(model.storage.url)
    service = Service(
        model,
        send_reports=not args.no_report,
        evaluation_step=args.evaluation_step,
        web_config=args.web_config_file,
        fleet=fleet,
        listen=args.listen,
    )
    asyncio.run(service.serve(args.duration))
    # SIGINT (Ctrl-C) is an interruption: 130, as documented; SIGTERM is a supervisor's clean stop: 0
    return EXIT_INTERRUPTED if service.stopped_by == signal.SIGINT else 0


def _listen(value: str) -> str:
    """``--listen`` checked as ``exporter.listen`` is (:func:`monitor.config.listen_address`)."""
    from monitor.addresses import listen_address
    from monitor.errors import UsageError

    try:
        return listen_address(value)
    except ValueError as exc:
        raise UsageError(f"--listen: {exc}") from None
