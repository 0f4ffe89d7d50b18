"""Reloading the configuration of a running service (SIGHUP, ``POST /-/reload``).

A reload reads the configuration file the service started from (and its web config) and checks
all of it before anything changes. A file that does not validate, or that changes what only a
restart can apply (``storage``, ``exporter.listen``, the web config's TLS settings), is refused:
the running configuration stays, the error is logged and ``m3mon_config_reloads_total
{result="failure"}`` counts it. Otherwise the new model is swapped in at once, between two
steps of the event loop: jobs, exporter series, basic-auth users and the scheduler's plan (one
job per endpoint and class of the new model) all follow it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor.errors import ConfigError
from monitor.model import Model, load_model
from monitor.web.config import WebConfig, check_exposure, load_web_config

if TYPE_CHECKING:
    from monitor.service.service import Service

log = logging.getLogger(__name__)


def load_web(model: Model, flag: str | None) -> WebConfig | None:
    """The web config named by ``--web.config.file`` or else ``exporter.web_config_file``."""
    path = flag or model.web_config_file
    return load_web_config(path) if path else None


@dataclass(frozen=True)
class Candidate:
    model: Model
    web: WebConfig | None


def _restart_only(old: Model, old_web: WebConfig | None, new: Model, new_web: WebConfig | None) -> list[str]:
    problems = []
    if old.storage != new.storage:
        problems.append(f"{new.source}: storage: changed; restart m3mon to apply it")
    if old.exporter_listen != new.exporter_listen:
        problems.append(f"{new.source}: exporter.listen: changed; restart m3mon to apply it")
    if (old_web.tls if old_web else None) != (new_web.tls if new_web else None):
        problems.append(
            f"{new_web.path if new_web else new.source}: tls_server_config: changed; restart m3mon"
        )
    return problems


async def prepare(service: Service) -> Candidate:
    """The new configuration, fully checked; ConfigError when it cannot replace the running one."""
    model = service.restrict(await asyncio.to_thread(load_model, service.model.source))
    web = await asyncio.to_thread(load_web, model, service.web_flag)
    problems = _restart_only(service.model, service.web, model, web)
    if problems:
        raise ConfigError(problems)
    check_exposure(model.exporter_listen, web, model.source)
    return Candidate(model, web)


def apply(service: Service, new: Candidate) -> None:
    """Swap ``new`` in (no await inside: other tasks see the old or the new, never a mix)."""
    keep = {job.id: job.next_run_time for job in service.scheduler.get_jobs()}
    service.model, service.web = new.model, new.web
    service.jobs.apply(new.model)
    service.exporter.apply(new.model)
    if service.fleet is not None and service.fleet.metrics is not None:  # the shard's endpoints may change
        service.fleet.metrics.own(service.fleet.shard, new.model)
    users = dict(new.web.users) if new.web else {}
    service.set_users(users)
    service.scheduler.remove_all_jobs()
    service.plan(keep)


async def reload(service: Service) -> str | None:
    """Reload; None on success, else the reason the running configuration was kept."""
    try:
        candidate = await prepare(service)
    except ConfigError as exc:
        service.exporter.service.reloaded(False)
        log.error("configuration reload refused, keeping the running configuration: %s", exc)
        return str(exc)
    except Exception as exc:  # a bug must not take the running configuration down with it
        service.exporter.service.reloaded(False)
        log.exception("configuration reload failed, keeping the running configuration")
        return f"{type(exc).__name__}: {exc}"
    apply(service, candidate)
    service.exporter.service.reloaded(True)
    log.info("configuration reloaded from %s", candidate.model.source)
    await service.jobs.register_endpoints()
    return None
