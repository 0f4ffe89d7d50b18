"""probe ITL histogram: each probe result's per-token ITL samples as a sparse histogram

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 14:10:00.000000

The report pools inter-token latency over every token of every probe (P50/P95/P99 of the
gaps, docs/probes.md) instead of over per-probe means. Each probe result keeps its samples as
``{upper edge: count}`` on the fixed edges of ``monitor.probes.gaps.ITL_EDGES``. Rows written
before this revision keep NULL (the report counts them as probes without ITL samples).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("itl_histogram", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.drop_column("itl_histogram")
