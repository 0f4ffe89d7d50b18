"""What ``m3mon run`` schedules, read from the real APScheduler before it starts."""

from __future__ import annotations

from pathlib import Path

import yaml

from monitor.model import load_model
from monitor.service.service import Service
from monitor.store.migrate import upgrade

EXAMPLE = Path(__file__).parents[2] / "examples" / "monitor.yaml"


def _service(tmp_path: Path, **report: object) -> Service:
    cfg = yaml.safe_load(EXAMPLE.read_text())
    cfg["storage"] = {"url": f"sqlite:///{tmp_path / 'm.db'}", "buffer_dir": str(tmp_path / "spool")}
    cfg["report"] = {**cfg["report"], **report}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(cfg))
    model = load_model(path)
    upgrade(model.storage.url)
    return Service(model)


def test_every_endpoint_class_and_upkeep_job_is_scheduled(tmp_path: Path) -> None:
    service = _service(tmp_path)
    try:
        service._schedule()
        jobs = {j.id: j for j in service.scheduler.get_jobs()}
        model = service.model
        expected = {f"scrape:{e.name}" for e in model.endpoints} | {
            f"health:{e.name}" for e in model.endpoints
        }
        expected |= {f"probe:{c.name}" for c in model.classes} | {"evaluate", "prune", "report"}
        assert set(jobs) == expected
        assert jobs["scrape:m3-extended"].trigger.interval.total_seconds() == 30
        assert jobs["probe:repo-analysis-128k"].trigger.interval.total_seconds() == 300
        report = str(jobs["report"].trigger)
        assert "day_of_week='mon'" in report and "hour='9'" in report and "minute='0'" in report
        assert jobs["report"].func.__name__ == "weekly_job"
    finally:
        service.store.close()


def test_no_report_job_without_recipients_or_webhook(tmp_path: Path) -> None:
    service = _service(tmp_path, recipients=[], webhook_url=None)
    try:
        service._schedule()
        assert "report" not in {j.id for j in service.scheduler.get_jobs()}
    finally:
        service.store.close()
