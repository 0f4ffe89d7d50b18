"""``m3mon run`` on a taken ``exporter.listen`` address: one line, exit 1, nothing left running; a
``--listen`` port outside 1-65535: one line, exit 2."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from tests.cli.forked import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


def test_a_taken_listen_address_is_one_line_and_nothing_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "monitor.yaml"
        config.write_text(EXAMPLE.read_text().replace("listen: 127.0.0.1:9464", f"listen: 127.0.0.1:{port}"))
        assert f"127.0.0.1:{port}" in config.read_text()
        url = f"sqlite:///{tmp_path / 'm3mon.db'}"
        result = run(["run", "-c", str(config), "--upgrade", "--duration", "5"],
                     {"M3MON_STORAGE_URL": url}, tmp_path)  # fmt: skip
    assert result.status == 1, result.output
    assert result.err.splitlines()[-1] == (
        f"m3mon run: cannot listen on 127.0.0.1:{port} (exporter.listen): Address already in use"
    )
    assert "Traceback" not in result.output
    with sqlite3.connect(tmp_path / "m3mon.db") as db:  # it stopped before probing or scraping
        assert db.execute("SELECT count(*) FROM probe_results").fetchone() == (0,)


@pytest.mark.parametrize("listen", ["127.0.0.1:99999", "127.0.0.1:0"])
def test_a_listen_port_outside_1_to_65535_is_bad_input(listen: str, tmp_path: Path) -> None:
    """Issue 26, finding 6: ``--listen 127.0.0.1:99999`` died with "internal error: OverflowError"."""
    url = f"sqlite:///{tmp_path / 'm3mon.db'}"
    result = run(["run", "-c", str(EXAMPLE), "--listen", listen, "--duration", "5"],
                 {"M3MON_STORAGE_URL": url}, tmp_path)  # fmt: skip
    assert result.status == 2, result.output
    assert result.err == f"m3mon run: --listen: expected a port from 1 to 65535, got {listen!r}\n"
    assert result.out == "" and not (tmp_path / "m3mon.db").exists()  # refused before anything started
