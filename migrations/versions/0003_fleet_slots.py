"""fleet slots: slot identity on probe results and scrape intervals, probe claims

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 14:00:00.000000

Fleet mode (docs/fleet.md): the replicas of an HA pair write the same probe slot and the same
scrape slot; the unique constraints on the slot identity make those writes one row. Existing rows
keep ``slot`` NULL (NULLs never conflict), so single-replica stores are unaffected.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("slot", sa.BigInteger(), nullable=True))
        batch_op.create_unique_constraint(
            "uq_probe_results_slot", ["endpoint", "request_class", "kind", "slot"]
        )
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("slot", sa.BigInteger(), nullable=True))
        batch_op.create_unique_constraint("uq_scrape_intervals_slot", ["endpoint", "slot"])
    op.create_table(
        "probe_claims",
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("slot", sa.BigInteger(), nullable=False),
        sa.Column("replica", sa.String(length=100), nullable=False),
        sa.Column("claimed_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("endpoint", "request_class", "kind", "slot", name=op.f("pk_probe_claims")),
    )
    with op.batch_alter_table("probe_claims", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_probe_claims_claimed_at"), ["claimed_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("probe_claims", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_probe_claims_claimed_at"))
    op.drop_table("probe_claims")
    with op.batch_alter_table("scrape_intervals", schema=None) as batch_op:
        batch_op.drop_constraint("uq_scrape_intervals_slot", type_="unique")
        batch_op.drop_column("slot")
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.drop_constraint("uq_probe_results_slot", type_="unique")
        batch_op.drop_column("slot")
