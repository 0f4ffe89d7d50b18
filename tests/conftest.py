"""Suite-wide test set-up: how tests are shared among pytest-xdist workers.

``make test`` runs the suite on two workers (``-n 2 --dist loadgroup``). Every test is put in the
group of its module, so a module's expensive module-scoped fixture (a simulator, a Prometheus, the
demo) starts once, on one worker; the real-vLLM tier is one group, so one vLLM server serves it.
"""

from __future__ import annotations

import pytest

#: Folders whose modules share one session-scoped server and must run on one worker.
ONE_GROUP = ("tests/real_vllm/",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks to schedule by group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = next((folder for folder in ONE_GROUP if path.startswith(folder)), path)
        item.add_marker(pytest.mark.xdist_group(group))
