"""Failed replays are not evidence (issue 26, finding 1): two good replays against a real simulator,
the simulator stopped, one more replay — stored as a failed run, exit 1, and the contract reads
exactly as before apart from a note naming the ignored run (and its row in the per-run table,
marked not counted); ``compare`` refuses it. The rule itself
(docs/contract.md, *Failed replays are not evidence*) against hand-built summaries."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from monitor.cli.replay import render
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
    # the per-run table lists run 3 too, marked as not counted; nothing else changes
    row = [line for line in after.splitlines(keepends=True) if line.startswith("| 3 | m3mon replay |")]
    assert len(row) == 1 and row[0].rstrip().endswith("| no: not evidence (see notes) |"), after
    assert after.replace(note, "").replace(row[0], "") == before

    status, out, _ = m3mon(capsys, *replay[:-1], "--rate", "2")  # the human form says so too
    assert status == 1 and "not evidence: the deployment fingerprint was not observable" in out
    status, _, err = m3mon(capsys, "compare", "-c", str(cfg), "--endpoint", "sim", "--before", "run:1",
                           "--after", "run:3")  # fmt: skip
    assert status == 2 and "replay run 3 is no evidence" in err


#: Plain requests of 5 prompt tokens: the simulator's chat template and the replay's
#: ``Request <id>.`` tag alone are 11 (monitor.sim.tokens.render_chat), so no prompt can be sized.
TOO_SHORT = """\
version: m3mon-profile/v1
class: small
prompt_tokens: {quantiles: [[0, 5]]}
output_tokens: {quantiles: [[0, 10]]}
arrival: {rate: 6}
"""


def test_a_replay_whose_prompts_cannot_be_sized_is_no_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26, "exact prompt sizes ... fail loudly where it cannot": a run whose prompts the
    server counted more than 2 % off the profile's is stored as a failed run (exit 1, one line on
    stderr naming the error) and the contract does not take its load as capacity. The error is
    checked against the simulator's own count of each request's prompt (/sim/truth)."""
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        cfg = _config(tmp_path, sim.base_url)
        (tmp_path / "short.yaml").write_text(TOO_SHORT)
        replay = ("replay", "-c", str(cfg), "--class", "small", "--duration", "1s")
        status, out, err = m3mon(capsys, *replay, "--profile", str(tmp_path / "small.yaml"), "--rate", "4")
        assert status == 0 and "not evidence" not in out + err, out + err
        seen = len(sim.truth()["requests"])
        status, out, err = m3mon(capsys, *replay, "--profile", str(tmp_path / "short.yaml"), "--rate", "12",
                                 "--json")  # fmt: skip
        served = [r["prompt_tokens"] for r in sim.truth()["requests"][seen:]]
        status_human, human, human_err = m3mon(capsys, *replay, "--profile", str(tmp_path / "short.yaml"),
                                               "--rate", "12")  # fmt: skip
        _, contract, _ = m3mon(capsys, "contract", "-c", str(cfg))
    run = json.loads(out)
    error = sum(abs(n - 5) / 5 for n in served) / len(served)
    assert served and min(served) >= 11 and error > 1.0, served
    why = run["not_evidence"]
    assert status == 1 and why.startswith(f"prompt sizes {error:.1%} off the profile's"), why
    assert err.splitlines() == [f"m3mon replay: not evidence: {why} (stored as failed run {run['run_id']})"]
    assert status_human == 1 and len(human_err.splitlines()) == 1
    assert "\nnot evidence: prompt sizes " in human and "warning:" not in human, human
    assert f"* note: replay run {run['run_id']} (rate 12) not counted: {why}" in contract
    assert "SLOs hold up to 4 req/s (rate, 1 run(s))" in contract, contract


SIZING = ("measured with the server's tokenizer and chat template; 3 prompt(s) could not be sized "
          "within 2% of their plan")  # fmt: skip


@pytest.mark.parametrize(("error", "line"), [
    (0.012, f"warning: prompts not all sized to plan ({SIZING}; mean size error 1.2%, within 2%)"),
    (0.03, f"not evidence: prompt sizes 3.0% off the profile's as the server counted them (tolerance 2%; "
           f"{SIZING}) (stored as a failed run; the contract ignores it)"),
])  # fmt: skip
def test_the_sizing_line_warns_within_the_tolerance_and_is_an_error_beyond(error: float, line: str) -> None:
    """Prompts that could not all be sized, their mean error within 2 %: evidence, with a warning.
    Beyond 2 % the run is no evidence and says so, without the warning (which began at 5 %)."""
    summary = replace(_summary(10, {}), prompt_token_error=error, prompt_sizing=SIZING)
    why = evidence_problem("pool", "a" * 64, "a" * 64, summary)
    doc: dict[str, Any] = {"class": "small", "endpoint": "pool", "load": "rate 4/s", "summary": summary.to_dict(),
                           "clauses": [], "profile_digest": "p" * 64, "fingerprint_digest": "a" * 64,
                           "not_evidence": why}  # fmt: skip
    sizing_lines = [x for x in render(doc).splitlines() if x.startswith(("warning:", "not evidence:"))]
    assert sizing_lines == [line]


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
