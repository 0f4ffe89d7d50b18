"""Suite-wide test set-up: how tests are shared among pytest-xdist workers.

``make test`` runs the suite on three workers (``-n 3 --dist loadgroup``). Every test is put in the
group of its module, so a module's expensive module-scoped fixture (a simulator, a Prometheus, the
demo) starts once, on one worker; the real-vLLM tier is one group, so one vLLM server serves it
(and the vmalert timing soak joins it, so it never runs beside a saturated vLLM).
"""

from __future__ import annotations

import pytest

#: Folders whose modules share one session-scoped server and must run on one worker.
ONE_GROUP = ("tests/real_vllm/",)
#: Modules whose timing bounds must not share the machine with a real vLLM server saturating a core
#: (the real-vLLM tier's overload test): they join its group, so they never run beside it.
BESIDE_REAL_VLLM = ("tests/fleet/test_vmalert_timing.py",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks to schedule by group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = next((folder for folder in ONE_GROUP if path.startswith(folder)), path)
        if path in BESIDE_REAL_VLLM:
            group = ONE_GROUP[0]
        item.add_marker(pytest.mark.xdist_group(group))
