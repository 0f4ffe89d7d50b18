"""Service fixtures: the throwaway PostgreSQL cluster the live modules run ``m3mon run`` against."""

from __future__ import annotations

from tests.support.postgres import postgres_cluster, postgres_url  # noqa: F401  (fixtures)
