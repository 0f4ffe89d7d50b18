"""verdict evidence: admission rejections per scrape interval, per-GPU readings per GPU sample

The bottleneck verdict reads load shedding (vLLM 0.33's frontend queue limits) and the hottest GPU
of a tensor-parallel group over its window (docs/bottleneck.md); both come from the store, so the
service, ``m3mon slo status`` and the report read the same evidence.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("admission_rejections", sa.Double(), nullable=True))
    with op.batch_alter_table("gpu_samples", schema=None) as batch_op:
        batch_op.add_column(sa.Column("devices", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gpu_samples", schema=None) as batch_op:
        batch_op.drop_column("devices")
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.drop_column("admission_rejections")
