"""evaluations: a row's windows as one JSON object of columns instead of a list of objects

``windows`` was ``[{"window": "5m", "start": …, "good": …, …}, …]``: ten objects per row, the
seven key names written ten times. Now it is ``{"window": [...], "start": [...], "good": [...],
"total": [...], "attainment": [...], "budget_remaining": [...], "burn_rate": [...]}`` (shortest
window first, as before): ~60 % of the bytes, and built from the evaluator's columns without
one object per window (a step of 50,000 SLOs stores 500,000 windows). Stored rows are converted
in place by the database (each number's text kept as written); the downgrade converts back.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06 21:15:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEYS = ("window", "start", "good", "total", "attainment", "budget_remaining", "burn_rate")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        columns = ", ".join(f"'{k}', COALESCE(json_agg(w.v -> '{k}' ORDER BY w.n), '[]'::json)" for k in KEYS)
        op.execute(
            f"UPDATE evaluations SET windows = (SELECT json_build_object({columns}) "
            "FROM json_array_elements(evaluations.windows) WITH ORDINALITY AS w(v, n)) "
            "WHERE json_typeof(windows) = 'array'"
        )
        return
    columns = ", ".join(f"'{k}', json_group_array(json(value -> '$.{k}'))" for k in KEYS)
    op.execute(
        f"UPDATE evaluations SET windows = (SELECT json_object({columns}) "
        "FROM (SELECT value FROM json_each(evaluations.windows) ORDER BY key)) "
        "WHERE json_type(windows) = 'array'"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        fields = ", ".join(f"'{k}', windows -> '{k}' -> (i - 1)" for k in KEYS)
        op.execute(
            f"UPDATE evaluations SET windows = (SELECT COALESCE(json_agg(json_build_object({fields}) "
            "ORDER BY i), '[]'::json) FROM generate_series(1, json_array_length(windows -> 'window')) AS i) "
            "WHERE json_typeof(windows) = 'object'"
        )
        return
    fields = ", ".join(f"'{k}', json(windows -> ('$.{k}[' || key || ']'))" for k in KEYS)
    op.execute(
        f"UPDATE evaluations SET windows = (SELECT json_group_array(json_object({fields})) "
        "FROM (SELECT key FROM json_each(evaluations.windows, '$.window') ORDER BY key)) "
        "WHERE json_type(windows) = 'object'"
    )
