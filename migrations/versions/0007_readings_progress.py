"""readings, scrape gaps, writer and evaluation progress: intervals that tile, evaluations that wait

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scrape_readings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("slot", sa.BigInteger(), nullable=True),
        sa.Column("time", sa.Double(), nullable=False),
        sa.Column("replica", sa.String(length=100), nullable=True),
        sa.Column("reading", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["endpoint"], ["endpoints.name"], name="fk_scrape_readings_endpoint_endpoints"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_scrape_readings"),
        sa.UniqueConstraint("endpoint", "time", name="uq_scrape_readings_endpoint"),
        sa.UniqueConstraint("endpoint", "slot", name="uq_scrape_readings_slot"),
    )
    op.create_table(
        "scrape_gaps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("start", sa.Double(), nullable=False),
        sa.Column("end", sa.Double(), nullable=False),
        sa.Column("requests", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["endpoint"], ["endpoints.name"], name="fk_scrape_gaps_endpoint_endpoints"),
        sa.PrimaryKeyConstraint("id", name="pk_scrape_gaps"),
        sa.UniqueConstraint("endpoint", "end", name="uq_scrape_gaps_endpoint"),
    )
    op.create_index("ix_scrape_gaps_end", "scrape_gaps", ["end"])
    op.create_table(
        "writer_progress",
        sa.Column("replica", sa.String(length=100), nullable=False),
        sa.Column("complete_until", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("replica", name="pk_writer_progress"),
    )
    op.create_table(
        "evaluation_progress",
        sa.Column("slo_id", sa.String(length=201), nullable=False),
        sa.Column("evaluated_until", sa.Double(), nullable=False),
        sa.Column("dirty_since", sa.Double(), nullable=True),
        sa.Column("dirty_version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("slo_id", name="pk_evaluation_progress"),
    )


def downgrade() -> None:
    op.drop_table("evaluation_progress")
    op.drop_table("writer_progress")
    op.drop_index("ix_scrape_gaps_end", table_name="scrape_gaps")
    op.drop_table("scrape_gaps")
    op.drop_table("scrape_readings")
