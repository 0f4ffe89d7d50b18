"""Where the tail goes: the stage shares of a class's slowest probe requests, against its typical ones.

The M3 guide's question — which stage owns P95/P99? — is answered from the probe requests that
carry a server view (per-request metrics or their vLLM span, :mod:`monitor.report.breakdown`; the
service's bottleneck verdict reads the last window's probes, :mod:`monitor.bottleneck.live`):

* the **tail** of a latency (``ttft`` or ``e2e``) is the requests at or above its nearest-rank
  P95 over the period, and its **far tail** the requests at or above its nearest-rank P99; the
  **typical** band, for contrast, the requests at or below its P50;
* a stage's **share** in a band is the stage's seconds summed over the band's requests divided by
  the latency's seconds summed over them; ``other`` is what the stages do not explain (client-side
  work, and with per-request metrics alone the API server's tokenization, which is then inside
  network);
* the stages of TTFT are retries (the time before the final attempt: the probe's retry policy and
  a gateway's retries in the trace), network (client TTFT − retries − the server's TTFT),
  tokenization (the server span's arrival → queued: ``ttft − queue − prefill``), queue and
  prefill; of e2e also decode and tool turnaround (agent sessions). Retries and tokenization count
  0 for a request that did not report them;
* the **dominant** stage of a band is the one with the largest share (``other`` included).

A band needs :data:`MIN_BAND` requests with a server view for an answer: :data:`MIN_REQUESTS` (20)
for the P95+ and ≤ P50 bands, :data:`MIN_REQUESTS_P99` (100) for the P99+ band — the same rule,
scaled: the least count whose nearest-rank tail holds two requests (at 20 the P95 tail is the
19th and 20th, at 100 the P99 tail the 99th and 100th). Below that it says why instead (``not
enough requests`` in the report), never a share of one request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monitor.model import Model

#: Where a sample's server view came from (the report's breakdown names its sources with these).
SOURCE_METRICS = "per-request metrics"
SOURCE_SPANS = "OTLP spans"


@dataclass(frozen=True)
class Sample:
    """The parts one probe reported, when it started, and where its server view came from."""

    request_class: str
    at: float
    parts: dict[str, float]
    view: str | None  # SOURCE_METRICS, SOURCE_SPANS or None
    ttft: float | None = None  # the probe's client-side TTFT and e2e
    e2e: float | None = None
    gateway_retry: bool = False  # the retry part includes a gateway's retries seen in the trace
    tenant: str | None = None  # real traffic: the request's tenant label (None: a probe, or unlabelled)


STAGES: dict[str, tuple[str, ...]] = {
    "ttft": ("retry", "network", "tokenization", "queue", "prefill"),
    "e2e": ("retry", "network", "tokenization", "queue", "prefill", "decode", "tool_turnaround"),
}
#: Stages a request may lack and still be attributed (0 seconds when it lacks them).
OPTIONAL = ("retry", "tokenization", "tool_turnaround")
#: The tail (at or above P95), the far tail (at or above P99), the typical band (at or below P50).
BANDS = ("p95", "p99", "p50")
#: Each band's percentile (nearest rank); the P50 band is the requests at or below it.
PERCENTILE = {"p95": 95, "p99": 99, "p50": 50}
MIN_REQUESTS = 20
MIN_REQUESTS_P99 = 100
#: Requests with a server view a band needs (module docstring): its tail then holds two requests.
MIN_BAND = {"p95": MIN_REQUESTS, "p99": MIN_REQUESTS_P99, "p50": MIN_REQUESTS}
OTHER = "other"


@dataclass(frozen=True)
class TailShare:
    """One class's stage shares of one latency in one band."""

    request_class: str
    metric: str  # "ttft" or "e2e"
    band: str  # "p95"/"p99": at or above the P95/P99; "p50": at or below the P50
    requests: int  # requests in the band (without an answer: the requests there were)
    bound: float | None  # the band's edge in seconds (the P95, P99 or P50)
    shares: tuple[tuple[str, float], ...]  # (stage, share) in STAGES order, then OTHER
    why_none: str | None = None  # set (and shares empty) when there is no answer
    #: the seconds the shares are of, per request of the band (a stage's seconds: its share of this)
    per_request: float | None = None

    @property
    def dominant(self) -> str | None:
        return max(self.shares, key=lambda s: s[1])[0] if self.shares else None

    def seconds(self, stage: str) -> float | None:
        """The mean seconds per request of the band that ``stage`` (or ``other``) holds."""
        got = dict(self.shares).get(stage)
        return None if got is None or self.per_request is None else got * self.per_request


def _rank(ordered: Sequence[float], q: float) -> float:
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def _value(s: Sample, metric: str) -> float | None:
    return s.ttft if metric == "ttft" else s.e2e


def _usable(s: Sample, metric: str) -> bool:
    needed = [p for p in STAGES[metric] if p not in OPTIONAL]
    value = _value(s, metric)
    return s.view is not None and value is not None and value > 0 and all(p in s.parts for p in needed)


def _band(cls: str, metric: str, band: str, rows: list[Sample], edge: float | None = None) -> TailShare:
    ordered = sorted(v for s in rows if (v := _value(s, metric)) is not None)
    bound = _rank(ordered, PERCENTILE[band]) if edge is None else edge
    low = band == "p50"
    values = [(s, _value(s, metric) or 0.0) for s in rows]
    inside = [s for s, v in values if (v <= bound if low else v >= bound)]
    if not inside:
        side = "at or below" if low else "at or above"
        why = f"no request with a server view {side} {bound:.2f} s of {len(rows)}"
        return TailShare(cls, metric, band, 0, bound, (), why)
    seconds = [(p, sum(max(0.0, s.parts.get(p, 0.0)) for s in inside)) for p in STAGES[metric]]
    # never a negative share: a stage below 0 (a clock artefact) counts 0, and stages that add up
    # to more than the latency (two clocks) are shares of their own sum, leaving "other" at 0
    total = max(sum(_value(s, metric) or 0.0 for s in inside), sum(v for _, v in seconds))
    shares = [(p, v / total) for p, v in seconds]
    shares.append((OTHER, max(0.0, 1.0 - sum(v for _, v in shares))))
    return TailShare(cls, metric, band, len(inside), bound, tuple(shares), per_request=total / len(inside))


#: What the samples are, in the reason a class has no answer.
PROBES = "probe request(s) with a server view (per-request metrics or spans)"
TRAFFIC = "real-traffic request(s) (server spans)"


#: A band's edge given by the caller, per (class, latency, band): the percentile it printed elsewhere.
Edges = Mapping[tuple[str, str, str], float]


def attribute_class(
    cls: str, samples: Sequence[Sample], what: str = PROBES, edges: Edges | None = None
) -> tuple[TailShare, ...]:
    """One class's P95+, P99+ and typical shares of TTFT and e2e from ``samples`` (module
    docstring). ``edges``: the bands' edges when the caller has the percentiles already (the
    report's latency table, over every answered probe), else each is the samples' nearest rank."""
    mine = [s for s in samples if s.request_class == cls]
    return tuple(
        band_share(cls, mine, metric, band, what, (edges or {}).get((cls, metric, band)))
        for metric in STAGES
        for band in BANDS
    )


def usable(samples: Sequence[Sample], metric: str) -> list[Sample]:
    """The samples that can be attributed for ``metric`` (a server view and its required stages)."""
    return [s for s in samples if _usable(s, metric)]


def band_share(
    cls: str, samples: Sequence[Sample], metric: str, band: str, what: str = PROBES, edge: float | None = None
) -> TailShare:
    """The shares of one band of ``metric`` over ``samples`` (all of class ``cls``, or a subset of
    its requests, such as one tenant's); not attributed below :data:`MIN_BAND` usable requests."""
    rows = usable(samples, metric)
    if len(rows) < MIN_BAND[band]:
        why = f"{len(rows)} {what}; {MIN_BAND[band]} needed"
        return TailShare(cls, metric, band, len(rows), None, (), why)
    return _band(cls, metric, band, rows, edge)


def attribute(
    model: Model, samples: Sequence[Sample], what: str = PROBES, edges: Edges | None = None
) -> tuple[TailShare, ...]:
    """Every class's tail and typical shares of TTFT and e2e (module docstring)."""
    return tuple(s for rc in model.classes for s in attribute_class(rc.name, samples, what, edges))
