"""``vllm bench serve --save-result`` JSON (vllm/benchmarks/serve.py; fixtures/peers/SOURCES.md).

The file is one JSON object per run (``--append-result`` adds one per line). Fields read:

* ``date`` (``%Y%m%d-%H%M%S``, local time, written when the run **ended**) and ``duration``
  (``benchmark_duration``, seconds): the run spans ``date - duration`` to ``date``.
* ``request_rate`` (a number, or ``"inf"``) and ``max_concurrency``: the load — a finite rate is
  an arrival rate; an infinite one with a concurrency cap is that concurrency; neither is a burst.
* ``completed``, ``failed``, ``total_input_tokens`` (the dataset's planned prompt lengths, not the
  server's count), ``total_output_tokens``, ``request_throughput``, ``output_throughput``,
  ``total_token_throughput``.
* With ``--save-detailed``, per request: ``errors`` (``""`` when it succeeded), ``ttfts``,
  ``latencies`` (e2e), ``output_lens``, ``itls`` (the gaps between stream chunks). TPOT is
  ``(latency - ttft) / (output_len - 1)`` as vLLM computes it; ITL samples follow m3mon's
  definition: each chunk gap split over the request's mean tokens per chunk
  (:func:`monitor.probes.timing.itl_samples` without running usage); the stall is a request's
  longest chunk gap.
* Without it: ``mean_*_ms``, ``median_*_ms`` and ``p{P}_*_ms`` for ``ttft``, ``tpot``, ``itl``,
  ``e2el`` (``numpy.percentile``, linear). Only TTFT and e2e say over how many values (every
  completed request); TPOT and ITL quantiles are shown, never judged. ``latencies`` stays in the
  file even then; without ``errors`` it gives per-request e2e only when no request failed.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from monitor.contract.peers.model import LINEAR, FormatError, PeerRun, Quantiles, count, number, value

TOOL = "vllm bench serve"
_METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}


def is_vllm_bench(doc: Any) -> bool:
    return isinstance(doc, dict) and "completed" in doc and "date" in doc and "backend" in doc


def _ended(doc: dict[str, Any]) -> float:
    try:
        return datetime.strptime(str(doc.get("date")), "%Y%m%d-%H%M%S").timestamp()
    except ValueError:
        raise FormatError(f"field 'date' is {doc.get('date')!r}, expected YYYYmmdd-HHMMSS") from None


def _load(doc: dict[str, Any]) -> tuple[str, float | None]:
    rate = math.inf if doc.get("request_rate") == "inf" else number(doc, "request_rate") or 0.0
    cap = doc.get("max_concurrency")
    if math.isfinite(rate):
        return "rate", rate
    if cap is not None:
        return "concurrency", number(doc, "max_concurrency")
    return "burst", None


def _per_request(doc: dict[str, Any], completed: int) -> dict[str, list[float]]:
    keys = ("errors", "ttfts", "latencies", "output_lens", "itls")
    if not all(isinstance(doc.get(k), list) for k in keys):
        return _latencies_only(doc, completed)
    lens = {len(doc[k]) for k in keys}
    if len(lens) != 1:
        raise FormatError(f"per-request lists {', '.join(keys)} differ in length")
    ok = [i for i, err in enumerate(doc["errors"]) if not err]
    if len(ok) != completed:
        raise FormatError(f"{len(ok)} requests without an error, but 'completed' is {completed}")
    out: dict[str, list[float]] = {"ttft": [], "e2e": [], "tpot": [], "itl": [], "stall": []}
    for i in ok:
        ttft, e2e = value(doc["ttfts"][i], f"ttfts[{i}]"), value(doc["latencies"][i], f"latencies[{i}]")
        n, gaps = value(doc["output_lens"][i], f"output_lens[{i}]"), doc["itls"][i]
        if not isinstance(gaps, list):
            raise FormatError(f"itls[{i}] is {gaps!r}, expected a list")
        gaps = [value(g, f"itls[{i}]") for g in gaps]
        out["ttft"].append(ttft)
        out["e2e"].append(e2e)
        if n > 1:
            out["tpot"].append((e2e - ttft) / (n - 1))
        chunks = len(gaps) + 1
        per_chunk = n / chunks if n >= chunks else 1.0
        for gap in gaps:
            out["itl"].extend([gap / per_chunk] * max(1, round(per_chunk)))
        if gaps:
            out["stall"].append(max(gaps))
    return out


def _latencies_only(doc: dict[str, Any], completed: int) -> dict[str, list[float]]:
    lat = doc.get("latencies")
    if isinstance(lat, list) and doc.get("failed") == 0 and len(lat) == completed:
        return {"e2e": [value(v, f"latencies[{i}]") for i, v in enumerate(lat)]}
    return {}


def _ms(doc: dict[str, Any], key: str) -> float:
    """A reported figure in ms, in seconds (NaN passes here and is refused by the shared checks)."""
    return value(doc[key], f"field {key!r}") / 1000.0


def _quantiles(doc: dict[str, Any], completed: int) -> dict[str, Quantiles]:
    out: dict[str, Quantiles] = {}
    for name, metric in _METRICS.items():
        points = {}
        for key in doc:
            m = re.fullmatch(rf"p(\d+(?:\.\d+)?)_{name}_ms", key)
            if m:
                points[float(m.group(1))] = _ms(doc, key)
        if f"median_{name}_ms" in doc:
            points[50.0] = _ms(doc, f"median_{name}_ms")
        if not points:
            continue
        mean = _ms(doc, f"mean_{name}_ms") if f"mean_{name}_ms" in doc else None
        n = completed if metric in ("ttft", "e2e") else None
        out[metric] = Quantiles(n, LINEAR, points, mean)
    return out


def parse(doc: dict[str, Any]) -> PeerRun:
    completed, failed = count(doc, "completed"), count(doc, "failed")
    duration = number(doc, "duration")
    assert duration is not None
    kind, value = _load(doc)
    samples = _per_request(doc, completed)
    notes = ["prompt sizes are the dataset's planned lengths (input_lens), not the server's count"]
    if "itl" in samples:
        notes.append("ITL: vLLM's chunk gaps, each split over the request's mean tokens per chunk")
    per = max(completed, 1)
    return PeerRun(
        tool=TOOL,
        version=None,
        started_at=_ended(doc) - duration,
        duration=duration,
        load_kind=kind,
        load_value=value,
        completed=completed,
        failed=failed,
        request_throughput=number(doc, "request_throughput") or 0.0,
        output_throughput=number(doc, "output_throughput", optional=True),
        total_token_throughput=number(doc, "total_token_throughput", optional=True),
        prompt_tokens=(number(doc, "total_input_tokens") or 0.0) / per if completed else None,
        output_tokens=(number(doc, "total_output_tokens", optional=True) or 0.0) / per if completed else None,
        samples={k: v for k, v in samples.items() if v},
        quantiles=_quantiles(doc, completed),
        model=str(doc.get("model_id")) if doc.get("model_id") else None,
        notes=tuple(notes),
    )
