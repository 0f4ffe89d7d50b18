"""A real Prometheus scrapes three pools whose token histograms have different bucket layouts (top
buckets 20,000 / 100,000 / 500,000, as vLLM derives them from max-model-len) plus the monitor's
probe histograms, and evaluates every dashboard expression over ``_bucket`` series. No result may
come from buckets of different layouts, and each quantile must equal the value computed here from
the page's cumulative counts with histogram_quantile's documented definition.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from monitor.generate.dashboards import all_dashboards
from monitor.generate.prometheus_config import prometheus_config
from monitor.model import Model, load_model
from tests.generate.conftest import REPO
from tests.support.prometheus import free_port, running_prometheus, wait_for
from tests.support.prometheus import query as prom_query

pytestmark = [pytest.mark.real, pytest.mark.timeout(120)]

TOKENS_32K = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)
TOKENS_128K = (*TOKENS_32K, 50000, 100000)
TOKENS_512K = (*TOKENS_128K, 200000, 500000)
LATENCY_DEFAULT = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)
LATENCY_CUSTOM = (1.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)  # --custom-histogram-buckets
PROBE_LAYOUT = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)  # one layout per monitor

#: Requests per prompt-token bucket (upper bound: count in that bucket only), per pool.
PROMPT_TOKENS: dict[str, tuple[tuple[float, ...], dict[float, int]]] = {
    "m3-interactive": (TOKENS_32K, {2000: 10, 5000: 30, 10000: 40, 20000: 20}),
    "m3-repo": (TOKENS_128K, {5000: 10, 10000: 20, 20000: 30, 50000: 35, 100000: 5}),
    "m3-extended": (TOKENS_512K, {20000: 10, 50000: 20, 100000: 30, 200000: 25, 500000: 15}),
}
#: The same P90s worked out by hand: 10000 + 10000·(90−80)/20; 20000 + 30000·(90−60)/35; 200000 + 300000·(90−85)/15.
PROMPT_P90 = {"m3-interactive": 15000.0, "m3-repo": 20000 + 30000 * 30 / 35, "m3-extended": 300000.0}
LATENCY_OF = {"m3-interactive": LATENCY_DEFAULT, "m3-repo": LATENCY_DEFAULT, "m3-extended": LATENCY_CUSTOM}
TOKEN_LAYOUT_OF = {name: layout for name, (layout, _) in PROMPT_TOKENS.items()}
VLLM_LABELS = 'engine="0",model_name="MiniMaxAI/MiniMax-M3"'
GRAFANA = {"$__rate_interval": "1m", "$__range": "1m", "$endpoint": ".*", "$model": ".*", "$class": ".*"}

Dist = tuple[tuple[float, ...], tuple[float, ...]]  # finite upper bounds, cumulative counts incl. +Inf


def _generic(bounds: tuple[float, ...]) -> dict[float, int]:
    """A fixed, uneven distribution over ``bounds`` with 2 observations above the top bucket."""
    return {**{b: 1 + (3 * i) % 7 for i, b in enumerate(bounds)}, float("inf"): 2}


def _cumulative(bounds: tuple[float, ...], counts: dict[float, int]) -> Dist:
    out, total = [], 0.0
    for b in (*bounds, float("inf")):
        total += counts.get(b, 0)
        out.append(total)
    return bounds, tuple(out)


def dist_of(family: str, endpoint: str) -> Dist:
    """What the page of ``endpoint`` (the monitor's, for m3mon_*) holds for histogram ``family``."""
    if family.startswith("m3mon_"):
        return _cumulative(PROBE_LAYOUT, _generic(PROBE_LAYOUT))  # every probe series alike
    if family == "vllm:request_prompt_tokens":
        return _cumulative(*PROMPT_TOKENS[endpoint])
    layout = TOKEN_LAYOUT_OF[endpoint] if "tokens" in family else LATENCY_OF[endpoint]
    return _cumulative(layout, _generic(layout))


def expected_quantile(q: float, dist: Dist) -> float:
    """histogram_quantile as the Prometheus docs define it: linear interpolation inside the bucket
    holding rank q·total, the lowest bucket starting at 0, the +Inf bucket answering the highest
    finite upper bound."""
    bounds, cum = dist
    rank = q * cum[-1]
    b = next(i for i, c in enumerate(cum) if c >= rank)
    if b == len(bounds):
        return bounds[-1]
    lower, below = (bounds[b - 1], cum[b - 1]) if b else (0.0, 0.0)
    return lower + (bounds[b] - lower) * (rank - below) / (cum[b] - below)


def _histogram(family: str, labels: str, dist: Dist, n: int) -> list[str]:
    bounds, cum = dist
    les = [repr(float(b)) for b in bounds] + ["+Inf"]
    lines = [f"# TYPE {family} histogram"]
    lines += [f'{family}_bucket{{{labels},le="{le}"}} {c * n!r}' for le, c in zip(les, cum, strict=True)]
    return [*lines, f"{family}_count{{{labels}}} {cum[-1] * n!r}", f"{family}_sum{{{labels}}} {7.0 * n!r}"]


def _pool_page(families: set[str], endpoint: str, n: int) -> str:
    lines = []
    for f in sorted(x for x in families if x.startswith("vllm:")):
        lines += _histogram(f, VLLM_LABELS, dist_of(f, endpoint), n)
    return "\n".join(lines) + "\n"


def _monitor_page(families: set[str], model: Model, n: int) -> str:
    lines = []
    for f in sorted(x for x in families if x.startswith("m3mon_")):
        series = [
            f'endpoint="{e.name}",class="{rc.name}",kind="chat",cache="{cache}"'
            for rc in model.classes
            for e in model.endpoints_for(rc.name)
            for cache in ("cold", "warm")
        ]
        lines.append(f"# TYPE {f} histogram")
        lines += [x for s in series for x in _histogram(f, s, dist_of(f, ""), n)[1:]]
    return "\n".join(lines) + "\n"


def bucket_targets(model: Model) -> list[tuple[str, str, str]]:
    """(dashboard uid, panel title, expression) of every dashboard query over ``_bucket`` series."""
    out = []
    for uid, d in all_dashboards(model).items():
        for p in d["panels"]:
            out += [(uid, p["title"], t["expr"]) for t in p.get("targets", []) if "_bucket" in t["expr"]]
    return out


def _serve(pages: dict[str, Callable[[int], str]]) -> ThreadingHTTPServer:
    """/metrics pages whose counters grow by their page's counts on every scrape (rates ∝ counts)."""
    scrapes = dict.fromkeys(pages, 0)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path not in pages:
                self.send_error(404)
                return
            with lock:
                scrapes[self.path] += 1
                body = pages[self.path](scrapes[self.path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _pages(model: Model) -> dict[str, Callable[[int], str]]:
    fam = {m for _, _, e in bucket_targets(model) for m in re.findall(r"([\w:]+)_bucket\b", e)}
    pages: dict[str, Callable[[int], str]] = {"/metrics": lambda n: _monitor_page(fam, model, n)}
    for e in model.endpoints:
        pages[f"/pools/{e.name}/metrics"] = functools.partial(_pool_page, fam, e.name)
    return pages


def query(url: str, expr: str) -> list[dict[str, Any]]:
    for k in sorted(GRAFANA, key=len, reverse=True):
        expr = expr.replace(k, GRAFANA[k])
    return prom_query(url, expr)


def _wait(url: str, expr: str, timeout: float) -> None:
    wait_for(lambda: query(url, expr), timeout, expr)


@pytest.fixture(scope="module")
def prom() -> Iterator[tuple[str, Model]]:
    """Prometheus scraping the hand-written pages: (its URL, the example model)."""
    base = load_model(REPO / "examples" / "monitor.yaml")
    server = _serve(_pages(base))
    try:
        root = f"http://127.0.0.1:{server.server_address[1]}"
        endpoints = tuple(dataclasses.replace(e, base_url=f"{root}/pools/{e.name}") for e in base.endpoints)
        # the hand-written monitor page asks no credentials (the example's are compose's)
        model = dataclasses.replace(
            base, endpoints=endpoints, exporter_listen=root.removeprefix("http://"), credentials=None
        )
        cfg = prometheus_config(model, [], alertmanager=f"127.0.0.1:{free_port()}", interval=1.0)
        with (
            tempfile.TemporaryDirectory(prefix="m3mon-layouts-") as tmp,
            running_prometheus(cfg, Path(tmp)) as url,
        ):
            _wait(url, f"count(rate(vllm:request_prompt_tokens_count[1m]) > 0) >= {len(endpoints)}", 40)
            _wait(url, "rate(m3mon_probe_ttft_seconds_count[1m]) > 0", 20)
            yield url, base
    finally:
        server.shutdown()
        server.server_close()


def _q(expr: str) -> float | None:
    """The quantile of a panel's ``histogram_quantile`` (panels wrap it as ``(...) > -Inf``)."""
    m = re.match(r"\s*\(?histogram_quantile\(([0-9.]+),", expr)
    return float(m[1]) if m else None


def _family(expr: str) -> str:
    m = re.search(r"([\w:]+)_bucket\b", expr)
    assert m, expr
    return m[1]


def test_every_dashboard_quantile_is_per_endpoint_and_exact(prom: tuple[str, Model]) -> None:
    url, model = prom
    checked = 0
    for uid, title, expr in bucket_targets(model):
        q = _q(expr)
        if q is None:
            continue
        result = query(url, expr)
        assert result, f"{uid} / {title}: no data for {expr}"
        for r in result:
            endpoint = r["metric"].get("endpoint")
            assert endpoint, f"{uid} / {title}: quantile of buckets summed across endpoints: {expr}"
            want = expected_quantile(q, dist_of(_family(expr), endpoint))
            assert float(r["value"][1]) == pytest.approx(want, rel=1e-9), (uid, title, endpoint, expr)
            checked += 1
    assert checked > 50


def test_heatmaps_hold_the_buckets_of_one_endpoint(prom: tuple[str, Model]) -> None:
    url, model = prom
    heatmaps = [(uid, title, e) for uid, title, e in bucket_targets(model) if _q(e) is None]
    assert len(heatmaps) >= 4
    for uid, title, expr in heatmaps:
        for one in (".*", *(e.name for e in model.endpoints)):  # "All", then each repeated row
            rows: dict[str, dict[float, float]] = {}
            for r in query(url, expr.replace("$endpoint", one)):
                assert "endpoint" in r["metric"], (uid, title, expr)
                rows.setdefault(r["metric"]["endpoint"], {})[float(r["metric"]["le"])] = float(r["value"][1])
            assert set(rows) == ({e.name for e in model.endpoints} if one == ".*" else {one}), (uid, title)
            for endpoint, got in rows.items():
                bounds, cum = dist_of(_family(expr), endpoint)
                assert sorted(got) == [*bounds, float("inf")], (uid, title, endpoint)
                share = [got[le] / got[float("inf")] for le in sorted(got)]
                assert share == pytest.approx([c / cum[-1] for c in cum], rel=1e-9), (uid, title, endpoint)


def test_input_token_p90_per_pool_is_the_hand_computed_value(prom: tuple[str, Model]) -> None:
    url, model = prom
    for name, want in PROMPT_P90.items():
        assert expected_quantile(0.9, dist_of("vllm:request_prompt_tokens", name)) == pytest.approx(want)
    expr = next(e for _, title, e in bucket_targets(model) if title == "Input tokens per request (P90)")
    got = {r["metric"].get("endpoint", "all summed"): float(r["value"][1]) for r in query(url, expr)}
    assert got == pytest.approx(PROMPT_P90, rel=1e-9)


def test_summing_these_pools_by_le_alone_breaks_the_histogram(prom: tuple[str, Model]) -> None:
    """The finding, reproduced: the old fleet query's buckets stop being cumulative."""
    url, _ = prom
    rows = query(url, "sum by (le) (rate(vllm:request_prompt_tokens_bucket[1m]))")
    counts = [v for _, v in sorted((float(r["metric"]["le"]), float(r["value"][1])) for r in rows)]
    assert any(later < earlier for earlier, later in itertools.pairwise(counts))
