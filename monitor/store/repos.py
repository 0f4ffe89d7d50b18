"""Repositories for endpoints and deployments: small classes over one session each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.fingerprint import GPU_FIELDS, DeploymentFingerprint
from monitor.store.tables import DeploymentRow, EndpointRow
from monitor.store.upsert import insert_ignore, upsert_replace


class EndpointRepo:
    """Endpoints by configured name (other tables refer to them by name)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def ensure(self, name: str) -> None:
        """Make sure an endpoint row exists (details are filled by :meth:`sync`)."""
        insert_ignore(self.session, EndpointRow.__table__, [{"name": name}], ("name",))  # type: ignore[arg-type]

    def sync(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert or update endpoints from ``{name, base_url, backend, model}`` rows."""
        upsert_replace(self.session, EndpointRow.__table__, rows, ("name",), ("base_url", "backend", "model"))  # type: ignore[arg-type]

    def all(self) -> list[EndpointRow]:
        return list(self.session.scalars(select(EndpointRow).order_by(EndpointRow.name)))


class DeploymentRepo:
    """Deployment history: one row per distinct fingerprint run, with first and last seen."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def current(self, endpoint: str) -> DeploymentRow | None:
        q = select(DeploymentRow).where(DeploymentRow.endpoint == endpoint)
        return self.session.scalars(
            q.order_by(DeploymentRow.first_seen.desc(), DeploymentRow.id.desc())
        ).first()

    def observe(self, endpoint: str, fp: DeploymentFingerprint, at: float) -> bool:
        """Record that ``endpoint`` ran ``fp`` at ``at``; True when that started a new row."""
        EndpointRepo(self.session).ensure(endpoint)
        cur = self.current(endpoint)
        if cur is not None and not fp.gpu_known:
            # GPU facts not read this time (the exporter is down or no longer configured) are no
            # change: the deployment keeps the ones last stored
            fp = replace(fp, **{name: getattr(cur, name) for name in GPU_FIELDS})
        digest = fp.digest
        if cur is not None and cur.fingerprint == digest:
            cur.last_seen = max(cur.last_seen, at)
            cur.first_seen = min(cur.first_seen, at)
            self.session.flush()
            return False
        if cur is not None and at <= cur.first_seen:
            return False  # an older observation replayed after a newer change: history already has it
        self.session.add(
            DeploymentRow(endpoint=endpoint, fingerprint=digest, first_seen=at, last_seen=at, **fp.to_dict())
        )
        self.session.flush()
        return True

    def history(self, endpoint: str | None = None) -> list[DeploymentRow]:
        q = select(DeploymentRow).order_by(DeploymentRow.endpoint, DeploymentRow.first_seen)
        if endpoint is not None:
            q = q.where(DeploymentRow.endpoint == endpoint)
        return list(self.session.scalars(q))
