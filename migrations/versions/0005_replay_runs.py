"""replay runs: the replay benchmark's results with the deployment fingerprint and profile digest

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 14:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "replay_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=False),
        sa.Column("duration", sa.Double(), nullable=False),
        sa.Column("load_kind", sa.String(length=12), nullable=False),
        sa.Column("load_value", sa.Double(), nullable=True),
        sa.Column("profile_digest", sa.String(length=64), nullable=False),
        sa.Column("fingerprint_digest", sa.String(length=64), nullable=True),
        sa.Column("fingerprint", sa.JSON(), nullable=False),
        sa.Column("meets_slos", sa.Boolean(), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replay_runs")),
        sa.UniqueConstraint("endpoint", "request_class", "started_at", name=op.f("uq_replay_runs_endpoint")),
    )
    with op.batch_alter_table("replay_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_replay_runs_request_class"), ["request_class"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("replay_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_replay_runs_request_class"))

    op.drop_table("replay_runs")
