"""``m3mon init --from URL [--from URL ...] [-o FILE] [--force]``: a starter configuration.

Reads each endpoint's ``/metrics``, ``/v1/models`` and ``/version`` (:mod:`monitor.starter`),
writes a commented configuration that ``m3mon check-config`` accepts and ``m3mon run`` runs as it
is, and prints the next commands. Exit status: 0 written; 1 an endpoint could not be read (the
line names its URL); 2 bad usage, e.g. FILE exists and ``--force`` was not given.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.starter.detect import Detected

DEFAULT_OUTPUT = "m3mon.yaml"
DEFAULT_TIMEOUT = 10.0


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "init",
        help="write a starter configuration from what running vLLM/SGLang endpoints serve",
        description="Read each endpoint's /metrics, /v1/models and /version and write a starter "
        "configuration: one endpoint per URL, one pool and request class per model and context length, "
        "the probes each endpoint can answer, and SLOs whose latency thresholds are bucket edges the "
        "endpoints serve. Every choice is explained in a comment. Exit status 0 when written, 1 when "
        "an endpoint cannot be read, 2 on bad usage (an existing FILE without --force).",
    )
    a = p.add_argument
    a("--from", dest="urls", action="append", required=True, metavar="URL",
      help="base URL of a vLLM or SGLang server, e.g. http://10.0.0.5:8000 (repeatable)")  # fmt: skip
    a("-o", "--output", default=DEFAULT_OUTPUT, metavar="FILE",
      help=f"configuration file to write (default {DEFAULT_OUTPUT})")  # fmt: skip
    a("--force", action="store_true", help="overwrite FILE if it exists")
    a("--api-key-env", metavar="VAR",
      help="environment variable holding the servers' --api-key (used now, and named in FILE)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per request")
    p.set_defaults(func=run)


def _key(var: str | None) -> str | None:
    if var is None:
        return None
    value = os.environ.get(var)
    if not value:
        raise UsageError(f"--api-key-env {var}: the variable is not set")
    return value


def _check_output(path: Path, force: bool) -> None:
    """Bad usage before any endpoint is read: a folder, a missing folder, a file without --force."""
    if path.is_dir():
        raise UsageError(f"-o {path} is a directory; name the configuration file to write")
    if not path.parent.is_dir():
        raise UsageError(f"-o {path}: the folder {path.parent} does not exist")
    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")


def blind_slos(draft: str, source: str, detected: list[Detected]) -> dict[str, dict[str, str]]:
    """Class -> SLO name -> why: the server-sourced SLOs of ``draft`` whose generated rules read a
    family an endpoint's page does not serve (the drift guard of ``check-config --metrics``)."""
    from monitor.config import parse_config
    from monitor.generate.needs import all_needs
    from monitor.model import build_model
    from monitor.scrape.drift import assess, unserved

    model = build_model(parse_config(draft, source), source=source)
    page = {e.name: next(d.served for d in detected if d.url == e.base_url) for e in model.endpoints}
    out: dict[str, dict[str, str]] = {}
    for name, needs in all_needs(model).items():
        for drift in unserved(assess(name, needs, page[name])):
            reason = f"the generated rules read {drift.family}, which {name} does not serve ({drift.detail})"
            for user in drift.users:
                if user.startswith("SLO "):
                    cls, _, slo = user.removeprefix("SLO ").partition("/")
                    out.setdefault(cls, {}).setdefault(slo, reason)
    return out


def next_commands(path: Path, endpoints: list[tuple[str, str]]) -> list[str]:
    """Check against the live pages, run (creating the SQLite store), generate the stack's files."""
    file = shlex.quote(str(path))
    metrics = " ".join(f"--metrics {shlex.quote(f'{name}={url}/metrics')}" for name, url in endpoints)
    return [
        f"m3mon check-config {file} {metrics}",
        f"m3mon run -c {file} --upgrade",
        f"m3mon generate -c {file} -o monitoring/",
    ]


def run(args: argparse.Namespace) -> int:
    from monitor.config import parse_config
    from monitor.starter.fetch import base_url, read_all
    from monitor.starter.plan import plan
    from monitor.starter.render import describe, render

    path = Path(args.output)
    _check_output(path, args.force)
    urls = [base_url(u) for u in args.urls]
    twice = sorted({u for u in urls if urls.count(u) > 1})
    if twice:
        raise UsageError(f"--from {twice[0]} is given twice")
    detected = asyncio.run(read_all(urls, args.timeout, _key(args.api_key_env)))
    draft = render(plan(detected), args.api_key_env)
    pools = plan(detected, blind_slos(draft, str(path), detected))
    text = render(pools, args.api_key_env)
    parse_config(text, str(path))  # a plan the schema refuses is a bug here: say so, write nothing
    path.write_text(text, encoding="utf-8")
    named = [(n, d.url) for p in pools for d, n in zip(p.members, p.endpoints, strict=True)]
    for name, d in zip((n for n, _ in named), (d for p in pools for d in p.members), strict=True):
        print(f"{name}: {d.model} at {d.url}, max_model_len {d.max_model_len}; {describe(d)}")
    slo_count = sum(len(p.slos) for p in pools)
    print(f"wrote {path}: {len(named)} endpoint(s), {len(pools)} request class(es), {slo_count} SLOs")
    print("next:")
    for line in next_commands(path, named):
        print(f"  {line}")
    return 0
