"""Failed replays are not evidence (issue 26, finding 1): two good replays against a real simulator,
the simulator stopped, one more replay — stored as a failed run, exit 1, and the contract reads
exactly as before apart from a note naming the ignored run; ``compare`` refuses it. The rule itself
(docs/contract.md, *Failed replays are not evidence*) against hand-built summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.contract.runs import evidence_problem
from monitor.replay.summary import ReplaySummary
from monitor.sim.harness import running_simulator
from tests.contract.test_contract_sim import SETTINGS, _config, m3mon


def test_a_replay_of_a_stopped_endpoint_changes_nothing_but_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        cfg = _config(tmp_path, sim.base_url)
        replay = ("replay", "-c", str(cfg), "--class", "small", "--profile", str(tmp_path / "small.yaml"),
                  "--duration", "1s", "--json")  # fmt: skip
        for rate in ("4", "12"):
            status, out, err = m3mon(capsys, *replay, "--rate", rate)
            assert json.loads(out)["not_evidence"] is None, out + err
        status, before, _ = m3mon(capsys, "contract", "-c", str(cfg))
    assert status == 0 and "SLOs hold up to" in before and "vLLM: not recorded" not in before

    status, out, err = m3mon(capsys, *replay, "--rate", "2")
    dead = json.loads(out)
    assert status == 1 and dead["run_id"] == 3 and dead["summary"]["succeeded"] == 0, out + err
    assert dead["not_evidence"] == (
        "the deployment fingerprint was not observable (/metrics of sim could not be read)"
    )
    status, after, _ = m3mon(capsys, "contract", "-c", str(cfg))
    note = f"* note: replay run 3 (rate 2) not counted: {dead['not_evidence']}\n"
    assert status == 0 and note in after
    assert after.replace(note, "") == before

    status, out, _ = m3mon(capsys, *replay[:-1], "--rate", "2")  # the human form says so too
    assert status == 1 and "not evidence: the deployment fingerprint was not observable" in out
    status, _, err = m3mon(capsys, "compare", "-c", str(cfg), "--endpoint", "sim", "--before", "run:1",
                           "--after", "run:3")  # fmt: skip
    assert status == 2 and "replay run 3 is no evidence" in err


def _summary(requests: int, errors: dict[str, int]) -> ReplaySummary:
    return ReplaySummary(requests, requests - sum(errors.values()), 1.0, 0.0, 0.0, 0.0, {}, errors,
                         None, 0.0, 0.0, {}, None)  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "requests", "errors", "reason"),
    [
        ("a" * 64, "a" * 64, 10, {}, None),
        ("a" * 64, "a" * 64, 10, {"connect_error": 9}, None),  # one request measured the pool
        ("a" * 64, None, 10, {"connect_error": 4, "timeout": 6}, None),  # fell over under the load
        ("a" * 64, "a" * 64, 10, {"timeout": 10}, None),  # reached, never answered: a failed load
        (None, None, 10, {"connect_error": 10}, "the deployment fingerprint was not observable"),
        ("a" * 64, None, 10, {"connect_error": 10}, "no request reached the endpoint (10 connect errors)"),
        ("a" * 64, "a" * 64, 0, {}, "no request was sent"),
        (
            "a" * 64,
            "b" * 64,
            10,
            {},
            "the deployment changed during the run (fingerprint aaaaaaaaaaaa→bbbbbbbbbbbb)",
        ),
    ],
)
def test_what_is_evidence(
    before: str | None, after: str | None, requests: int, errors: dict[str, int], reason: str | None
) -> None:
    got = evidence_problem("pool", before, after, _summary(requests, errors))
    assert got == reason if reason is None else (got or "").startswith(reason)
