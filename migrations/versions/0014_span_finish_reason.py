"""server spans: finish reason (``gen_ai.response.finish_reasons``): an aborted or errored request
is a bad event of real traffic's goodput (docs/slo-events.md)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("finish_reason", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.drop_column("finish_reason")
