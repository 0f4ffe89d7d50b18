"""``VLLMEngineStalled``: requests sit in the engine and it counts no token, while it answers.

An engine can stop producing tokens while ``/health`` answers 200 (vllm-project/vllm#39863): the
running requests get nothing, new ones pile up in the queue, and only the probes' timeouts would
notice, minutes later. The engine's own counters show it at once. Per endpoint, over a window of
:func:`window_seconds` (two scrape intervals plus :data:`STALL_GRACE`), the alert fires when

* requests were running or waiting at every sample of the window (the sum of the minimums of both
  gauges is above 0): an idle engine, or one whose first request just arrived, never fires;
* the prompt-token and generation-token counters rose by exactly 0 (``increase`` sees a counter
  reset as a rise, so a restart is no stall; it needs two samples, so absent or stale counters
  are no stall either);
* the KV-cache usage did not rise: a lone long prefill counts its prompt tokens only with its
  first token, but it allocates KV blocks chunk by chunk (vLLM V1, SGLang), so it is no stall;
* Prometheus scraped the endpoint at every attempt of the window (``up`` 1 throughout): a failed
  or paused scrape is absence of data, not a stall;
* and the monitor does not report ``/health`` down (``m3mon_endpoint_health_up`` 0): that is an
  outage, which ``VLLMEndpointDown`` and the availability SLO own. Without the monitor the alert
  still works from the engine's counters alone.

Metric names come from :data:`monitor.scrape.names.SOURCES`, the per-generation map the collector
reads with, for each backend the configuration serves: where a field has several generations'
names, the newest present is read (``a or b``, as the collector does). With no ``for:``, the alert
fires at the first evaluation after the window holds only flat samples: within the window plus one
evaluation interval (15 s in the generated prometheus.yml) of the stall, two scrape intervals
plus 25 s, inside the promised 30 s (Prometheus 2 range selectors include their left end; the
bound holds either way).
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert
from monitor.model import Endpoint, Model
from monitor.scrape.names import SOURCES, Kind

#: Seconds added to two scrape intervals to make the window: window + one evaluation interval (15 s
#: in the generated prometheus.yml) stays 5 s inside the promised two scrape intervals plus 30 s
#: (with 15 s here a live run fired 33.5 s after the freeze against a 34 s bound).
STALL_GRACE = 10
#: The detection bound the alert keeps: this many scrape intervals plus :data:`STALL_BOUND_EXTRA` s.
STALL_BOUND_SCRAPES = 2
STALL_BOUND_EXTRA = 30

#: Canonical fields (monitor.scrape.names) the alert reads.
REQUEST_GAUGES = ("running", "waiting")
TOKEN_COUNTERS = ("generation_tokens", "prompt_tokens")
KV_GAUGE = "kv_cache_usage"


def window_seconds(scrape_interval: float) -> int:
    """The window an endpoint scraped every ``scrape_interval`` seconds is judged over."""
    return round(STALL_BOUND_SCRAPES * scrape_interval) + STALL_GRACE


def bound_seconds(scrape_interval: float) -> float:
    """The promised detection time: two scrape intervals plus 30 s."""
    return STALL_BOUND_SCRAPES * scrape_interval + STALL_BOUND_EXTRA


def family_names(backend: str, field: str, kind: Kind) -> list[str]:
    """The exposed names of ``field`` for ``backend`` (``vllm``/``sglang``), newest first."""
    rows = sorted((s for s in SOURCES if s.field == field and s.kind == kind and not s.where
                   and s.metric.startswith(f"{backend}:")), key=lambda s: s.rank)  # fmt: skip
    names = list(dict.fromkeys(s.metric for s in rows))
    if not names:
        raise ValueError(f"no {kind} named for {field!r} on {backend}")
    return names


def _read(backend: str, field: str, kind: Kind, fn: str, sel: str, window: str) -> str:
    """``sum by (endpoint) (fn(name{sel}[window]))`` for the newest name present."""
    terms = [
        f"sum by (endpoint) ({fn}({name}{sel}[{window}]))" for name in family_names(backend, field, kind)
    ]
    return terms[0] if len(terms) == 1 else "(" + " or ".join(terms) + ")"


def _group_expr(model: Model, backend: str, endpoints: list[Endpoint], seconds: int) -> str:
    sel = q.matchers([(cv.L_JOB, q.eq(model.alerting.job_vllm)),
                      (cv.L_ENDPOINT, q.regex(e.name for e in endpoints))])  # fmt: skip
    w = f"{seconds}s"
    present = "\n  + ".join(_read(backend, f, "gauge", "min_over_time", sel, w) for f in REQUEST_GAUGES)
    counted = "\n  + ".join(_read(backend, f, "counter", "increase", sel, w) for f in TOKEN_COUNTERS)
    kv = _read(backend, KV_GAUGE, "gauge", "delta", sel, w)
    return (
        f"(\n  {present}\n) > 0\n"
        f"and on (endpoint)\n(\n  {counted}\n) == 0\n"
        f"and on (endpoint)\nmin by (endpoint) (min_over_time(up{sel}[{w}])) == 1\n"
        f"unless on (endpoint)\n{kv} > 0"
    )


def engine_stalled_expr(model: Model) -> str:
    """One term per backend and scrape interval of the configured endpoints, joined with ``or``,
    less the endpoints whose ``/health`` the monitor reports down."""
    groups: dict[tuple[str, int], list[Endpoint]] = {}
    for e in model.endpoints:
        groups.setdefault((e.backend, window_seconds(e.scrape_interval)), []).append(e)
    terms = [_group_expr(model, b, eps, s) for (b, s), eps in sorted(groups.items())]
    joined = "\nor\n".join("(\n" + "\n".join("  " + line for line in t.splitlines()) + "\n)" for t in terms)
    health = f"max by (endpoint) ({cv.HEALTH_UP}{q.monitor_selector(model.alerting)}) == 0"
    return f"(\n{joined}\n)\nunless on (endpoint)\n{health}"


def stall_alerts(model: Model) -> list[Alert]:
    if not model.endpoints:
        return []
    return [
        Alert(
            cv.ALERT_ENGINE_STALLED,
            engine_stalled_expr(model),
            "page",
            "The engine on {{ $labels.endpoint }} is stalled: requests wait, no token is produced",
            '{{ printf "%.0f" $value }} request(s) stayed running or waiting on {{ $labels.endpoint }} while '
            "the engine counted no prompt or generation token and allocated no KV cache for two scrape "
            f"intervals plus {STALL_GRACE} s, and its /metrics (and /health) still answer: a hung engine "
            "behind a passing health check. Streams stop mid-response and the queue grows.",
        )
    ]
