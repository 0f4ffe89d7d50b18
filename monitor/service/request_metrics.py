"""The requests behind each burning SLO, as series the burn notifications quote.

``m3mon_slo_request_info{class,slo,rank,trace_id,endpoint,outcome,stages,link}`` = rank (1 the
worst): for every SLO whose last evaluation holds bad events in its 1h window, the bad requests of
the last 15 minutes (:func:`monitor.report.collect_requests.requests_behind`: failed first, then the
slowest), at most :data:`TOP` of them. An SLO without bad events publishes nothing, so the series
only exist (and only churn) during an incident; the labels are bounded (3 per burning SLO).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Gauge

from monitor import conventions as cv
from monitor.model import SLO
from monitor.report.collect_requests import STAGE_ORDER, Request

TOP = 3


def stages_text(sli: str, value: float | None, stages: dict[str, float]) -> str:
    """``ttft 3.20s: queue 2.10s, prefill 0.90s`` (stages of a second or more of a percent, in order)."""
    head = f"{sli} {value:.2f}s" if value is not None else sli
    parts = [f"{k} {stages[k]:.2f}s" for k in STAGE_ORDER if k in stages and stages[k] >= 0.005]
    return f"{head}: {', '.join(parts)}" if parts else head


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.info = Gauge(
            cv.SLO_REQUEST_INFO,
            "The bad requests behind a burning SLO (failed first, then the slowest; last 15 min): "
            "value = rank, with trace id, endpoint, outcome and stage breakdown.",
            [
                cv.L_CLASS,
                cv.L_SLO,
                cv.L_RANK,
                cv.L_TRACE_ID,
                cv.L_ENDPOINT,
                cv.L_OUTCOME,
                cv.L_STAGES,
                cv.L_LINK,
            ],
            registry=registry,
        )
        self._children: dict[str, set[tuple[str, ...]]] = {}

    def publish(
        self, slo: SLO, requests: Sequence[Request], link: Callable[[str | None], str | None]
    ) -> None:
        """Show ``requests`` (bad ones, worst first) for ``slo``; an empty list withdraws it."""
        now: set[tuple[str, ...]] = set()
        for rank, r in enumerate(requests[:TOP], start=1):
            stages = stages_text(slo.sli, r.value, r.stages)
            labels = (slo.request_class, slo.name, str(rank), r.trace_id or "", r.endpoint or "", r.outcome,
                      stages, link(r.trace_id) or "")  # fmt: skip
            now.add(labels)
            self.info.labels(*labels).set(rank)
        for gone in self._children.get(slo.id, set()) - now:
            self.info.remove(*gone)
        self._children[slo.id] = now

    def forget_others(self, keep: set[str]) -> None:
        for slo_id in set(self._children) - keep:
            for gone in self._children.pop(slo_id):
                self.info.remove(*gone)
