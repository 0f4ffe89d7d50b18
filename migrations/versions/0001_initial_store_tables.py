"""initial store tables

Revision ID: 0001
Revises:
Create Date: 2026-11-29 17:41:25.571050
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "endpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("base_url", sa.String(length=500), nullable=False),
        sa.Column("backend", sa.String(length=20), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_endpoints")),
        sa.UniqueConstraint("name", name=op.f("uq_endpoints_name")),
    )
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slo_id", sa.String(length=201), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=False),
        sa.Column("slo_name", sa.String(length=100), nullable=False),
        sa.Column("sli", sa.String(length=20), nullable=False),
        sa.Column("window", sa.String(length=10), nullable=False),
        sa.Column("window_start", sa.Double(), nullable=False),
        sa.Column("evaluated_at", sa.Double(), nullable=False),
        sa.Column("objective", sa.Double(), nullable=False),
        sa.Column("good", sa.Double(), nullable=False),
        sa.Column("total", sa.Double(), nullable=False),
        sa.Column("attainment", sa.Double(), nullable=True),
        sa.Column("budget_remaining", sa.Double(), nullable=True),
        sa.Column("burn_rate", sa.Double(), nullable=True),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("severity", sa.String(length=10), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
        sa.UniqueConstraint("slo_id", "window", "evaluated_at", name=op.f("uq_evaluations_slo_id")),
    )
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.create_index("ix_evaluations_at", ["evaluated_at"], unique=False)

    op.create_table(
        "event_slices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slo_id", sa.String(length=201), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("origin", sa.String(length=40), nullable=False),
        sa.Column("source", sa.String(length=10), nullable=False),
        sa.Column("start", sa.Double(), nullable=False),
        sa.Column("end", sa.Double(), nullable=False),
        sa.Column("good", sa.Double(), nullable=False),
        sa.Column("total", sa.Double(), nullable=False),
        sa.Column("exact", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_slices")),
        sa.UniqueConstraint("slo_id", "endpoint", "origin", "end", name=op.f("uq_event_slices_slo_id")),
    )
    with op.batch_alter_table("event_slices", schema=None) as batch_op:
        batch_op.create_index("ix_event_slices_slo_end", ["slo_id", "end"], unique=False)

    op.create_table(
        "incidents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("alertname", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("starts_at", sa.Double(), nullable=False),
        sa.Column("ends_at", sa.Double(), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("annotations", sa.JSON(), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=True),
        sa.Column("slo", sa.String(length=100), nullable=True),
        sa.Column("severity", sa.String(length=20), nullable=True),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
        sa.UniqueConstraint("fingerprint", "starts_at", name=op.f("uq_incidents_fingerprint")),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incidents_starts_at"), ["starts_at"], unique=False)

    op.create_table(
        "slice_rollups",
        sa.Column("slo_id", sa.String(length=201), nullable=False),
        sa.Column("hour_end", sa.Double(), nullable=False),
        sa.Column("good", sa.Double(), nullable=False),
        sa.Column("total", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("slo_id", "hour_end", name=op.f("pk_slice_rollups")),
    )
    op.create_table(
        "store_meta",
        sa.Column("key", sa.String(length=50), nullable=False),
        sa.Column("value", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_store_meta")),
    )
    op.create_table(
        "deployments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("first_seen", sa.Double(), nullable=False),
        sa.Column("last_seen", sa.Double(), nullable=False),
        sa.Column("vllm_version", sa.String(length=50), nullable=True),
        sa.Column("max_model_len", sa.Integer(), nullable=True),
        sa.Column("block_size", sa.Integer(), nullable=True),
        sa.Column("kv_cache_dtype", sa.String(length=30), nullable=True),
        sa.Column("prefix_caching", sa.Boolean(), nullable=True),
        sa.Column("gpu_memory_utilization", sa.Double(), nullable=True),
        sa.Column("image_digest", sa.String(length=300), nullable=True),
        sa.Column("checkpoint", sa.String(length=300), nullable=True),
        sa.Column("tensor_parallel_size", sa.Integer(), nullable=True),
        sa.Column("expert_parallel_size", sa.Integer(), nullable=True),
        sa.Column("config_max_model_len", sa.Integer(), nullable=True),
        sa.Column("config_kv_cache_dtype", sa.String(length=30), nullable=True),
        sa.ForeignKeyConstraint(
            ["endpoint"], ["endpoints.name"], name=op.f("fk_deployments_endpoint_endpoints")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployments")),
    )
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_deployments_endpoint"), ["endpoint"], unique=False)

    op.create_table(
        "probe_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(length=40), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("ttft", sa.Double(), nullable=True),
        sa.Column("ttft_answer", sa.Double(), nullable=True),
        sa.Column("itl_mean", sa.Double(), nullable=True),
        sa.Column("tpot", sa.Double(), nullable=True),
        sa.Column("e2e", sa.Double(), nullable=True),
        sa.Column("server_queue", sa.Double(), nullable=True),
        sa.Column("network", sa.Double(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("finish_reason", sa.String(length=40), nullable=True),
        sa.Column("trace_id", sa.String(length=64), nullable=True),
        sa.Column("detail", sa.String(length=1000), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("log", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["endpoint"], ["endpoints.name"], name=op.f("fk_probe_results_endpoint_endpoints")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_probe_results")),
        sa.UniqueConstraint(
            "endpoint", "request_class", "kind", "started_at", name=op.f("uq_probe_results_endpoint")
        ),
    )
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_probe_results_started_at"), ["started_at"], unique=False)

    op.create_table(
        "scrape_intervals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("start", sa.Double(), nullable=True),
        sa.Column("end", sa.Double(), nullable=False),
        sa.Column("reset", sa.Boolean(), nullable=False),
        sa.Column("backend", sa.String(length=20), nullable=False),
        sa.Column("generation", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("requests", sa.Double(), nullable=False),
        sa.Column("request_rate", sa.Double(), nullable=True),
        sa.Column("prompt_tokens_per_second", sa.Double(), nullable=True),
        sa.Column("generation_tokens_per_second", sa.Double(), nullable=True),
        sa.Column("preemptions", sa.Double(), nullable=True),
        sa.Column("running", sa.Double(), nullable=True),
        sa.Column("waiting", sa.Double(), nullable=True),
        sa.Column("kv_cache_usage", sa.Double(), nullable=True),
        sa.Column("prefix_cache_hit_rate", sa.Double(), nullable=True),
        sa.Column("spec_acceptance_rate", sa.Double(), nullable=True),
        sa.Column("finished", sa.JSON(), nullable=False),
        sa.Column("histograms", sa.JSON(), nullable=False),
        sa.Column("notes", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["endpoint"], ["endpoints.name"], name=op.f("fk_scrape_intervals_endpoint_endpoints")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scrape_intervals")),
        sa.UniqueConstraint("endpoint", "end", name=op.f("uq_scrape_intervals_endpoint")),
    )
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_scrape_intervals_end"), ["end"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scrape_intervals_end"))

    op.drop_table("scrape_intervals")
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_probe_results_started_at"))

    op.drop_table("probe_results")
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deployments_endpoint"))

    op.drop_table("deployments")
    op.drop_table("store_meta")
    op.drop_table("slice_rollups")
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_incidents_starts_at"))

    op.drop_table("incidents")
    with op.batch_alter_table("event_slices", schema=None) as batch_op:
        batch_op.drop_index("ix_event_slices_slo_end")

    op.drop_table("event_slices")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index("ix_evaluations_at")

    op.drop_table("evaluations")
    op.drop_table("endpoints")
