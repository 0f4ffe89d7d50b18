"""The probes as OpenTelemetry GenAI client metrics (semantic conventions 1.37, GenAI "Development").

Alongside the Prometheus families of :mod:`monitor.probes.metrics`, every probe run is recorded
through the OTel metrics SDK (its own :class:`~opentelemetry.sdk.metrics.MeterProvider`, never
the global one) and exported over OTLP/HTTP protobuf when ``exporter.otlp_metrics_endpoint`` is
set. Instruments and attributes follow the GenAI client metrics of the OpenTelemetry semantic
conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/, v1.37.0; the
names match ``opentelemetry-semantic-conventions`` 0.58b0+):

* ``gen_ai.client.operation.duration`` (s) — every run, with ``error.type`` = the failure
  category when it failed (``monitor_error`` runs are not recorded: no service operation);
* ``gen_ai.client.token.usage`` ({token}) — answered runs, ``gen_ai.token.type`` input / output;
* ``gen_ai.client.operation.time_to_first_chunk`` (s) — answered runs with a first token chunk;
* ``gen_ai.client.operation.time_per_output_chunk`` (s) — every gap between two chunks, undivided.

Common attributes: ``gen_ai.operation.name`` = ``chat``, ``gen_ai.provider.name`` = the endpoint's
backend (``vllm`` / ``sglang``: no well-known value exists for self-hosted servers),
``gen_ai.request.model``, ``gen_ai.response.model`` (when reported), ``server.address`` /
``server.port`` of the endpoint, plus ``m3mon.request_class`` and ``m3mon.probe.kind``. Bucket
boundaries are the conventions' advised ones.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource

from monitor import __version__
from monitor.events import MONITOR, probe_answered
from monitor.model import Model
from monitor.probes.result import ProbeResult

log = logging.getLogger(__name__)

SEMCONV_VERSION = "1.37.0"
DURATION = "gen_ai.client.operation.duration"
TOKEN_USAGE = "gen_ai.client.token.usage"
TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
TIME_PER_OUTPUT_CHUNK = "gen_ai.client.operation.time_per_output_chunk"
#: Advised explicit bucket boundaries of the GenAI client metrics.
SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = tuple(float(4**i) for i in range(14))  # 1, 4, 16, ... 67108864

Attributes = dict[str, str | int]


def _views() -> list[View]:
    seconds = ExplicitBucketHistogramAggregation(SECONDS_BUCKETS)
    views = [View(instrument_name=n, aggregation=seconds)
             for n in (DURATION, TIME_TO_FIRST_CHUNK, TIME_PER_OUTPUT_CHUNK)]  # fmt: skip
    views.append(
        View(instrument_name=TOKEN_USAGE, aggregation=ExplicitBucketHistogramAggregation(TOKEN_BUCKETS))
    )
    return views


def otlp_reader(endpoint: str, interval: float) -> MetricReader:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=endpoint), export_interval_millis=interval * 1000
    )


class GenAIMetrics:
    """The four GenAI client instruments, fed one :class:`ProbeResult` at a time."""

    def __init__(self, model: Model, readers: list[MetricReader]) -> None:
        resource = Resource.create({"service.name": "m3mon-probes", "service.version": __version__})
        # no atexit hook: the owner (the service, a reload) flushes with shutdown(), before the store closes
        self.provider = MeterProvider(
            metric_readers=readers, resource=resource, views=_views(), shutdown_on_exit=False
        )
        meter = self.provider.get_meter(
            "monitor.probes", __version__, schema_url=f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
        )
        self.duration = meter.create_histogram(DURATION, unit="s", description="GenAI operation duration.")
        self.tokens = meter.create_histogram(
            TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used."
        )
        self.first_chunk = meter.create_histogram(
            TIME_TO_FIRST_CHUNK, unit="s", description="Time to receive the first chunk."
        )
        self.per_chunk = meter.create_histogram(
            TIME_PER_OUTPUT_CHUNK, unit="s", description="Time per output chunk after the first."
        )
        self.endpoints: Mapping[str, Attributes] = {
            e.name: _endpoint_attributes(e.backend, e.base_url, e.model) for e in model.endpoints
        }

    @classmethod
    def for_model(cls, model: Model) -> GenAIMetrics | None:
        """Exporting to the configured OTLP endpoint, or None when none is configured."""
        if model.otlp_metrics is None:
            return None
        return cls(model, [otlp_reader(*model.otlp_metrics)])

    def record(self, result: ProbeResult) -> None:
        if result.reason in MONITOR:
            return  # the monitor failed, not an operation of the service
        base = dict(self.endpoints.get(result.endpoint, {}))
        base.update({"m3mon.request_class": result.request_class, "m3mon.probe.kind": result.kind})
        if result.model:
            base["gen_ai.response.model"] = result.model
        t = result.timings
        if t.e2e is not None:
            errored = {"error.type": result.reason} if result.reason else {}
            self.duration.record(max(t.e2e, 0.0), {**base, **errored})
        if result.reason is not None and not probe_answered(result.reason):
            return
        for kind, count in (
            ("input", result.usage.prompt_tokens),
            ("output", result.usage.completion_tokens),
        ):
            if count is not None:
                self.tokens.record(count, {**base, "gen_ai.token.type": kind})
        if t.ttft is not None:
            self.first_chunk.record(max(t.ttft, 0.0), base)
        for gap in t.chunk_gaps:
            self.per_chunk.record(gap.seconds, base)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Export what was recorded since the last export, then stop (bounded by ``timeout`` seconds).

        A failed last export is logged, never raised: stopping must not depend on the collector."""
        try:
            self.provider.shutdown(timeout_millis=timeout * 1000)
        except Exception as exc:  # the SDK raises a bare Exception naming the failed readers
            log.warning("OTLP GenAI metrics: the last export before stopping failed: %s", exc)


def _endpoint_attributes(backend: str, base_url: str, model: str) -> Attributes:
    url = urlsplit(base_url)
    out: Attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": backend,
                       "gen_ai.request.model": model, "server.address": url.hostname or ""}  # fmt: skip
    port = url.port or (443 if url.scheme == "https" else 80)
    out["server.port"] = port
    return out
