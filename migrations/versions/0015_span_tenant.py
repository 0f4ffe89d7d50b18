"""server spans: the tenant label the real-traffic SLOs gave the request (a bounded label value:
a named tenant, a top tenant or ``other``, never a raw id), so the report can tell each tenant's
tail (docs/bottleneck.md, "Per tenant")

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tenant", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("server_spans", schema=None) as batch_op:
        batch_op.drop_column("tenant")
