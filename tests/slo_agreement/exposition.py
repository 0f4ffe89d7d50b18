"""Pages that Prometheus and the collector read: vLLM's ``/metrics`` written by hand, and parsing.

:class:`VLLMPage` keeps one pool's cumulative counters (``request_success_total`` by
``finished_reason`` and the SLI's latency histogram with the pool's own bucket edges) and renders
them in the text format vLLM's ``prometheus_client`` writes: ``le`` as ``repr(float)``, values as
floats, ``_created`` gauges and ``process_start_time_seconds``. Every series exists from start-up
at 0, as vLLM creates them. A restart starts the counters over and changes the start times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from tests.slo_agreement.config import MODEL_ID
from tests.slo_agreement.oracle import pool_edges
from tests.slo_agreement.streams import FINISHED_REASONS, VLLM_HISTOGRAMS, Scenario, ServerMinute

Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]
Pages = dict[str, list[str | None]]  # per pool, its page at every minute (None: the scrape failed)

_BASE = f'engine="0",model_name="{MODEL_ID}"'


def le(edge: float) -> str:
    return "+Inf" if math.isinf(edge) else repr(float(edge))


def parse(text: str) -> list[Sample]:
    """Samples of an exposition, ``_created`` series left out (no rule reads them)."""
    out: list[Sample] = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.endswith("_created"):
                out.append((s.name, tuple(sorted(s.labels.items())), float(s.value)))
    return out


@dataclass
class VLLMPage:
    """The cumulative state of one vLLM pool's page."""

    scn: Scenario
    pool: str
    t0: float
    started: float = 0.0
    finished: dict[str, float] = field(default_factory=dict)
    buckets: list[float] = field(default_factory=list)
    count: float = 0.0
    total: float = 0.0

    def __post_init__(self) -> None:
        self.edges = (*sorted(pool_edges(self.scn, self.pool)), math.inf)
        self.restart(self.t0 - 30.0)

    @property
    def histogram(self) -> str | None:
        found = VLLM_HISTOGRAMS.get(self.scn.slo.sli)
        return found[0] if found is not None else None

    def restart(self, at: float) -> None:
        self.started = at
        self.finished = dict.fromkeys(FINISHED_REASONS, 0.0)
        self.buckets = [0.0] * len(self.edges)
        self.count = self.total = 0.0

    def counters(self) -> list[float]:
        return [*self.finished.values(), *self.buckets, self.count]

    def advance(self, step: ServerMinute) -> None:
        """Add the events the scrape at ``step.minute`` sees for the first time."""
        before = self.counters()
        if step.restart:
            self.restart(self.t0 + step.minute * 60.0 - 10.0)
        self._add(step)
        if step.restart and any(0 < old <= new for old, new in zip(before, self.counters(), strict=True)):
            # Prometheus sees a restart only in series that went down; the collector also reads
            # the changed start time. Such a scenario would test that gap, not the contract.
            raise ValueError(
                f"{self.scn.name}: a series does not go down at the restart at minute {step.minute}"
            )

    def _add(self, step: ServerMinute) -> None:
        for reason, n in step.finished:
            self.finished[reason] += n
        for value, n in step.latencies:
            for i, edge in enumerate(self.edges):
                if value <= edge:
                    self.buckets[i] += n
            self.count += n
            self.total += value * n

    def text(self) -> str:
        made = repr(self.started + 1.0)
        lines = [
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {self.started!r}",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
        ]
        for reason, n in self.finished.items():
            lines.append(f'vllm:request_success_total{{{_BASE},finished_reason="{reason}"}} {n!r}')
        lines += ["# HELP vllm:request_success_created Count of successfully processed requests.",
                  "# TYPE vllm:request_success_created gauge"]  # fmt: skip
        for reason in self.finished:
            lines.append(f'vllm:request_success_created{{{_BASE},finished_reason="{reason}"}} {made}')
        if self.histogram is not None:
            lines += self._histogram_lines(self.histogram, made)
        return "\n".join(lines) + "\n"

    def _histogram_lines(self, name: str, made: str) -> list[str]:
        lines = [f"# HELP {name} Histogram of {self.scn.slo.sli} in seconds.", f"# TYPE {name} histogram"]
        for edge, n in zip(self.edges, self.buckets, strict=True):
            lines.append(f'{name}_bucket{{engine="0",le="{le(edge)}",model_name="{MODEL_ID}"}} {n!r}')
        lines.append(f"{name}_count{{{_BASE}}} {self.count!r}")
        lines.append(f"{name}_sum{{{_BASE}}} {self.total!r}")
        lines += [f"# HELP {name}_created Histogram of {self.scn.slo.sli} in seconds.",
                  f"# TYPE {name}_created gauge", f"{name}_created{{{_BASE}}} {made}"]  # fmt: skip
        return lines


def server_pages(scn: Scenario, t0: float) -> Pages:
    """Per pool, the page text at every minute (None while the pool's scrape fails)."""
    by_minute: dict[tuple[str, int], ServerMinute] = {(s.pool, s.minute): s for s in scn.server}
    out: Pages = {}
    for pool in scn.pools:
        page, texts = VLLMPage(scn, pool.name, t0), list[str | None]()
        for m in range(scn.minutes + 1):
            step = by_minute.get((pool.name, m))
            if not pool.up(m):
                texts.append(None)
                continue
            if step is not None:
                page.advance(step)
            texts.append(page.text())
        out[pool.name] = texts
    return out
