"""``m3mon contract -c FILE [--check] [--html FILE] [--import FILE --class C]``: the operating contract.

Without ``--check``: prints the contract (context ceiling and the traffic it covers, warm
capacity from stored replay runs, precision and kernel path from the fingerprint, percentiles to
hold) as Markdown, from the config and the store. With ``--check``: the acceptance test — a
short replay per class against the live endpoint; exit 1 naming each clause that does not hold
(docs/contract.md). With ``--import FILE`` (repeatable, one ``--class``): first stores the peer
benchmark results in FILE (``vllm bench serve --save-result``, GuideLLM, AIPerf) as replay runs
of that class, with the endpoint's fingerprint observed now (monitor/cli/contract_import.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monitor.model import Endpoint, Model, RequestClass


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "contract",
        help="the operating contract per class; --check runs the acceptance test",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    p.add_argument("--check", action="store_true", help="replay each class briefly and judge every clause")
    p.add_argument("--class", dest="classes", action="append", metavar="C", help="only this class")
    p.add_argument(
        "--profile", action="append", default=[], metavar="C=FILE", help="class C's traffic profile"
    )
    p.add_argument("--duration", default="10s", metavar="D", help="replay length per class for --check")
    p.add_argument("--html", metavar="FILE", help="also write the contract as an HTML fragment")
    p.add_argument("--at", metavar="TIME", help="end of the traffic window (default now)")
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="FILE",
        help="store a vllm bench serve / GuideLLM / AIPerf result file as replay runs of --class first",
    )
    p.add_argument("--endpoint", metavar="E", help="with --import: the endpoint it ran against")
    p.add_argument(
        "--accept-foreign-model",
        action="store_true",
        help="with --import: store runs whose model is not the endpoint's (recorded with the run)",
    )
    p.add_argument(
        "--accept-foreign-target",
        action="store_true",
        help="with --import: store runs sent to another address (a port-forward, a gateway; recorded)",
    )
    p.set_defaults(func=run)


def class_and_endpoint(model: Model, name: str, endpoint: str | None) -> tuple[RequestClass, Endpoint]:
    """The class and the endpoint to drive; a ConfigError naming what is unknown."""
    from monitor.errors import ConfigError

    try:
        rc = model.request_class(name)
    except KeyError:
        known = ", ".join(c.name for c in model.classes)
        raise ConfigError([f"--class: unknown request class {name!r}; known: {known}"]) from None
    serving = model.endpoints_for(name)
    chosen = [e for e in serving if endpoint is None or e.name == endpoint]
    if not chosen:
        names = ", ".join(e.name for e in serving) or "none"
        raise ConfigError([f"--endpoint: {endpoint!r} does not serve class {name!r}; serving: {names}"])
    return rc, chosen[0]


def _profiles(model: Model, pairs: list[str]) -> dict[str, Any]:
    from monitor.errors import UsageError
    from monitor.replay.profile import load_profile

    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not path:
            raise UsageError(f"--profile: expected CLASS=FILE, got {pair!r}")
        class_and_endpoint(model, name, None)
        out[name] = load_profile(path)
    return out


def run(args: argparse.Namespace) -> int:
    from monitor.cli.slo import parse_time
    from monitor.contract.build import build_contract
    from monitor.contract.render import html_section, markdown
    from monitor.model import load_model
    from monitor.store.store import Store

    model = load_model(args.config)
    if (args.accept_foreign_model or args.accept_foreign_target) and not args.imports:
        from monitor.errors import UsageError

        raise UsageError("--accept-foreign-model and --accept-foreign-target go with --import FILE")
    for name in args.classes or []:
        class_and_endpoint(model, name, None)
    profiles = _profiles(model, args.profile)
    end = parse_time(args.at)
    if args.imports or args.check:  # both contact the endpoints
        _warn_keys(model, args.classes, args.endpoint)
    imported = 0
    if args.imports:
        from monitor.cli.contract_import import import_runs

        accept = frozenset(k for k, on in (("model", args.accept_foreign_model),
                                           ("target", args.accept_foreign_target)) if on)  # fmt: skip
        imported = import_runs(model, args.imports, args.classes, args.endpoint, accept)
    db = Store(model.storage.url)
    try:
        db.check_schema()
        with db.session() as s:
            contracts = [
                c for c in build_contract(s, model, end) if not args.classes or c.name in args.classes
            ]
            learned = {} if not args.check else _learned(s, model, [c.name for c in contracts], profiles, end)
    finally:
        db.close()
    print(markdown(contracts), end="")
    if args.html:
        Path(args.html).write_text(html_section(contracts), encoding="utf-8")
    if not args.check:
        return imported
    return max(imported, _check(args, model, contracts, {**learned, **profiles}))


def _warn_keys(model: Model, classes: list[str] | None, endpoint: str | None) -> None:
    from monitor.cli.failures import warn_unset_keys

    names = classes or [c.name for c in model.classes]
    serving = {e.name: e for name in names for e in model.endpoints_for(name)}
    warn_unset_keys("m3mon contract", (e for e in serving.values() if endpoint is None or e.name == endpoint))


def _learned(
    session: Any, model: Model, names: list[str], given: dict[str, Any], end: float
) -> dict[str, Any]:
    """Profiles learned from the last 7 days for classes without a ``--profile``."""
    from monitor.replay.learn import learn, observe

    out: dict[str, Any] = {}
    for name in names:
        if name in given:
            continue
        try:
            out[name] = learn(observe(session, model, name, end - 7 * 86400, end), name, "7d")
        except ValueError:
            continue
    return out


def _check(args: argparse.Namespace, model: Model, contracts: list[Any], profiles: dict[str, Any]) -> int:
    import sys

    from monitor.config import parse_duration
    from monitor.contract.check import check_class
    from monitor.errors import UsageError

    try:
        duration = parse_duration(args.duration)
    except ValueError as exc:
        raise UsageError(f"--duration: {exc}") from None
    failed: list[str] = []
    print("\n## Acceptance check (live)\n")
    for cc in contracts:
        rc, endpoint = class_and_endpoint(model, cc.name, cc.endpoint)
        results, _ = check_class(cc, rc, endpoint, profiles.get(cc.name), cc.evidence_fingerprint, duration)
        for r in results:
            print(f"* {r.line()}")
            if r.holds is False:
                failed.append(r.line())
    for line in failed:
        print(f"m3mon contract: clause does not hold: {line}", file=sys.stderr)
    return 1 if failed else 0
