"""server spans: vLLM llm_request spans received over OTLP

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "server_spans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("start_time", sa.Double(), nullable=False),
        sa.Column("end_time", sa.Double(), nullable=False),
        sa.Column("queue", sa.Double(), nullable=True),
        sa.Column("ttft", sa.Double(), nullable=True),
        sa.Column("prefill", sa.Double(), nullable=True),
        sa.Column("decode", sa.Double(), nullable=True),
        sa.Column("inference", sa.Double(), nullable=True),
        sa.Column("e2e", sa.Double(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("request_id", sa.String(length=200), nullable=True),
        sa.Column("service_name", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_server_spans")),
        sa.UniqueConstraint("trace_id", "span_id", name=op.f("uq_server_spans_trace_id")),
    )
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_server_spans_start_time"), ["start_time"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_server_spans_start_time"))

    op.drop_table("server_spans")
