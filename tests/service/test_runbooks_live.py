"""Every alert's runbook link opens: ``m3mon run`` serves the runbooks ``m3mon generate`` writes.

A configuration without ``alerting.runbook_base_url`` is generated with the real CLI and run with
``m3mon run``; each alert's ``runbook_url`` is fetched as it stands (it must point at the running
monitor) and must answer 200 with the Markdown the generator wrote beside the rules. The
repository's generated rules (every alert of the example configuration and of fleet mode) are
fetched too, their URLs moved to the test monitor's address.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.service.live import config_doc, free_port, running_monitor

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]


def _runbook_urls(alerts_dir: Path) -> dict[str, str]:
    """``{alert name: runbook_url}`` of every alerting rule under ``alerts_dir``."""
    out = {}
    for path in sorted(alerts_dir.rglob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    out[rule["alert"]] = rule["annotations"]["runbook_url"]
    return out


def test_every_alerts_runbook_url_opens_on_the_running_monitor(tmp_path: Path) -> None:
    port = free_port()
    doc = config_doc(tmp_path, port)
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "out"
    gen = subprocess.run([sys.executable, "-m", "monitor", "generate", "-c", str(config), "-o", str(out)],
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    own = _runbook_urls(out / "alerts")
    kept = _runbook_urls(REPO / "alerts")
    assert len(own) >= 10 and len(kept) >= len(own)
    with running_monitor(tmp_path, doc) as m, m.client() as client:
        for name, url in own.items():
            assert url == f"{m.base}/runbooks/{name}.md"  # the default: the monitor's own address
            response = client.get(url)
            assert response.status_code == 200, (name, response.status_code)
            assert response.headers["content-type"].startswith("text/markdown")
            assert response.text == (out / "alerts" / "runbooks" / f"{name}.md").read_text(), name
        for name, url in kept.items():
            response = client.get(urlsplit(url).path)  # the example's address, moved to this monitor
            assert response.status_code == 200, (name, url)
            assert f"# {name}\n" in response.text and "## What to do" in response.text, name
        assert client.get("/runbooks/NoSuchAlert.md").status_code == 404
        index = client.get("/runbooks/")
        assert index.status_code == 200 and all(f"/runbooks/{n}.md" in index.text for n in kept)
