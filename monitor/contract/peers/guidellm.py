"""GuideLLM's JSON report (``guidellm run --output kind=json``; 0.8.x, ``metadata.version`` 2).

One run per entry of ``benchmarks`` (a sweep or a list of rates gives several). Fields read, per
benchmark (guidellm/benchmark/schemas; fixtures/peers/SOURCES.md):

* ``config.spec.backend``: ``target`` (the server's URL) and ``model`` (absent when GuideLLM took
  the server's first model).
* ``start_time``, ``duration`` (Unix seconds, seconds: the measured window) and
  ``config.strategy``: ``constant``/``poisson`` → ``rate``; ``concurrent`` → ``streams``;
  ``synchronous`` → concurrency 1; ``throughput`` → a burst.
* ``metrics.request_totals``: ``successful``, ``errored``, ``incomplete`` (requests the tool
  cancelled when the window closed: neither good nor bad events).
* ``requests.successful``: per request ``time_to_first_token_ms``, ``request_latency`` (s),
  ``prompt_tokens``, ``output_tokens``. Used as per-request values only when the list holds every
  successful request (GuideLLM samples it when ``--metrics sample_size`` is set). TPOT is m3mon's
  ``(latency - ttft) / (output_tokens - 1)`` (GuideLLM's own TPOT divides by all output tokens).
  There is no per-token ITL (GuideLLM keeps one mean per request), so ITL clauses are not judged.
* Otherwise ``metrics.time_to_first_token_ms.successful`` and ``metrics.request_latency.successful``:
  ``percentiles`` (``p001`` … ``p999``), ``min``, ``max``, ``count`` — inverse-CDF (nearest-rank)
  percentiles of unweighted per-request values (``DistributionSummary.from_values``).
"""

from __future__ import annotations

from typing import Any

from monitor.contract.peers.model import NEAREST, FormatError, PeerRun, Quantiles, count, mapping, number

TOOL = "GuideLLM"
#: GuideLLM's percentile field names and the percentiles they are.
_POINTS = {"p001": 0.1, "p01": 1.0, "p05": 5.0, "p10": 10.0, "p25": 25.0, "p50": 50.0, "p75": 75.0,
           "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}  # fmt: skip


def is_guidellm(doc: Any) -> bool:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return isinstance(meta, dict) and "guidellm_version" in meta and isinstance(doc.get("benchmarks"), list)


def _load(strategy: dict[str, Any]) -> tuple[str, float | None]:
    kind = strategy.get("type_")
    if kind in ("constant", "poisson"):
        return "rate", number(strategy, "rate")
    if kind == "concurrent":
        return "concurrency", number(strategy, "streams")
    if kind == "synchronous":
        return "concurrency", 1.0
    if kind == "throughput":
        return "burst", None
    raise FormatError(f"strategy {kind!r} is not a load m3mon can place (constant, poisson, concurrent, ...)")


def _quantiles(summary: dict[str, Any], scale: float) -> Quantiles | None:
    n = count(summary, "count")
    if n == 0:
        return None
    pcts = mapping(summary, "percentiles")
    points = {p: v * scale for k, p in _POINTS.items() if (v := number(pcts, k, optional=True)) is not None}
    mean, lo, hi = (number(summary, k, optional=True) for k in ("mean", "min", "max"))
    return Quantiles(n, NEAREST, points, *(None if v is None else v * scale for v in (mean, lo, hi)))


def _per_request(reqs: list[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ttft": [], "e2e": [], "tpot": []}
    for r in reqs:
        keys = ("time_to_first_token_ms", "request_latency", "output_tokens")
        ttft_ms, e2e, n = (number(r, k) for k in keys)
        assert ttft_ms is not None and e2e is not None and n is not None
        ttft = ttft_ms / 1000.0
        out["ttft"].append(ttft)
        out["e2e"].append(e2e)
        if n > 1:
            out["tpot"].append((e2e - ttft) / (n - 1))
    return out


def _mean(metrics: dict[str, Any], key: str) -> tuple[float | None, float]:
    s = mapping(mapping(metrics, key), "successful")
    return number(s, "mean", optional=True), number(s, "total_sum", optional=True) or 0.0


def parse_benchmark(
    b: dict[str, Any], version: str | None, target: str | None, model: str | None = None
) -> PeerRun:
    metrics, totals = mapping(b, "metrics"), mapping(mapping(b, "metrics"), "request_totals")
    completed, failed, incomplete = (count(totals, k) for k in ("successful", "errored", "incomplete"))
    duration = number(b, "duration") or 0.0
    listed = mapping(b, "requests").get("successful")
    reqs: list[dict[str, Any]] = listed if isinstance(listed, list) else []
    whole = len(reqs) == completed > 0
    quantiles = {
        metric: q
        for metric, key, scale in (("ttft", "time_to_first_token_ms", 1e-3), ("e2e", "request_latency", 1.0))
        if (q := _quantiles(mapping(mapping(metrics, key), "successful"), scale)) is not None
    }
    prompt, prompt_sum = _mean(metrics, "prompt_token_count")
    output, output_sum = _mean(metrics, "output_token_count")
    kind, value = _load(mapping(mapping(b, "config"), "strategy"))
    notes = ["TTFT: first token of any kind (reasoning counts); GuideLLM keeps no per-token ITL"]
    if not whole:
        notes.append(f"the request list holds {len(reqs)} of {completed} successful requests: quantiles only")
    return PeerRun(
        tool=TOOL, version=version, started_at=number(b, "start_time") or 0.0, duration=duration,
        load_kind=kind, load_value=value, completed=completed, failed=failed, incomplete=incomplete,
        request_throughput=completed / duration if duration > 0 else 0.0,
        output_throughput=output_sum / duration if duration > 0 else None,
        total_token_throughput=(prompt_sum + output_sum) / duration if duration > 0 else None,
        prompt_tokens=prompt if completed else None, output_tokens=output if completed else None,
        samples=_per_request(reqs) if whole else {},
        quantiles=quantiles, target=target, model=model, notes=tuple(notes),
    )  # fmt: skip


def parse(doc: dict[str, Any]) -> list[PeerRun]:
    meta = mapping(doc, "metadata")
    version = str(meta.get("guidellm_version")) if meta.get("guidellm_version") else None
    backend = mapping(mapping(mapping(doc, "config"), "spec"), "backend") if "config" in doc else {}
    target = str(backend.get("target")) if backend.get("target") else None
    model = str(backend.get("model")) if backend.get("model") else None
    benchmarks = doc["benchmarks"]
    if not benchmarks or not all(isinstance(b, dict) for b in benchmarks):
        raise FormatError("'benchmarks' is empty or not a list of objects")
    return [parse_benchmark(b, version, target, model) for b in benchmarks]
