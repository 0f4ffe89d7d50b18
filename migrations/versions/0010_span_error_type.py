"""server spans: error.type (a failed attempt, e.g. a gateway's retried 429), for retry stages

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("error_type", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.drop_column("error_type")
