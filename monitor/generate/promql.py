"""Small PromQL builders shared by the rule and dashboard generators.

Histogram ``le`` labels are matched as exact strings, so each exporter's rendering of a bucket
edge must be reproduced exactly: Python's ``prometheus_client`` (used by both vLLM and the
monitor's own exporter) writes ``repr(float(edge))`` - ``"2.5"``, ``"5.0"``, ``"0.1"``,
``"2560.0"``. Go exporters and Prometheus 3 write the shortest form (``"5"``); that convention is
kept here too so a Go-side target can be supported by choosing the function.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from monitor import conventions as cv
from monitor import vllm_buckets
from monitor.model import SLO, Model
from monitor.model_service import Alerting

#: Server-side latency SLI -> (vLLM histogram, its default bucket edges).
VLLM_LATENCY: dict[str, tuple[str, tuple[float, ...]]] = {
    "ttft": (cv.VLLM_TTFT, vllm_buckets.TIME_TO_FIRST_TOKEN),
    "itl": (cv.VLLM_ITL, vllm_buckets.INTER_TOKEN_LATENCY),
    "tpot": (cv.VLLM_TPOT, vllm_buckets.INTER_TOKEN_LATENCY),
    "e2e": (cv.VLLM_E2E, vllm_buckets.REQUEST_LATENCY),
    "queue_time": (cv.VLLM_QUEUE, vllm_buckets.REQUEST_LATENCY),
}

#: Probe latency SLI -> the monitor's histogram.
PROBE_LATENCY: dict[str, str] = {
    "ttft": cv.PROBE_TTFT,
    "itl": cv.PROBE_ITL,
    "tpot": cv.PROBE_TPOT,
    "e2e": cv.PROBE_E2E,
    "queue_time": cv.PROBE_QUEUE,
}


def le_python_client(edge: float) -> str:
    """``le`` as Python ``prometheus_client`` renders it (vLLM and m3mon): ``5.0``, ``2.5``, ``+Inf``."""
    if math.isinf(edge):
        return "+Inf"
    return repr(float(edge))


def le_go_client(edge: float) -> str:
    """``le`` as Go ``client_golang`` / Prometheus 3 renders it: ``5``, ``2.5``, ``+Inf``."""
    if math.isinf(edge):
        return "+Inf"
    return f"{float(edge):g}" if float(edge).is_integer() else repr(float(edge))


def num(value: float, digits: int = 6) -> str:
    """A float literal for PromQL, short and exact enough (``14.4``, ``0.001``, ``0.933333``);
    burn thresholds use 12 digits so the rules compare as the store does."""
    return f"{value:.{digits}g}"


def matchers(pairs: Iterable[tuple[str, str]]) -> str:
    """``{a="x",b=~"y|z"}`` from (name, op-and-quoted-value) pairs already rendered."""
    return "{" + ",".join(f"{k}{v}" for k, v in pairs) + "}"


def eq(value: str) -> str:
    """An equality matcher body: ``="value"`` with quotes escaped."""
    return '="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def regex(values: Iterable[str]) -> str:
    """A regex matcher body matching any of ``values`` exactly: ``=~"a|b"``."""
    escaped = ("".join("\\\\" + ch if ch in ".+*?()[]{}|^$\\" else ch for ch in v) for v in values)
    return '=~"' + "|".join(escaped) + '"'


def not_regex(values: Iterable[str]) -> str:
    """A negative regex matcher body excluding each of ``values`` exactly: ``!~"a|b"``."""
    return "!" + regex(values)[1:]


def monitor_selector(alerting: Alerting, **labels: str) -> str:
    """Selector for the monitor's own metrics, restricted to its job."""
    return matchers([(cv.L_JOB, eq(alerting.job_monitor)), *((k, eq(v)) for k, v in labels.items())])


def pool_matchers(model: Model, slo: SLO) -> list[tuple[str, str]]:
    """Matchers selecting the vLLM endpoints that serve ``slo``'s request class."""
    names = [e.name for e in model.endpoints_for(slo.request_class)]
    return [(cv.L_JOB, eq(model.alerting.job_vllm)), (cv.L_ENDPOINT, regex(names))]


def or_zero(expr: str) -> str:
    """``(expr or vector(0))``: a counter sum that is 0, not absent, before the first event."""
    return f"({expr} or vector(0))"


def without_nan(expr: str) -> str:
    """``expr`` less its NaN samples, for panels: a mean, quantile or ratio over a window without
    events is 0/0, which Grafana would draw as NaN; with this it shows "no data". (NaN compares
    false with everything, so ``> -Inf`` keeps every other value.) Expressions that cannot divide
    are returned as they are."""
    if "/" not in expr and "histogram_quantile" not in expr:
        return expr
    return f"({expr}) > -Inf"
