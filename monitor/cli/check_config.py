"""``m3mon check-config FILE [--metrics SOURCE ...]``: validate a configuration and print a summary.

After the summary come the findings, one line each:

* ``warning:`` a probe-sourced SLO whose class's probes cannot fill a burn condition's long window
  to its minimum-events guard, or leave a short window empty on average (:mod:`monitor.slo.volume`).
  Warnings never change the exit status.
* ``warning:`` a class marked ``dedicated_pool`` whose endpoint serves other classes too
  (:mod:`monitor.contract.pools`).
* ``warning:`` an endpoint whose ``api_key_env`` variable is not set (``m3mon run`` logs the same
  at start).
* with ``--metrics``: for every server-sourced latency SLO of the classes an endpoint serves, ``ok:``
  when its threshold is a bucket edge of the histogram that endpoint's page serves, ``error:`` when
  it is not, when the histogram is missing, or when the page cannot be read
  (:mod:`monitor.slo.edges`); ``note:`` lines say what was not checked and why.

Exit status: 0 valid (warnings allowed), 1 a ``--metrics`` check failed, 2 a bad configuration
file or a bad ``--metrics`` argument.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.errors import M3MonError, ScrapeError
from monitor.model import SLO, Endpoint, Model, load_model

if TYPE_CHECKING:
    from monitor.slo.edges import EdgeCheck, PageCheck
    from monitor.slo.volume import Finding, GuardFinding, ProbeVolume, ShortWindowFinding

DEFAULT_TIMEOUT = 10.0
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")


class MetricsSourceError(M3MonError):
    """A ``--metrics`` argument that names no endpoint, an unknown one, or one twice (exit status 2)."""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check-config",
        help="validate a configuration file and print a summary",
        description="Validate FILE against the m3mon/v1 schema. Every problem names the file, the line, "
        "the YAML path and what was expected. Then warn (warning: lines) about probe-sourced SLOs whose "
        "probes are too sparse for their burn-rate alerts. With --metrics, also check that every "
        "server-sourced latency threshold is a bucket edge of the histogram the endpoint serves. Exit "
        "status 0 when valid (warnings allowed), 1 when a --metrics check failed, 2 on a bad "
        "configuration or --metrics argument.",
    )
    p.add_argument("file", metavar="FILE", help="configuration file (YAML, version: m3mon/v1)")
    p.add_argument(
        "--metrics",
        metavar="SOURCE",
        action="append",
        default=[],
        help="ENDPOINT=URL_OR_FILE: that endpoint's /metrics page, live or saved; the ENDPOINT= part may "
        "be left out when the configuration has one endpoint (repeatable)",
    )
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="fetch timeout per --metrics URL in seconds"
    )
    p.set_defaults(func=run)


def summary(model: Model) -> str:
    from monitor.store.engine import display_url

    lines = [f"{model.source}: valid m3mon/v1 configuration"]
    lines.append(f"  endpoints ({len(model.endpoints)}):")
    for e in model.endpoints:
        lines.append(
            f"    {e.name:<20} {e.backend:<7} {e.base_url:<28} model={e.model} "
            f"scrape={e.scrape_interval:g}s classes={','.join(e.classes)}"
        )
        if e.gpu_exporter is not None:
            lines.append(f"      gpu exporter ({e.gpu_exporter.kind}): {e.gpu_exporter.url}")
    lines.append(f"  request classes ({len(model.classes)}):")
    for c in model.classes:
        lines.append(
            f"    {c.name:<20} ctx={c.max_context_tokens:<7} probes={','.join(c.probe.kinds)} "
            f"every {c.probe.interval:g}s"
        )
        for s in c.slos:
            thr = f" ≤ {s.threshold:g}s" if s.threshold is not None else ""
            lines.append(
                f"      - {s.name:<14} {s.sli}{thr} objective {s.objective * 100:g}% over "
                f"{s.period_window} from {s.source}"
            )
            lines.append(f"        {detection_line(s)}")
            lines.append(f"        {targets_line(model, s)}")
    storage = display_url(model.storage.url)
    lines.append(f"  SLOs: {len(model.slos)}; storage: {storage}; exporter: {model.exporter_listen}")
    return "\n".join(lines)


def detection_line(slo: SLO) -> str:
    """When the SLO's burn alerts fire on a total outage and on 10 % bad events (steady traffic)."""
    from monitor.slo import burn

    parts = []
    for severity in ("page", "ticket"):
        cases = ", ".join(
            f"{'total outage' if e == 1 else f'{e:.0%} bad'} {burn.describe(slo, severity, e)}"
            for e in burn.ERROR_RATES
        )
        parts.append(f"{severity}: {cases}")
    return "detection: " + "; ".join(parts)


def targets_line(model: Model, slo: SLO) -> str:
    """When the SLO's other alerts fire: budget exhausted and exhaustion soon (a total outage and
    10 % bad events from a healthy period), metric absent (from the last event)."""
    from monitor.generate.sli import activity_seconds
    from monitor.slo import burn

    def cases(describe: Callable[[float], str]) -> str:
        return ", ".join(
            f"{'total outage' if e == 1 else f'{e:.0%} bad'} {describe(e)}" for e in burn.ERROR_RATES
        )

    parts = [f"exhausted: {cases(lambda e: burn.describe_exhausted(slo, e))}"]
    if slo.exhaustion_within is not None:
        within = slo.exhaustion_within
        parts.append(f"exhaustion soon: {cases(lambda e: burn.describe_exhaustion_soon(slo, e, within))}")
    quiet = activity_seconds(model, slo) if slo.source == "probes" else None
    after = "completed probe" if quiet is not None else "server sample"
    if slo.source == "traffic":  # the monitor publishes its traffic counters from its start
        parts.append("absent: while Prometheus reads no traffic counter of the monitor's")
    else:
        minutes = burn.describe_minutes(-(-burn.absent_seconds(quiet) // 60), "")
        parts.append(f"absent: {minutes} after the last {after}")
    return "targets: " + "; ".join(parts)


# --- probe volume (warnings) -------------------------------------------------------------------


def duration(seconds: float) -> str:
    """``seconds`` as a configuration duration (``30m``, ``514s``, ``250ms``), rounded down."""
    if seconds >= 1:
        whole = math.floor(seconds + 1e-9)
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if whole >= size and whole % size == 0:
                return f"{whole // size}{unit}"
        return f"{whole}s"
    return f"{max(1, math.floor(seconds * 1000 + 1e-9))}ms"


def _number(value: float) -> str:
    """At most two decimals, no trailing zeros: 4, 7.5, 0.33, 1440."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _cadence(v: ProbeVolume) -> str:
    kinds = f"{v.kinds} kind{'s' if v.kinds != 1 else ''}"
    if v.endpoints > 1:
        kinds += f" × {v.endpoints} endpoints"
    return f"{_number(v.per_hour)} probe events per hour ({kinds} every {duration(v.interval)})"


def _alert(f: Finding) -> str:
    a = f.alert
    from monitor.slo import burn

    return f"the {a.severity} alert ({a.long_window}/{a.short_window}, {burn.factor(f.slo, a):.4g}×)"


def _guard_line(f: GuardFinding) -> str:
    long_w = f.alert.long_window
    holds = f"{f.fewest}" if f.fewest == f.most else f"{f.fewest} or {f.most}"
    verdict = "can never fire" if f.never_fires else "can fire only part of the time"
    per = f.volume.per_round
    rounds = (
        f"{f.suggested_rounds} probes"
        if per == 1
        else f"{f.suggested_rounds} rounds × {per} = {f.suggested_rounds * per} events"
    )
    alt = ""
    if f.fewest > 0:
        alt = f", or set min_events ≤ {f.fewest}"
        alt += " (then one failed probe fires it)" if f.single_failure_fires_at_fewest else ""
    return (
        f"warning: {f.slo.id}: {_cadence(f.volume)}; {_alert(f)} needs ≥ {f.needed} events in its "
        f"{long_w} window, which holds {holds}, so it {verdict}; probe every "
        f"{duration(f.suggested_interval)} or less ({rounds} in every {long_w}){alt}"
    )


def _short_line(f: ShortWindowFinding) -> str:
    short_w = f.alert.short_window
    return (
        f"warning: {f.slo.id}: {_cadence(f.volume)}; {_alert(f)} also needs events in its {short_w} "
        f"short window, which holds {_number(f.average)} on average and is empty {f.empty_share:.0%} of "
        f"the time, so it can fire only just after a probe round; probe every "
        f"{duration(f.suggested_interval)} or less to put a round in every {short_w} window"
    )


def unset_keys(model: Model) -> list[str]:
    """One ``warning:`` line per endpoint whose ``api_key_env`` names an unset variable: its
    scrapes and probes would go out without a key and fail as 401s, not as a configuration error."""
    return [f"warning: {e.key_unset()}" for e in model.keys_unset()]


def volume_lines(model: Model) -> list[str]:
    """One ``warning:`` line per probe-volume finding of ``model``."""
    from monitor.slo.volume import GuardFinding, findings

    return [_guard_line(f) if isinstance(f, GuardFinding) else _short_line(f) for f in findings(model)]


# --- bucket edges (--metrics) ------------------------------------------------------------------


def parse_sources(model: Model, values: Sequence[str]) -> list[tuple[Endpoint, str]]:
    """``(endpoint, URL or file)`` per ``--metrics`` value; :class:`MetricsSourceError` when unclear."""
    by_name = {e.name: e for e in model.endpoints}
    known = ", ".join(by_name)
    out: list[tuple[Endpoint, str]] = []
    for value in values:
        name, sep, rest = value.partition("=")
        if sep and name in by_name:
            endpoint, source = by_name[name], rest
        elif sep and _NAME.fullmatch(name) and not Path(value).exists():
            raise MetricsSourceError(f"--metrics {value!r}: unknown endpoint {name!r}; endpoints: {known}")
        elif len(model.endpoints) == 1:
            endpoint, source = model.endpoints[0], value
        else:
            what = "say which endpoint serves it, as ENDPOINT=URL_OR_FILE"
            raise MetricsSourceError(f"--metrics {value!r}: {what}; endpoints: {known}")
        if not source:
            raise MetricsSourceError(f"--metrics {value!r}: no URL or file after '='")
        if any(e.name == endpoint.name for e, _ in out):
            raise MetricsSourceError(f"--metrics: endpoint {endpoint.name} is given twice")
        out.append((endpoint, source))
    return out


async def _load(endpoint: Endpoint, source: str, timeout: float) -> str:
    """The page text of a URL (fetched like the collector does) or of a saved file."""
    if source.startswith(("http://", "https://")):
        import httpx

        from monitor.scrape.fetch import fetch_text

        async with httpx.AsyncClient(timeout=timeout) as client:
            return await fetch_text(client, source, endpoint=endpoint, timeout=timeout)
    try:
        return Path(source).read_bytes().decode("utf-8")
    except OSError as exc:
        raise ScrapeError("connect_error", f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScrapeError("garbled", f"{source}: not UTF-8 at byte {exc.start}") from None


async def _load_all(sources: list[tuple[Endpoint, str]], timeout: float) -> list[str | ScrapeError]:
    async def one(endpoint: Endpoint, source: str) -> str | ScrapeError:
        try:
            return await _load(endpoint, source, timeout)
        except ScrapeError as exc:
            return exc

    return list(await asyncio.gather(*(one(e, s) for e, s in sources)))


def _edge_line(c: EdgeCheck) -> str:
    where = f"{c.endpoint}: {c.slo.id}"
    if c.status == "missing":
        return (
            f"error: {where}: the page has no {c.slo.sli} histogram (looked for "
            f"{', '.join(c.looked_for) or 'nothing this backend exposes'}); this pool gives the SLO no events"
        )
    if c.status == "edge":
        return f"ok: {where}: threshold {c.threshold:g}s is a bucket edge of {c.histogram}"
    below, above = c.nearest()
    under = f"{below:g}s below" if below is not None else "no edge below"
    over = f"{above:g}s above" if above is not None else "only +Inf above"
    return (
        f"error: {where}: threshold {c.threshold:g}s is not a bucket edge of {c.histogram} "
        f"(nearest edges: {under}, {over}); this pool gives the SLO no events"
    )


def _page_lines(check: PageCheck) -> Iterator[str]:
    yield from (f"note: {check.endpoint}: {n}" for n in check.notes)
    if not check.checks:
        yield f"note: {check.endpoint}: serves no server-sourced latency SLO; nothing to check on its page"
    yield from (_edge_line(c) for c in check.checks)


def edge_lines(model: Model, sources: list[tuple[Endpoint, str]], timeout: float) -> tuple[list[str], bool]:
    """The ``ok:``/``error:``/``note:`` lines of the ``--metrics`` checks, and whether any failed."""
    from monitor.slo.edges import check_page, server_latency_slos

    lines: list[str] = []
    failed = False
    pages = asyncio.run(_load_all(sources, timeout))
    for (endpoint, source), page in zip(sources, pages, strict=True):
        try:
            if isinstance(page, ScrapeError):
                raise page
            check = check_page(model, endpoint, page)
        except ScrapeError as exc:
            lines.append(f"error: {endpoint.name}: cannot check {source}: {exc}")
            failed = True
            continue
        lines.extend(_page_lines(check))
        from monitor.cli.check_drift import drift_lines

        drift, blind = drift_lines(model, endpoint, page)
        lines.extend(drift)
        failed = failed or blind or any(c.status != "edge" for c in check.checks)
    given = {e.name for e, _ in sources}
    for endpoint in model.endpoints:
        n = len(server_latency_slos(model, endpoint))
        if endpoint.name not in given and n:
            lines.append(
                f"note: {endpoint.name}: not checked (no --metrics {endpoint.name}=URL_OR_FILE); "
                f"it serves {n} server-sourced latency SLO{'s' if n != 1 else ''}"
            )
    return lines, failed


def run(args: argparse.Namespace) -> int:
    model = load_model(args.file)
    try:
        sources = parse_sources(model, args.metrics)
    except MetricsSourceError as exc:
        print(f"m3mon check-config: {exc}", file=sys.stderr)
        return 2
    print(summary(model))
    from monitor.contract.pools import shared_dedicated_pools

    for line in [*volume_lines(model), *shared_dedicated_pools(model), *unset_keys(model)]:
        print(line)
    if not sources:
        return 0
    lines, failed = edge_lines(model, sources, args.timeout)
    for line in lines:
        print(line)
    return 1 if failed else 0
