"""AIPerf's ``profile_export_aiperf.json`` (``aiperf profile``; 0.13, ``schema_version`` 1.4).

Quantiles only (the per-request records are in ``profile_export.jsonl``, not read here). Fields
read (aiperf/exporters/metrics_json_exporter.py, aiperf/metrics; fixtures/peers/SOURCES.md):

* ``input_config.models.items[0].name`` (the model) and ``input_config.endpoint.urls[0]`` (the
  server's URL).
* ``start_time`` (ISO 8601, local time, no zone) and ``benchmark_duration.avg`` (seconds).
* ``input_config.phases``: the ``profiling`` phase's ``rate`` (an arrival rate) or
  ``concurrency``.
* ``request_count.avg`` (completed), ``error_request_count.avg`` (failed; absent when none).
* Each metric as ``{unit, avg, min, max, count, p1 … p99}``; per-request metrics' percentiles
  are linear (``numpy.percentile``'s definition, aiperf/metrics/metric_dicts.py):
  ``time_to_first_token`` (ms, TTFT), ``request_latency`` (ms, e2e), ``inter_token_latency``
  (ms; AIPerf's ITL is m3mon's TPOT: ``(e2e - TTFT) / (output tokens - 1)``, judged only when the
  run counted tokens with the server's usage, ``--use-server-token-count``: the client tokenizer
  may not be the server's). ``inter_chunk_latency`` is a t-digest estimate over chunks, not
  per-token samples: ITL clauses are not judged.
* ``usage_prompt_tokens`` / ``usage_completion_tokens`` (the server's counts) for token sizes,
  else ``input_sequence_length`` / ``output_sequence_length`` (the client tokenizer's);
  ``request_throughput``, ``output_token_throughput``, ``total_token_throughput``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from monitor.contract.peers.model import LINEAR, FormatError, PeerRun, Quantiles, mapping, number, value

TOOL = "AIPerf"
_POINTS = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0)
_SCALE = {"ms": 1e-3, "sec": 1.0, "s": 1.0, "ns": 1e-9}


def is_aiperf(doc: Any) -> bool:
    return isinstance(doc, dict) and "aiperf_version" in doc and "input_config" in doc


def _avg(doc: dict[str, Any], key: str) -> float | None:
    value = doc.get(key)
    return number(value, "avg", optional=True) if isinstance(value, dict) else None


def _quantiles(doc: dict[str, Any], key: str, judged: bool) -> Quantiles | None:
    m = doc.get(key)
    if not isinstance(m, dict) or not m.get("count"):
        return None
    scale = _SCALE.get(str(m.get("unit")))
    if scale is None:
        raise FormatError(f"{key}: unit {m.get('unit')!r} is not a time unit")
    reported = {p: m.get(f"p{p:g}") for p in _POINTS}
    points = {p: value(v, f"{key}.p{p:g}") * scale for p, v in reported.items() if v is not None}
    mean, lo, hi = (number(m, k, optional=True) for k in ("avg", "min", "max"))
    n = int(number(m, "count") or 0) if judged else None
    return Quantiles(n, LINEAR, points, *(None if v is None else v * scale for v in (mean, lo, hi)))


def _flag(node: Any, key: str) -> bool:
    """Whether ``key`` is set truthy anywhere in the nested config."""
    if isinstance(node, dict):
        return bool(node.get(key)) or any(_flag(v, key) for v in node.values())
    return isinstance(node, list) and any(_flag(v, key) for v in node)


def _load(config: dict[str, Any]) -> tuple[str, float | None]:
    phases = [p for p in config.get("phases") or [] if isinstance(p, dict) and p.get("kind") == "profiling"]
    if not phases:
        raise FormatError("input_config.phases has no profiling phase")
    phase = phases[0]
    if phase.get("rate") is not None:
        return "rate", number(phase, "rate")
    if phase.get("concurrency") is not None:
        return "concurrency", number(phase, "concurrency")
    return "burst", None


def _started(doc: dict[str, Any]) -> float:
    try:
        return datetime.fromisoformat(str(doc.get("start_time"))).timestamp()
    except ValueError:
        raise FormatError(f"field 'start_time' is {doc.get('start_time')!r}, expected ISO 8601") from None


def _model(config: dict[str, Any]) -> str | None:
    models = config.get("models")
    items = models.get("items") if isinstance(models, dict) else None
    first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}
    return str(first["name"]) if first.get("name") else None


def parse(doc: dict[str, Any]) -> PeerRun:
    config = mapping(doc, "input_config")
    completed = int(_avg(doc, "request_count") or 0)
    failed = int(_avg(doc, "error_request_count") or 0)
    server_tokens = _flag(config, "use_server_token_count")
    wanted = (("ttft", "time_to_first_token", True), ("e2e", "request_latency", True),
              ("tpot", "inter_token_latency", server_tokens))  # fmt: skip
    quantiles = {m: q for m, key, judged in wanted if (q := _quantiles(doc, key, judged)) is not None}
    endpoint = config.get("endpoint")
    urls = (endpoint.get("urls") if isinstance(endpoint, dict) else None) or [None]
    notes = ["quantiles only (per-request records are in profile_export.jsonl)"]
    if not server_tokens:
        notes.append("TPOT (AIPerf's ITL) counted with the client tokenizer: shown, not judged")
    return PeerRun(
        tool=TOOL, version=str(doc.get("aiperf_version")), started_at=_started(doc),
        duration=_avg(doc, "benchmark_duration") or 0.0, load_kind=_load(config)[0],
        load_value=_load(config)[1], completed=completed, failed=failed,
        request_throughput=_avg(doc, "request_throughput") or 0.0,
        output_throughput=_avg(doc, "output_token_throughput"),
        total_token_throughput=_avg(doc, "total_token_throughput"),
        prompt_tokens=_avg(doc, "usage_prompt_tokens") or _avg(doc, "input_sequence_length"),
        output_tokens=_avg(doc, "usage_completion_tokens") or _avg(doc, "output_sequence_length"),
        quantiles=quantiles, target=str(urls[0]) if urls[0] else None, model=_model(config),
        notes=tuple(notes),
    )  # fmt: skip
