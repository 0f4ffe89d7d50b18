"""Fleet fixtures: the throwaway PostgreSQL cluster (tests/support/postgres.py)."""

from __future__ import annotations

from tests.support.postgres import postgres_cluster, postgres_url  # noqa: F401  (fixtures)
