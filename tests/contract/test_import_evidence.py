"""Imported evidence that must be refused or marked not-evidence (docs/contract.md, *Evidence
rules*), through the real CLI against the real simulator, on held files in the tools' formats
(tests/fixtures/peers/SOURCES.md: each derived from a file the real tool wrote, one fact changed).

The class here has **no availability SLO**: the case in which a run with most requests failed
used to read "SLOs hold" on its few survivors and set warm capacity. Oracles are the files' own
fields, read here with ``json``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.sim.harness import SimHandle, running_simulator
from monitor.store.migrate import upgrade
from monitor.store.replays import StoredRun, runs
from monitor.store.store import Store
from tests.contract.peer_files import retargeted
from tests.contract.test_contract_sim import SETTINGS, _config, m3mon
from tests.contract.test_peer_formats import PEERS
from tests.support.postgres import fresh_database, postgres_cluster, postgres_url  # noqa: F401  (fixtures)

DETAILED = str(PEERS / "vllm-bench-rate4-detailed.json")
HOLDS_AT_4 = "* **Warm capacity**: SLOs hold up to 4 req/s (rate, 1 run(s))"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimHandle]:
    with running_simulator(**SETTINGS) as handle:  # type: ignore[arg-type]
        yield handle


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store and config whose endpoint is never contacted (the files are refused before)."""
    return _config_without_availability(tmp_path_factory.mktemp("offline"), "http://127.0.0.1:9")


def _config_without_availability(folder: Path, base_url: str) -> str:
    path = _config(folder, base_url)
    text = path.read_text()
    path.write_text(
        "".join(line for line in text.splitlines(keepends=True) if "sli: availability" not in line)
    )
    return str(path)


def _stored(cfg: str, url: str | None = None) -> list[StoredRun]:
    db = Store(url or f"sqlite:///{Path(cfg).parent}/m3mon.db")
    try:
        with db.session() as s:
            return sorted(runs(s), key=lambda r: r.id)
    finally:
        db.close()


def _capacity(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("* **Warm capacity**"))


def test_36_of_40_failed_is_not_evidence_and_its_failures_are_bad_latency_events(
    sim: SimHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config_without_availability(tmp_path, sim.base_url)
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", DETAILED)
    assert status == 0 and HOLDS_AT_4 in out, out + err

    failed = PEERS / "vllm-bench-36-of-40-failed.json"
    doc = json.loads(failed.read_text())
    ok = [i for i, e in enumerate(doc["errors"]) if not e]
    assert (len(ok), len(doc["errors"]) - len(ok), doc["request_rate"]) == (4, 36, 8.0)
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", str(failed))
    why = (
        "36 of 40 requests failed (90.0%, more than 5%): the run measured its failures, not the "
        "deployment at that load"
    )
    assert status == 1 and err == f"m3mon contract: imported run 2 is not evidence: {why}\n"
    assert out.startswith(
        "imported run 2: vllm bench serve at rate 8/s, 4 completed, 36 failed, per-request values: "
        f"an SLO fails; not evidence: {why}"
    )
    assert _capacity(out) == HOLDS_AT_4  # not "up to 8 req/s"
    run = _stored(cfg)[1]
    assert run.not_evidence == why and run.meets_slos is False
    ttft = next(c for c in run.summary["clauses"] if c["slo"] == "ttft-p95")
    good = sum(1 for i in ok if doc["ttfts"][i] <= 1.0)  # the class's 1 s TTFT threshold
    assert (ttft["good"], ttft["total"], ttft["holds"]) == (good, 40, False)


def test_on_postgresql_the_failed_run_is_stored_as_not_evidence(
    sim: SimHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    """The same rule with the store on PostgreSQL (its JSON refuses NaN: nothing non-finite is
    stored with the run)."""
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        cfg = _config_without_availability(tmp_path, sim.base_url)
        text = Path(cfg).read_text().replace(f"sqlite:///{tmp_path}/m3mon.db", url)
        Path(cfg).write_text(text)
        upgrade(url)
        status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", DETAILED,
                                 "--import", str(PEERS / "vllm-bench-36-of-40-failed.json"))  # fmt: skip
        assert status == 1 and _capacity(out) == HOLDS_AT_4, out + err
        good, failed = _stored(cfg, url)
        assert good.not_evidence is None and good.meets_slos is True
        assert failed.not_evidence is not None and failed.not_evidence.startswith("36 of 40 requests failed")


def test_300_of_331_errored_guidellm_run_never_sets_warm_capacity(
    sim: SimHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config_without_availability(tmp_path, sim.base_url)
    status, before, _ = m3mon(capsys, "contract", "-c", cfg)
    name = "guidellm-300-of-331-errored.json"
    totals = json.loads((PEERS / name).read_text())["benchmarks"][0]["metrics"]["request_totals"]
    assert (totals["successful"], totals["errored"]) == (31, 300)
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import",
                             retargeted(name, sim.base_url, tmp_path))  # fmt: skip
    assert status == 1 and err.count("\n") == 1
    assert err.startswith("m3mon contract: imported run 1 is not evidence: 300 of 331 requests failed (90.6%")
    assert out.startswith(
        "imported run 1: GuideLLM at rate 40/s, 31 completed, 300 failed, per-request values: an SLO fails"
    )
    not_established = "* **Warm capacity**: not established"
    assert _capacity(before).startswith(not_established) and _capacity(out).startswith(not_established)
    (run,) = _stored(cfg)
    assert run.not_evidence is not None and run.meets_slos is False
    assert {c["slo"]: c["total"] for c in run.summary["clauses"]}["ttft-p95"] == 331


def test_a_foreign_model_is_refused_unless_accepted_and_then_recorded(
    sim: SimHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config_without_availability(tmp_path, sim.base_url)
    foreign = str(PEERS / "vllm-bench-foreign-model.json")
    model = json.loads(Path(foreign).read_text())["model_id"]
    args = ("contract", "-c", cfg, "--class", "small", "--import", foreign)
    status, out, err = m3mon(capsys, *args)
    assert (
        status == 2
        and out == ""
        and err
        == (
            f"m3mon contract: {foreign}: the run measured model {model!r}, not sim's ('MiniMaxAI/MiniMax-M3'); "
            "nothing stored (--accept-foreign-model to import it as sim's anyway)\n"
        )
    )
    assert _stored(cfg) == []
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--accept-foreign-model")
    assert status == 2 and err == (
        "m3mon contract: --accept-foreign-model and --accept-foreign-target go with --import FILE\n"
    )
    status, out, err = m3mon(capsys, *args, "--accept-foreign-model")
    accepted = f"model {model!r}, not sim's ('MiniMaxAI/MiniMax-M3')"
    assert status == 0 and out.startswith(
        f"imported run 1: vllm bench serve at concurrency 4, 24 completed, 0 failed, per-request values: "
        f"SLOs hold; accepted as the endpoint's: {accepted}\n"
    ), out + err
    assert f"* note: imported run 1 (concurrency 4) accepted at import as this endpoint's: {accepted}" in out
    (run,) = _stored(cfg)
    origin = run.summary["source"]["origin"]
    assert origin["model"] == model and origin["accepted_foreign"] == [accepted]


def test_a_foreign_target_is_refused_unless_accepted(
    sim: SimHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config_without_availability(tmp_path, sim.base_url)
    foreign = str(PEERS / "guidellm-foreign-target.json")
    target = json.loads(Path(foreign).read_text())["config"]["spec"]["backend"]["target"]
    args = ("contract", "-c", cfg, "--class", "small", "--import", foreign)
    status, out, err = m3mon(capsys, *args, "--accept-foreign-model")  # the model is not what differs
    assert (
        status == 2
        and out == ""
        and err
        == (
            f"m3mon contract: {foreign}: the run measured target {target}, not sim ({sim.base_url}); "
            "nothing stored (--accept-foreign-target to import it as sim's anyway)\n"
        )
    )
    assert _stored(cfg) == []
    status, out, err = m3mon(capsys, *args, "--accept-foreign-target")
    assert status == 0 and f"accepted as the endpoint's: target {target}, not sim" in out.splitlines()[0]
    (run,) = _stored(cfg)
    assert run.summary["source"]["origin"]["target"] == target


def _edit(name: str, folder: Path, change: str) -> str:
    """A copy of a held file with one field changed (``change`` names which)."""
    doc = json.loads((PEERS / name).read_text())
    if change == "aiperf-nan-p99":
        doc["time_to_first_token"]["p99"] = float("nan")
    elif change == "aiperf-2031":
        doc["start_time"] = "2031-03-01T10:00:00.000000"
    elif change == "aiperf-negative-mean":
        doc["request_latency"]["avg"] = -503.2
    elif change == "guidellm-negative-latency":
        doc["benchmarks"][0]["requests"]["successful"][3]["request_latency"] = -0.25
    elif change == "guidellm-zero-duration":
        doc["benchmarks"][0]["duration"] = 0.0
    elif change == "vllm-null-ttft":
        doc["ttfts"][3] = None
    elif change == "vllm-no-duration":
        del doc["duration"]
    elif change == "guidellm-1970":
        doc["benchmarks"][0]["start_time"] = 86400.0
    out = folder / f"{change}.json"
    out.write_text(json.dumps(doc))
    return str(out)


AIPERF = "aiperf-rate4-profile_export_aiperf.json"
GUIDELLM = "guidellm-foreign-target.json"  # the small GuideLLM file; refused before its target is read


@pytest.mark.parametrize(
    ("held", "change", "says"),
    [
        ("vllm-bench-nan-quantile.json", None, "the ttft P99 is nan, expected a finite number"),
        ("vllm-bench-negative-ttft.json", None,
         "per-request ttft value 6 of 24 is -0.0123 s, expected a number >= 0"),
        ("vllm-bench-zero-duration.json", None, "the duration is 0 s, expected a number > 0"),
        ("vllm-bench-future-date.json", None, "the run ended 2027-06-15 "),
        ("vllm-bench-before-2020.json", None, "the run started 2019-12-3"),
        ("vllm-bench-rate4-detailed.json", "vllm-null-ttft", "ttfts[3] is None, expected a number"),
        ("vllm-bench-concurrency4.json", "vllm-no-duration", "field 'duration' is missing"),
        (AIPERF, "aiperf-nan-p99", "the ttft P99 is nan, expected a finite number"),
        (AIPERF, "aiperf-2031", "the run ended 2031-03-01 "),
        (AIPERF, "aiperf-negative-mean", "the e2e mean is -0.5032 s, expected a number >= 0"),
        (GUIDELLM, "guidellm-negative-latency", "per-request e2e value 4 of 31 is -0.25 s, expected a number >= 0"),
        (GUIDELLM, "guidellm-zero-duration", "the duration is 0 s, expected a number > 0"),
        (GUIDELLM, "guidellm-1970", "the run started 1970-01-02 00:00:00 UTC, before 2020: the date is wrong"),
    ],
)  # fmt: skip
def test_a_malformed_run_is_one_line_exit_2_nothing_stored(
    offline: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], held: str, change: str | None, says: str
) -> None:
    """The same checks whichever tool wrote the file; refused before the endpoint is contacted."""
    cfg = offline
    path = str(PEERS / held) if change is None else _edit(held, tmp_path, change)
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import", path)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"m3mon contract: {path}: {says}"), err
    assert _stored(cfg) == []


def test_two_imported_runs_compare_on_what_they_record(
    sim: SimHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two ``vllm bench serve`` runs of one dataset (same flags, two seeds), one at rate 4, one at
    concurrency 4: the load changed, nothing else — not "profile" (each file's own digest)."""
    cfg = _config_without_availability(tmp_path, sim.base_url)
    for name in ("vllm-bench-rate4-detailed.json", "vllm-bench-concurrency4.json"):
        status, out, err = m3mon(
            capsys, "contract", "-c", cfg, "--class", "small", "--import", str(PEERS / name)
        )
        assert status == 0, out + err
    base = ("compare", "-c", cfg, "--endpoint", "sim", "--json")
    status, out, err = m3mon(capsys, *base, "--before", "run:1", "--after", "run:2")
    cmp = json.loads(out)
    assert status == 0 and cmp["changed"] == ["load rate 4→concurrency 4"] and cmp["warning"] is None, (
        out + err
    )
    status, out, err = m3mon(capsys, "contract", "-c", cfg, "--class", "small", "--import",
                             retargeted("guidellm-rate4.json", sim.base_url, tmp_path))  # fmt: skip
    assert status == 0, out + err
    status, out, err = m3mon(capsys, *base, "--before", "run:1", "--after", "run:3")
    cmp = json.loads(out)  # another tool counts prompts another way: named, with the sizes it saw
    assert cmp["changed"][0] == "tool vllm bench serve→GuideLLM 0.8.1 (their definitions differ)"
    assert cmp["changed"][1].startswith("prompt tokens 205→")
