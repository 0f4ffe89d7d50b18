"""The store's tables as SQLAlchemy 2 typed ORM models.

Times are Unix seconds (UTC) in double-precision columns: cheap to compare and index on both
SQLite and PostgreSQL, and the same numbers the probes and the collector produce. Every table
that receives replayed writes has a natural-key unique constraint, so a replay never duplicates.
The Alembic migrations in ``migrations/versions`` must describe exactly these tables (a test
checks it with ``alembic.autogenerate.compare_metadata``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {float: Double(), dict[str, Any]: JSON(), list[Any]: JSON()}


class EndpointRow(Base):
    """A monitored endpoint, by its configured name."""

    __tablename__ = "endpoints"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    base_url: Mapped[str] = mapped_column(String(500), default="")
    backend: Mapped[str] = mapped_column(String(20), default="")
    model: Mapped[str] = mapped_column(String(200), default="")


class DeploymentRow(Base):
    """One deployment fingerprint of an endpoint; a new row only when the fingerprint changes."""

    __tablename__ = "deployments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(100), ForeignKey("endpoints.name"), index=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    first_seen: Mapped[float]
    last_seen: Mapped[float]
    vllm_version: Mapped[str | None] = mapped_column(String(50))
    max_model_len: Mapped[int | None]
    block_size: Mapped[int | None]
    kv_cache_dtype: Mapped[str | None] = mapped_column(String(30))
    prefix_caching: Mapped[bool | None] = mapped_column(Boolean)
    gpu_memory_utilization: Mapped[float | None]
    image_digest: Mapped[str | None] = mapped_column(String(300))
    checkpoint: Mapped[str | None] = mapped_column(String(300))
    tensor_parallel_size: Mapped[int | None]
    expert_parallel_size: Mapped[int | None]
    config_max_model_len: Mapped[int | None]
    config_kv_cache_dtype: Mapped[str | None] = mapped_column(String(30))
    gpu_model: Mapped[str | None] = mapped_column(String(100))
    gpu_count: Mapped[int | None]
    gpu_driver_version: Mapped[str | None] = mapped_column(String(50))
    gpu_firmware_version: Mapped[str | None] = mapped_column(String(100))


class ProbeResultRow(Base):
    """One probe run: the main numbers as columns, everything else as JSON."""

    __tablename__ = "probe_results"
    __table_args__ = (
        UniqueConstraint("endpoint", "request_class", "kind", "started_at"),
        # fleet mode: the slot identity, so an HA pair's two runs of one slot are one row
        UniqueConstraint("endpoint", "request_class", "kind", "slot", name="uq_probe_results_slot"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: floor(scheduled round start / class interval) in fleet mode; NULL for a single replica
    slot: Mapped[int | None] = mapped_column(BigInteger)
    endpoint: Mapped[str] = mapped_column(String(100), ForeignKey("endpoints.name"))
    request_class: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(30))
    started_at: Mapped[float] = mapped_column(index=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(String(40))
    status_code: Mapped[int | None]
    ttft: Mapped[float | None]
    ttft_answer: Mapped[float | None]
    itl_mean: Mapped[float | None]
    tpot: Mapped[float | None]
    e2e: Mapped[float | None]
    server_queue: Mapped[float | None]
    network: Mapped[float | None]
    #: per-token ITL samples as a sparse histogram on fixed edges (monitor.probes.gaps); NULL before 0004
    itl_histogram: Mapped[dict[str, Any] | None]
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    model: Mapped[str | None] = mapped_column(String(200))
    finish_reason: Mapped[str | None] = mapped_column(String(40))
    trace_id: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[str] = mapped_column(String(1000), default="")
    extra: Mapped[dict[str, Any]]
    log: Mapped[list[Any]]


class ServerSpanRow(Base):
    """One span received over OTLP (vLLM ``llm_request`` or GenAI-convention): a view of one request."""

    __tablename__ = "server_spans"
    __table_args__ = (UniqueConstraint("trace_id", "span_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(100))
    start_time: Mapped[float] = mapped_column(index=True)
    end_time: Mapped[float]
    queue: Mapped[float | None]
    ttft: Mapped[float | None]
    prefill: Mapped[float | None]
    decode: Mapped[float | None]
    inference: Mapped[float | None]
    e2e: Mapped[float | None]
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    request_id: Mapped[str | None] = mapped_column(String(200))
    service_name: Mapped[str | None] = mapped_column(String(200))
    #: the span's ``error.type`` (or ``error`` for an ERROR status): a failed attempt (migration 0009)
    error_type: Mapped[str | None] = mapped_column(String(100))
    #: its ``gen_ai.response.finish_reasons``, distinct, comma-joined (e.g. ``abort``) (migration 0014)
    finish_reason: Mapped[str | None] = mapped_column(String(100))
    #: the tenant label the real-traffic SLOs gave it (named, top or ``other``; never a raw id) (0015)
    tenant: Mapped[str | None] = mapped_column(String(128))


class ScrapeIntervalRow(Base):
    """One collector interval: rates and gauges as columns, histograms as JSON."""

    __tablename__ = "scrape_intervals"
    __table_args__ = (
        UniqueConstraint("endpoint", "end"),
        UniqueConstraint("endpoint", "slot", name="uq_scrape_intervals_slot"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: floor(scrape time / scrape interval) in fleet mode; NULL for a single replica
    slot: Mapped[int | None] = mapped_column(BigInteger)
    endpoint: Mapped[str] = mapped_column(String(100), ForeignKey("endpoints.name"))
    start: Mapped[float | None]
    end: Mapped[float] = mapped_column(index=True)
    reset: Mapped[bool] = mapped_column(Boolean)
    backend: Mapped[str] = mapped_column(String(20))
    generation: Mapped[str] = mapped_column(String(40))
    model: Mapped[str | None] = mapped_column(String(200))
    requests: Mapped[float]
    request_rate: Mapped[float | None]
    prompt_tokens_per_second: Mapped[float | None]
    generation_tokens_per_second: Mapped[float | None]
    preemptions: Mapped[float | None]
    admission_rejections: Mapped[float | None]  # refused by the frontend's queue limits (0.33+)
    #: the API server's answers on its inference routes by status (None: no HTTP counter)
    http_status: Mapped[dict[str, Any] | None]
    running: Mapped[float | None]
    waiting: Mapped[float | None]
    kv_cache_usage: Mapped[float | None]
    prefix_cache_hit_rate: Mapped[float | None]
    spec_acceptance_rate: Mapped[float | None]
    finished: Mapped[dict[str, Any]]
    histograms: Mapped[dict[str, Any]]
    notes: Mapped[list[Any]]


class ScrapeReadingRow(Base):
    """One scrape of an endpoint as read (cumulative counters, :mod:`monitor.scrape.stored`).

    Intervals are derived from consecutive stored readings of an endpoint, whichever replica of an
    HA pair wrote them, so the stored intervals tile (docs/fleet.md). Kept a day.
    """

    __tablename__ = "scrape_readings"
    __table_args__ = (
        UniqueConstraint("endpoint", "time"),
        # fleet mode: one reading per scrape slot, the first written
        UniqueConstraint("endpoint", "slot", name="uq_scrape_readings_slot"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(100), ForeignKey("endpoints.name"))
    #: floor(scrape time / scrape interval) in fleet mode; NULL for a single replica
    slot: Mapped[int | None] = mapped_column(BigInteger)
    time: Mapped[float]
    replica: Mapped[str | None] = mapped_column(String(100))
    reading: Mapped[dict[str, Any]]


class ScrapeGapRow(Base):
    """Two consecutive stored readings too far apart to count their interval (longer than
    :data:`monitor.conventions.SCRAPE_GAP_LIMIT`): its events are counted by no SLI, in either engine."""

    __tablename__ = "scrape_gaps"
    __table_args__ = (UniqueConstraint("endpoint", "end"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(100), ForeignKey("endpoints.name"))
    start: Mapped[float]
    end: Mapped[float] = mapped_column(index=True)
    #: requests the server finished in the gap (counter difference), uncounted; NULL after a reset
    requests: Mapped[float | None]


class GpuSampleRow(Base):
    """One good scrape of an endpoint's GPU exporter, reduced to what a bottleneck verdict reads
    (:meth:`monitor.scrape.gpu_signals.GpuSignals.aggregate`): gauges at ``time``, means over the
    endpoint's GPUs. Kept as long as probe results (the report's verdict reads them for its period)."""

    __tablename__ = "gpu_samples"
    __table_args__ = (UniqueConstraint("endpoint", "time"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(100), ForeignKey("endpoints.name"))
    time: Mapped[float] = mapped_column(index=True)
    exporter: Mapped[str] = mapped_column(String(20))  # dcgm | amd
    gpus: Mapped[int]
    util: Mapped[float | None]  # mean GPU utilization, 0..1
    sm_active: Mapped[float | None]  # mean SM (AMD: graphics engine) activity, 0..1
    tensor_active: Mapped[float | None]  # mean tensor pipe activity, 0..1
    memory_used_ratio: Mapped[float | None]  # the fullest GPU's framebuffer share
    xid_gpus: Mapped[int]  # GPUs reporting an XID error
    #: per GPU (keyed by host and index, with its UUID): the readings a verdict reads
    #: (monitor.bottleneck.gpu.DEVICE_FIELDS); NULL in rows written before migration 0013
    devices: Mapped[dict[str, Any] | None]


class WriterProgressRow(Base):
    """Fleet mode: up to when each replica's writes are all in the store (its spool is empty
    before it): the evaluator finalizes a step once every live replica has written past it."""

    __tablename__ = "writer_progress"
    replica: Mapped[str] = mapped_column(String(100), primary_key=True)
    complete_until: Mapped[float]
    updated_at: Mapped[float]


class EvaluationProgressRow(Base):
    """Per SLO: up to which instant the evaluator has evaluated (announced before it reads), and
    the earliest event time written later than that (``dirty_since``): those steps are evaluated
    again. ``dirty_version`` grows with every mark, so clearing one never loses a newer mark."""

    __tablename__ = "evaluation_progress"
    slo_id: Mapped[str] = mapped_column(String(201), primary_key=True)
    evaluated_until: Mapped[float]
    dirty_since: Mapped[float | None]
    dirty_version: Mapped[int] = mapped_column(Integer, default=0)


class EventSliceRow(Base):
    """Good/total events of one SLO over ``(start, end]``, computed at ingest; counted unless
    ``maintenance`` names the window that excluded them (kept, so the report can say how many)."""

    __tablename__ = "event_slices"
    __table_args__ = (
        UniqueConstraint("slo_id", "endpoint", "origin", "end"),
        Index("ix_event_slices_slo_end", "slo_id", "end"),
        # the incremental evaluator: one step's slices of every SLO (monitor.store.running)
        Index("ix_event_slices_end", "end"),
        # the report's maintenance section: the few excluded slices of a window, by time
        Index(
            "ix_event_slices_maintenance_end",
            "maintenance",
            "end",
            sqlite_where=text("maintenance IS NOT NULL"),
            postgresql_where=text("maintenance IS NOT NULL"),
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slo_id: Mapped[str] = mapped_column(String(201))
    endpoint: Mapped[str] = mapped_column(String(100))
    origin: Mapped[str] = mapped_column(String(40))
    source: Mapped[str] = mapped_column(String(10))
    start: Mapped[float]
    end: Mapped[float]
    good: Mapped[float]
    total: Mapped[float]
    exact: Mapped[bool] = mapped_column(Boolean)
    #: The maintenance window that excluded these events from every SLI (NULL: counted).
    maintenance: Mapped[str | None] = mapped_column(String(63), nullable=True, default=None)


class SliceRollupRow(Base):
    """Hourly sums of event slices ending in ``(hour_end − 3600, hour_end]``; kept like evaluations."""

    __tablename__ = "slice_rollups"
    slo_id: Mapped[str] = mapped_column(String(201), primary_key=True)
    hour_end: Mapped[float] = mapped_column(primary_key=True)
    good: Mapped[float]
    total: Mapped[float]


class EvaluationRow(Base):
    """Every window of one SLO at one aligned instant: one row per (SLO, instant), the windows'
    numbers in ``windows``: one JSON object of columns ``{"window": [...], "start": [...],
    "good": [...], "total": [...], "attainment": [...], "budget_remaining": [...], "burn_rate":
    [...]}``, shortest window first; a window ends at ``evaluated_at``. One row, not one per
    window (a step of 5,000 SLOs writes 5,000 rows), and columns, not one object per window."""

    __tablename__ = "evaluations"
    __table_args__ = (Index("ix_evaluations_at", "evaluated_at"),)
    slo_id: Mapped[str] = mapped_column(String(201), primary_key=True)
    evaluated_at: Mapped[float] = mapped_column(primary_key=True)
    request_class: Mapped[str] = mapped_column(String(100))
    slo_name: Mapped[str] = mapped_column(String(100))
    sli: Mapped[str] = mapped_column(String(20))
    objective: Mapped[float]
    status: Mapped[str] = mapped_column(String(12))
    severity: Mapped[str | None] = mapped_column(String(10))
    windows: Mapped[dict[str, Any]]


class IncidentRow(Base):
    """One Alertmanager alert, updated from firing to resolved."""

    __tablename__ = "incidents"
    __table_args__ = (UniqueConstraint("fingerprint", "starts_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    alertname: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(10))
    starts_at: Mapped[float] = mapped_column(index=True)
    ends_at: Mapped[float | None]
    labels: Mapped[dict[str, Any]]
    annotations: Mapped[dict[str, Any]]
    request_class: Mapped[str | None] = mapped_column(String(100))
    slo: Mapped[str | None] = mapped_column(String(100))
    severity: Mapped[str | None] = mapped_column(String(20))
    updated_at: Mapped[float]


class MetaRow(Base):
    """Store bookkeeping (e.g. up to when raw data was pruned)."""

    __tablename__ = "store_meta"
    key: Mapped[str] = mapped_column(String(50), primary_key=True)
    value: Mapped[float]


class ProbeClaimRow(Base):
    """Fleet mode: which replica of an HA pair runs a probe slot (the first to insert the row)."""

    __tablename__ = "probe_claims"
    endpoint: Mapped[str] = mapped_column(String(100), primary_key=True)
    request_class: Mapped[str] = mapped_column(String(100), primary_key=True)
    kind: Mapped[str] = mapped_column(String(30), primary_key=True)
    slot: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    replica: Mapped[str] = mapped_column(String(100))
    claimed_at: Mapped[float] = mapped_column(index=True)


class ReplayRunRow(Base):
    """One replay benchmark run (``m3mon replay``): load, profile digest, fingerprint, results."""

    __tablename__ = "replay_runs"
    __table_args__ = (UniqueConstraint("endpoint", "request_class", "started_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(100))
    request_class: Mapped[str] = mapped_column(String(100), index=True)
    started_at: Mapped[float]
    duration: Mapped[float]
    load_kind: Mapped[str] = mapped_column(String(12))  # "rate" or "concurrency"
    load_value: Mapped[float | None]  # requests/s or workers; NULL: the profile's own rate
    profile_digest: Mapped[str] = mapped_column(String(64))
    fingerprint_digest: Mapped[str | None] = mapped_column(String(64))
    fingerprint: Mapped[dict[str, Any]]
    meets_slos: Mapped[bool | None] = mapped_column(Boolean)
    summary: Mapped[dict[str, Any]]
