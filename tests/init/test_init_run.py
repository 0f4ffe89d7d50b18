"""The issue's "done when", bounded: ``m3mon init --from`` a simulator, then ``m3mon run`` on what it
wrote, unedited, evaluates every SLO with events within five minutes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from monitor.model import load_model
from monitor.sim.harness import running_simulator
from monitor.store.tables import EvaluationRow
from tests.e2e.servers import free_port
from tests.e2e.stack import SIM, m3mon, stop, wait_until

DONE_WHEN = 300.0


def _evaluated(db: Path) -> set[str]:
    """SLO ids with a stored evaluation whose shortest window holds events."""
    if not db.exists():
        return set()
    engine = create_engine(f"sqlite:///{db}")
    try:
        with Session(engine) as s:
            rows = s.scalars(select(EvaluationRow)).all()
            return {r.slo_id for r in rows if r.windows and r.windows["total"][0] > 0}  # windows as columns
    except Exception:  # the tables may not exist yet while the monitor migrates
        return set()
    finally:
        engine.dispose()


@pytest.mark.slow  # 1-3 min: the default 60 s evaluation step and 30 s probe rounds, as written
def test_run_on_the_written_config_evaluates_every_slo(tmp_path: Path) -> None:
    config = tmp_path / "m3mon.yaml"
    with running_simulator(**SIM) as sim:
        init = subprocess.run(m3mon("init", "--from", sim.base_url, "-o", str(config)),
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert init.returncode == 0, init.stderr
        slos = {s.id for s in load_model(config).slos}
        assert len(slos) == 4
        log = tmp_path / "run.log"
        port = free_port()  # the written 127.0.0.1:9464 may be taken on a shared machine
        with log.open("wb") as out:
            proc = subprocess.Popen(m3mon("run", "-c", str(config), "--upgrade", "--listen", f"127.0.0.1:{port}"),
                                    stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)  # fmt: skip
        try:
            wait_until(lambda: _evaluated(tmp_path / "m3mon.db") >= slos, DONE_WHEN,
                       "every SLO evaluated with events", every=2)  # fmt: skip
            assert proc.poll() is None, log.read_text()
        finally:
            code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
