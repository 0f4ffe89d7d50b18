"""scrape intervals: the API server's HTTP answers on its inference routes by status
(``http_requests_total`` of vLLM, ``sglang:http_responses_total``), so the bottleneck verdict reads
server-side 5xx and 429/503 shares (docs/bottleneck.md)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 15:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("http_status", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.drop_column("http_status")
