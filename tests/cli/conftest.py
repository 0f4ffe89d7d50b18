"""CLI fixtures: the throwaway PostgreSQL cluster with a password-checked role."""

from __future__ import annotations

from tests.support.postgres import postgres_cluster  # noqa: F401  (fixture)
from tests.support.postgres_auth import pg_password_role  # noqa: F401  (fixture)
