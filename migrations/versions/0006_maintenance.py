"""maintenance: event slices remember the maintenance window that excluded them (indexed for the report)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 17:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("event_slices") as batch:
        batch.add_column(sa.Column("maintenance", sa.String(length=63), nullable=True))
    op.create_index(
        "ix_event_slices_maintenance_end",
        "event_slices",
        ["maintenance", "end"],
        sqlite_where=sa.text("maintenance IS NOT NULL"),
        postgresql_where=sa.text("maintenance IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_event_slices_maintenance_end", table_name="event_slices")
    with op.batch_alter_table("event_slices") as batch:
        batch.drop_column("maintenance")
