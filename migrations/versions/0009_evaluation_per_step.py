"""evaluations: one row per (SLO, instant) with its windows as JSON, instead of one per window

A step of 5,000 SLOs wrote ~45,000 rows (one per window, each with its own index entries) and
storing them was half the step's time; now it writes 5,000. Stored rows are carried over: each
(SLO, instant)'s window rows become one row whose ``windows`` list keeps their stored order.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 15:30:00.000000
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 2000
WINDOW_KEYS = ("window", "start", "good", "total", "attainment", "budget_remaining", "burn_rate")
PER_WINDOW = ("window", "window_start", "good", "total", "attainment", "budget_remaining", "burn_rate")
HEAD = ("slo_id", "evaluated_at", "request_class", "slo_name", "sli", "objective", "status", "severity")


def _per_step(name: str = "evaluations") -> sa.TableClause:
    return sa.table(name, *(sa.column(c) for c in HEAD), sa.column("windows", sa.JSON()))


def _grouped(conn: sa.Connection) -> Iterator[dict[str, Any]]:
    """Old window rows, one dict per (SLO, instant), windows in stored (id) order."""
    cols = ", ".join(f'"{c}"' for c in (*HEAD, *PER_WINDOW))
    order = "ORDER BY slo_id, evaluated_at, id"
    rows = conn.execute(
        sa.text(f"SELECT {cols} FROM evaluations_by_window {order}").execution_options(yield_per=CHUNK)
    )
    current: dict[str, Any] | None = None
    for r in rows:
        head, win = r[: len(HEAD)], r[len(HEAD) :]
        if current is None or (current["slo_id"], current["evaluated_at"]) != tuple(head[:2]):
            if current is not None:
                yield current
            current = dict(zip(HEAD, head, strict=True)) | {"windows": []}
        current["windows"].append(dict(zip(WINDOW_KEYS, win, strict=True)))
    if current is not None:
        yield current


def _create() -> None:
    op.create_table(
        "evaluations",
        sa.Column("slo_id", sa.String(length=201), nullable=False),
        sa.Column("evaluated_at", sa.Double(), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=False),
        sa.Column("slo_name", sa.String(length=100), nullable=False),
        sa.Column("sli", sa.String(length=20), nullable=False),
        sa.Column("objective", sa.Double(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("severity", sa.String(length=10), nullable=True),
        sa.Column("windows", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("slo_id", "evaluated_at", name=op.f("pk_evaluations")),
    )
    op.create_index("ix_evaluations_at", "evaluations", ["evaluated_at"], unique=False)


def upgrade() -> None:
    op.drop_index("ix_evaluations_at", table_name="evaluations")
    op.rename_table("evaluations", "evaluations_by_window")
    if op.get_bind().dialect.name == "postgresql":  # constraint names are global per schema there
        op.execute("ALTER TABLE evaluations_by_window RENAME CONSTRAINT pk_evaluations TO pk_evaluations_old")
    _create()
    _copy(_per_step(), _grouped(op.get_bind()))
    op.drop_table("evaluations_by_window")


def _copy(table: sa.TableClause, rows: Iterator[dict[str, Any]]) -> None:
    conn, batch = op.get_bind(), []
    for row in rows:
        batch.append(row)
        if len(batch) >= CHUNK:
            conn.execute(table.insert(), batch)
            batch = []
    if batch:
        conn.execute(table.insert(), batch)


def _exploded(conn: sa.Connection, name: str) -> Iterator[dict[str, Any]]:
    """Per-step rows of table ``name`` back as one dict per window, in their list order."""
    t = _per_step(name)
    q = sa.select(t).order_by(t.c.slo_id, t.c.evaluated_at)
    for r in conn.execute(q.execution_options(yield_per=CHUNK)):
        head = {c: getattr(r, c) for c in HEAD}
        for w in r.windows:
            yield head | dict(zip(PER_WINDOW, (w[k] for k in WINDOW_KEYS), strict=True))


def downgrade() -> None:
    """Back to one row per window (0001's table), the windows exploded in their stored order."""
    op.drop_index("ix_evaluations_at", table_name="evaluations")
    op.rename_table("evaluations", "evaluations_by_step")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE evaluations_by_step RENAME CONSTRAINT pk_evaluations TO pk_evaluations_step")
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slo_id", sa.String(length=201), nullable=False),
        sa.Column("request_class", sa.String(length=100), nullable=False),
        sa.Column("slo_name", sa.String(length=100), nullable=False),
        sa.Column("sli", sa.String(length=20), nullable=False),
        sa.Column("window", sa.String(length=10), nullable=False),
        sa.Column("window_start", sa.Double(), nullable=False),
        sa.Column("evaluated_at", sa.Double(), nullable=False),
        sa.Column("objective", sa.Double(), nullable=False),
        sa.Column("good", sa.Double(), nullable=False),
        sa.Column("total", sa.Double(), nullable=False),
        sa.Column("attainment", sa.Double(), nullable=True),
        sa.Column("budget_remaining", sa.Double(), nullable=True),
        sa.Column("burn_rate", sa.Double(), nullable=True),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("severity", sa.String(length=10), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
        sa.UniqueConstraint("slo_id", "window", "evaluated_at", name=op.f("uq_evaluations_slo_id")),
    )
    op.create_index("ix_evaluations_at", "evaluations", ["evaluated_at"], unique=False)
    by_window = sa.table("evaluations", *(sa.column(c) for c in (*HEAD, *PER_WINDOW)))
    _copy(by_window, _exploded(op.get_bind(), "evaluations_by_step"))
    op.drop_table("evaluations_by_step")
