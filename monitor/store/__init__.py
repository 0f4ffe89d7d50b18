"""The SQL store: probe results, scrape intervals, event slices, evaluations, incidents, deployments.

SQLite is the embedded default; PostgreSQL is used through psycopg 3. Tables are SQLAlchemy 2
typed ORM models (:mod:`monitor.store.tables`) migrated by Alembic (``m3mon db upgrade``).
Writes are idempotent ops (:mod:`monitor.store.ops`) so :class:`BufferedWriter` can spool them
through a database outage and replay them without duplicates. See docs/store-and-slo.md.
"""

from monitor.store.buffer import BufferedWriter
from monitor.store.fingerprint import DeploymentFingerprint
from monitor.store.metrics import StoreMetrics
from monitor.store.store import Store

__all__ = ["BufferedWriter", "DeploymentFingerprint", "Store", "StoreMetrics"]
