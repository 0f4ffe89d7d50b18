"""``m3mon scrape TARGET [--since OLDER]``: what a /metrics page (or two) says, as canonical signals."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.model import Endpoint


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "scrape",
        help="read a vLLM/SGLang /metrics page or a GPU exporter page (URL or file) into canonical signals",
        description="Read TARGET (a /metrics URL or a file holding a saved page; a dcgm-exporter or "
        "AMD device metrics exporter page is read as a GPU page: per-GPU signals and driver version). "
        "Without --since: "
        "cumulative signals since the server started. With --since OLDER: the interval between the "
        "two pages (counter resets are detected and marked). Exit status 1 with the reason when a "
        "page cannot be fetched or is not a valid page. JSON keys are documented in docs/collector.md.",
    )
    p.add_argument("target", metavar="TARGET", help="URL of a /metrics page, or a file with one")
    p.add_argument("--since", metavar="OLDER", help="an older page (URL or file): report the interval")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--threshold",
        metavar="SECONDS",
        type=float,
        action="append",
        default=[],
        help="also report the share of each latency histogram under SECONDS (repeatable)",
    )
    p.add_argument("--model", help="model_name to report on a page serving several models")
    p.add_argument("--duration", type=float, help="seconds between OLDER and TARGET (default: file mtimes)")
    p.add_argument("--timeout", type=float, default=10.0, help="fetch timeout per URL in seconds")
    p.add_argument(
        "--partial",
        action="store_true",
        help="accept excerpts: drop invalid histogram/counter series with a note instead of failing",
    )
    p.set_defaults(func=run)


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


async def _load(target: str, timeout: float) -> tuple[str, float]:
    """(page text, wall-clock time it was taken)."""
    import time

    import httpx

    from monitor.errors import ScrapeError
    from monitor.scrape.fetch import fetch_text

    if _is_url(target):
        async with httpx.AsyncClient(timeout=timeout, headers=_auth_header()) as client:
            return await fetch_text(client, target, timeout=timeout), time.time()
    path = Path(target)
    try:
        return path.read_bytes().decode("utf-8"), path.stat().st_mtime
    except OSError as exc:
        raise ScrapeError("connect_error", f"cannot read {target}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ScrapeError("garbled", f"{target}: not UTF-8 at byte {exc.start}") from None


def _auth_header() -> dict[str, str]:
    key = os.environ.get("M3MON_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def _fmt(value: float | None, unit: str = "", digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}{unit}"


def _table(doc: dict[str, Any]) -> str:
    s, fp = doc["signals"], doc["fingerprint"]
    t = s["total"]
    span = f"interval {s['duration']:.1f}s" if s["duration"] is not None else "cumulative since start"
    lines = [
        f"{doc['target']}: {s['backend']} ({s['generation']}) model={s['model'] or '(all)'}  {span}"
        + ("  RESET (counter reset inside the interval)" if s["reset"] else ""),
        f"  deployment: version={fp['version'] or '?'} max_model_len={fp['max_model_len'] or '?'} "
        f"block_size={fp['block_size'] or '?'} "
        f"cache_dtype={fp['cache_dtype'] or '?'} prefix_caching={fp['enable_prefix_caching']} "
        f"num_gpu_blocks={fp['num_gpu_blocks'] or '?'}",
        f"  requests: {t['requests']:g} "
        + " ".join(f"{k}={v:g}" for k, v in t["finished"].items())
        + f"   ({_fmt(s['rates']['requests_per_second'], '/s')})",
        f"  tokens: prompt={_fmt(t['prompt_tokens'], '', 8)} "
        f"({_fmt(s['rates']['prompt_tokens_per_second'], '/s')})"
        f" generation={_fmt(t['generation_tokens'], '', 8)} "
        f"({_fmt(s['rates']['generation_tokens_per_second'], '/s')})",
        f"  running={_fmt(t['running'])} waiting={_fmt(t['waiting'])} "
        f"kv_cache_usage={_fmt(t['kv_cache_usage'])} "
        f"preemptions={_fmt(t['preemptions'])} ({_fmt(s['rates']['preemptions_per_second'], '/s')})",
        f"  prefix cache hit rate={_fmt(t['prefix_cache']['hit_rate'])}  spec decode: acceptance="
        f"{_fmt(t['spec_decode']['acceptance_rate'])} mean accepted length="
        f"{_fmt(t['spec_decode']['mean_accepted_length'])}",
    ]
    thresholds = doc["thresholds"]
    head = f"  {'histogram':<18}{'count':>10}{'mean':>10}{'p50':>10}{'p95':>10}{'p99':>10}"
    lines.append(head + "".join(f"{'<=' + format(x, 'g'):>12}" for x in thresholds))
    for name, h in t["histograms"].items():
        row = f"  {name:<18}{h['count']:>10g}" + "".join(
            f"{_fmt(h[k]):>10}" for k in ("mean", "p50", "p95", "p99")
        )
        for x in thresholds:
            u = h["under"].get(format(x, "g"))
            row += f"{_fmt(u['fraction'], '' if u['exact'] else '~') if u else '':>12}"
        lines.append(row)
    if kv := t["kv_residency"]:
        lines.append(
            f"  kv residency: evicted blocks={kv['evicted_blocks']:g} "
            f"reuse gap p50={_fmt(kv['reuse_gap_p50'], 's')} "
            f"idle before evict p50={_fmt(kv['idle_before_evict_p50'], 's')} "
            f"eviction before reuse={_fmt(kv['eviction_before_reuse'])}"
        )
    if s["breakdown"]:
        lines.append("  e2e breakdown: " + " ".join(f"{k}={v:.1%}" for k, v in s["breakdown"].items()))
    if len(s["engines"]) > 1:
        for name, e in s["engines"].items():
            lines.append(
                f"  engine {name}: requests={e['requests']:g} running={_fmt(e['running'])} "
                f"waiting={_fmt(e['waiting'])} kv={_fmt(e['kv_cache_usage'])}"
            )
    lines.extend(f"  note: {n}" for n in s["notes"] + fp["warnings"])
    return "\n".join(lines)


def _endpoint(url: str, model: str | None) -> Endpoint:
    """The monitored endpoint a /metrics URL belongs to (base URL = the URL without ``/metrics``)."""
    from urllib.parse import urlsplit

    from monitor.model import Endpoint

    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    base = url.split("?", 1)[0].rstrip("/").removesuffix("/metrics") if path.endswith("/metrics") else ""
    base = base or f"{parts.scheme}://{parts.netloc}"
    metrics_path = parts.path or "/metrics"
    return Endpoint(name=url, base_url=base, backend="", model=model or "", classes=(), scrape_interval=0.0,
                    metrics_path=metrics_path, api_key_env="M3MON_API_KEY")  # fmt: skip


async def _fingerprint(target: str, reading: Any, model: str | None, timeout: float) -> dict[str, Any]:
    """The fingerprint the service records: the page, plus ``/version`` and ``/v1/models`` for a URL."""
    import httpx

    from monitor.scrape.collector import fingerprint
    from monitor.scrape.fingerprint import build

    if not _is_url(target):
        return build(reading, model=model).to_dict()
    async with httpx.AsyncClient(timeout=timeout) as client:
        found = await fingerprint(_endpoint(target, model), client, reading, timeout=timeout)
    return found.to_dict()


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    from monitor.cli.scrape_gpu import gpu_document
    from monitor.scrape.collector import read_text
    from monitor.scrape.gpu import is_gpu_page
    from monitor.scrape.interval import pick_model, signals, signals_by_model

    text, at = await _load(args.target, args.timeout)
    old: tuple[str, float] | None = None
    if args.since:
        old_text, old_at = await _load(args.since, args.timeout)
        old = (old_text, at - args.duration if args.duration is not None else old_at)
    if is_gpu_page(text):
        return gpu_document(args.target, args.since, text, at, old, args.partial)
    newer = read_text(text, at, partial=args.partial)
    older = read_text(old[0], old[1], partial=args.partial) if old else None
    thresholds = tuple(args.threshold)
    sig = signals(args.target, newer, older, model=args.model)
    by_model = signals_by_model(args.target, newer, older) if len(newer.models) > 1 else {}
    return {
        "target": args.target,
        "since": args.since,
        "page": "engine",
        "thresholds": list(thresholds),
        "models": list(newer.models),
        "fingerprint": await _fingerprint(args.target, newer, pick_model(newer, args.model), args.timeout),
        "signals": sig.to_dict(thresholds),
        "by_model": {m: s.to_dict(thresholds) for m, s in by_model.items()},
    }


def run(args: argparse.Namespace) -> int:
    from monitor.cli.scrape_gpu import gpu_table

    doc = asyncio.run(_run(args))
    table = gpu_table if doc["page"] == "gpu" else _table
    print(json.dumps(doc, indent=2, sort_keys=False) if args.json else table(doc))
    return 0
