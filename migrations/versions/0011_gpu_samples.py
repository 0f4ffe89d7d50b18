"""gpu samples: each endpoint's GPU activity per scrape, so the report's verdict can tell GPU-bound

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gpu_samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("time", sa.Double(), nullable=False),
        sa.Column("exporter", sa.String(length=20), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("util", sa.Double(), nullable=True),
        sa.Column("sm_active", sa.Double(), nullable=True),
        sa.Column("tensor_active", sa.Double(), nullable=True),
        sa.Column("memory_used_ratio", sa.Double(), nullable=True),
        sa.Column("xid_gpus", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["endpoint"], ["endpoints.name"], name=op.f("fk_gpu_samples_endpoint_endpoints")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_samples")),
        sa.UniqueConstraint("endpoint", "time", name=op.f("uq_gpu_samples_endpoint")),
    )
    op.create_index(op.f("ix_gpu_samples_time"), "gpu_samples", ["time"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_gpu_samples_time"), table_name="gpu_samples")
    op.drop_table("gpu_samples")
