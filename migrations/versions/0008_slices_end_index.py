"""event slices by end time: the incremental evaluator reads one step's slices of every SLO

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 07:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_event_slices_end", "event_slices", ["end"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_event_slices_end", table_name="event_slices")
