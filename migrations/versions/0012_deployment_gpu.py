"""deployments: the GPU exporter's model, count, driver and firmware versions (issue 25)

A GPU driver or firmware change is a new deployment. Stored rows keep their fingerprint digests:
the GPU fields enter the digest only when known (monitor/store/fingerprint.py).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gpu_model", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("gpu_count", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("gpu_driver_version", sa.String(length=50), nullable=True))
        batch_op.add_column(sa.Column("gpu_firmware_version", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.drop_column("gpu_firmware_version")
        batch_op.drop_column("gpu_driver_version")
        batch_op.drop_column("gpu_count")
        batch_op.drop_column("gpu_model")
