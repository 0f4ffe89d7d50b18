"""``m3mon sim --port`` refuses a port it cannot bind instead of serving on another one."""

from __future__ import annotations

import pytest

from monitor.cli import main

pytestmark = pytest.mark.timeout(20)  # the old code went on to serve (on another port)


@pytest.mark.parametrize("value", ["99999", "0", "-1", "http"])
def test_a_port_outside_1_to_65535_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = main(["sim", "--port", value])
    except SystemExit as exc:  # argparse's own exit
        status = int(exc.code or 0)
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --port: expected a port from 1 to 65535" in err[0], err
