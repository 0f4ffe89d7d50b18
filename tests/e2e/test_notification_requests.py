"""From a page to the requests behind it: the burn page Alertmanager delivers names the bad
requests (trace ids) with their stage breakdown, and those traces' spans are in the store with the
stated numbers. The whole pipeline is real: the simulator exports its ``llm_request`` spans to
``m3mon run``, Prometheus evaluates the generated rules (the page's ``requests`` annotation
queries the monitor's ``m3mon_slo_request_info``), Alertmanager delivers to a webhook."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from monitor.sim.harness import running_simulator
from monitor.store.tables import ServerSpanRow
from tests.e2e.servers import free_port
from tests.e2e.stack import SIM, endpoint, request_class, running_stack, wait_until

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(150)]

TTFT = {"name": "ttft", "sli": "ttft", "threshold": "0.1s", "objective": 95, "source": "server"}
#: one request of the ``requests`` annotation: trace (endpoint outcome: ttft X s: stage Y s, ...)
REQUEST = re.compile(r"([0-9a-f]{32}) \((\S+) (\S+): ttft ([0-9.]+)s: ([^)]*)\)")


def _requests(st: object) -> list[tuple[str, ...]]:
    pages = [a for a in st.capture.alerts("/pager")  # type: ignore[attr-defined]
             if a["labels"]["alertname"] == "SLOErrorBudgetBurnPage" and a["labels"]["slo"] == "ttft"]  # fmt: skip
    for page in reversed(pages):
        found = REQUEST.findall(page["annotations"].get("requests", ""))
        if found:
            return found
    return []


def test_the_page_names_its_slowest_requests_and_their_stages(tmp_path: Path) -> None:
    port = free_port()
    traces = f"http://127.0.0.1:{port}/v1/traces"
    with running_simulator(**SIM, otlp_traces_endpoint=traces) as sim:
        eps = [endpoint("pool", sim.base_url, ["chat-32k"])]
        with running_stack(tmp_path, eps, [request_class("chat-32k", ["chat"], [TTFT])], port=port) as st:
            time.sleep(2)
            sim.set_faults(brownout_prefill_factor=400)
            found = wait_until(lambda: _requests(st), 90, "a delivered page naming its requests")
            time.sleep(1)
            assert st.stop_monitor() == 0, st.log_text()
    spans = {r.trace_id: r for r in st.rows(ServerSpanRow, ServerSpanRow.trace_id.in_([f[0] for f in found]))}
    for trace, where, outcome, ttft, stages in found:
        span = spans.get(trace)
        assert span is not None, f"{trace}: named by the page, not in the store"
        assert (where, outcome) == ("pool", "ok")
        assert span.ttft is not None and abs(span.ttft - float(ttft)) <= 0.006 and span.ttft > 0.1
        prefill = re.search(r"prefill ([0-9.]+)s", stages)
        assert prefill and span.prefill is not None and abs(span.prefill - float(prefill.group(1))) <= 0.006
