"""``m3mon maintenance add|list`` through the real command line (forked ``m3mon`` processes).

Hand-computed times: ``sunday-kernel`` runs Sundays 04:00 Europe/Berlin for 2h from 2026-10-18.
Berlin leaves summer time on Sun 2026-10-25 at 03:00 CEST (01:00 UTC), so the wall-clock 04:00
is 02:00 UTC on Oct 18 (CEST, UTC+2) and 03:00 UTC on Oct 25 and Nov 1 (CET, UTC+1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import monitor.cli.maintenance_file
import monitor.model  # noqa: F401
from tests.cli.forked import Result, run

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-a, base_url: "http://127.0.0.1:9", model: m3, classes: [chat, agent]}
  - {name: ep-b, base_url: "http://127.0.0.1:10", model: m3, classes: [chat]}
request_classes:
  - {name: chat, max_context_tokens: 32768, probes: [chat], slos: [{name: availability, sli: availability, objective: 99}]}
  - {name: agent, max_context_tokens: 32768, probes: [chat], slos: [{name: availability, sli: availability, objective: 99}]}
exporter: {listen: "0.0.0.0:9555"}
maintenance_file: planned/maintenance.yaml
"""
SUNDAY = ["--name", "sunday-kernel", "--start", "2026-10-18T04:00", "--duration", "2h",
          "--rrule", "FREQ=WEEKLY;BYDAY=SU", "--timezone", "Europe/Berlin", "--class", "chat",
          "--reason", "kernel: upgrade"]  # fmt: skip
DB = ["--name", "db-migration", "--start", "2026-10-21T10:00:00Z", "--end", "2026-10-21T11:30:00Z",
      "--endpoint", "ep-a", "--reason", "schema v7"]  # fmt: skip
ENV: dict[str, str | None] = {"M3MON_STORAGE_URL": None}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "planned").mkdir()
    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def m3mon(tmp: Path, *argv: str) -> Result:
    return run(argv, ENV, tmp / "runs")


def test_add_prints_the_item_and_edits_nothing(config: Path) -> None:
    r = m3mon(config.parent, "maintenance", "add", *SUNDAY, "-c", str(config))
    assert r.status == 0, r.output
    assert r.out.splitlines()[1:] == [
        "- name: sunday-kernel",
        "  start: '2026-10-18T04:00:00'",
        "  duration: 2h",
        "  rrule: FREQ=WEEKLY;BYDAY=SU",
        "  timezone: Europe/Berlin",
        "  classes: [chat]",
        "  reason: 'kernel: upgrade'",
    ]
    assert config.read_text() == CONFIG and list((config.parent / "planned").iterdir()) == []


def test_write_creates_then_appends_and_the_config_reads_it(config: Path) -> None:
    tmp, file = config.parent, config.parent / "planned" / "maintenance.yaml"
    r = m3mon(tmp, "maintenance", "add", *SUNDAY, "-c", str(config), "--write")
    assert r.status == 0, r.output
    assert r.out.splitlines() == [
        f"added maintenance window 'sunday-kernel' to {file} (1 window(s) in the file)",
        "the service reads it on reload: kill -HUP <pid of m3mon run>, or curl -X POST "
        "http://127.0.0.1:9555/-/reload",
    ]
    assert file.read_text().startswith("version: m3mon/v1\nmaintenance:\n- name: sunday-kernel\n")
    file.write_text(file.read_text() + "# agreed with the DBAs\n")  # a comment the next add keeps
    assert m3mon(tmp, "maintenance", "add", *DB, "-c", str(config), "--write").status == 0
    text = file.read_text()
    assert "# agreed with the DBAs\n- name: db-migration\n" in text and text.count("- name:") == 2
    assert not [p.name for p in file.parent.iterdir() if p.name != "maintenance.yaml"]  # no temp file left
    # the config reads the file: the listing shows both windows (now: Wed 2026-10-21 11:00 UTC)
    r = m3mon(tmp, "maintenance", "list", "-c", str(config), "--now", "2026-10-21T11:00:00Z", "--json")
    assert r.status == 0, r.output
    got = [(o["window"], o["start"], o["end"], o["state"]) for o in json.loads(r.out)["occurrences"]]
    assert got == [
        ("sunday-kernel", "2026-10-18T02:00:00Z", "2026-10-18T04:00:00Z", "past"),
        ("db-migration", "2026-10-21T10:00:00Z", "2026-10-21T11:30:00Z", "in progress"),
        ("sunday-kernel", "2026-10-25T03:00:00Z", "2026-10-25T05:00:00Z", "planned"),
    ]


def test_list_across_the_dst_change(config: Path) -> None:
    tmp = config.parent
    assert (
        m3mon(tmp, "maintenance", "add", *SUNDAY, "--file", str(tmp / "planned" / "maintenance.yaml")).status
        == 0
    )
    assert (
        m3mon(tmp, "maintenance", "add", *DB, "--file", str(tmp / "planned" / "maintenance.yaml")).status == 0
    )
    args = [
        "maintenance",
        "list",
        "-c",
        str(config),
        "--now",
        "2026-10-25T04:00:00Z",
        "--since",
        "8d",
        "--until",
        "8d",
    ]
    r = m3mon(tmp, *args, "--class", "chat")
    assert r.status == 0, r.output
    assert r.out.splitlines() == [
        "maintenance from 2026-10-17T04:00:00Z to 2026-11-02T04:00:00Z (UTC), now 2026-10-25T04:00:00Z",
        "window         state        start                 end                   duration  applies to      reason",
        "sunday-kernel  past         2026-10-18T02:00:00Z  2026-10-18T04:00:00Z  2h        classes chat    kernel: upgrade",
        "db-migration   past         2026-10-21T10:00:00Z  2026-10-21T11:30:00Z  1h 30m    endpoints ep-a  schema v7",
        "sunday-kernel  in progress  2026-10-25T03:00:00Z  2026-10-25T05:00:00Z  2h        classes chat    kernel: upgrade",
        "sunday-kernel  planned      2026-11-01T03:00:00Z  2026-11-01T05:00:00Z  2h        classes chat    kernel: upgrade",
    ]
    # ep-a serves agent too, the Sunday window does not touch it; the default range is 7d either side
    r = m3mon(
        tmp, "maintenance", "list", "-c", str(config), "--now", "2026-10-25T04:00:00Z", "--class", "agent"
    )
    assert r.out.splitlines()[2:] == [
        "db-migration  past   2026-10-21T10:00:00Z  2026-10-21T11:30:00Z  1h 30m    endpoints ep-a  schema v7"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rrule", "FREQ=SOMETIMES"], "--rrule: not an RFC 5545 recurrence rule (invalid 'FREQ': SOMETIMES): 'FREQ=SOMETIMES'"),
        (["--class", "batch"], "--class: unknown request class 'batch'; known: agent, chat"),
        (["--endpoint", "ep-z"], "--endpoint: unknown endpoint 'ep-z'; known: ep-a, ep-b"),
        (["--class", "agent", "--endpoint", "ep-b"], "--class/--endpoint: no endpoint listed here serves any class listed in 'classes'"),
        (["--rrule", "FREQ=DAILY", "--class", "chat", "--duration", "1d"], "--rrule/--duration: occurrences overlap or touch"),
        (["--start", "tomorrow"], "--start: expected an RFC 3339 time such as 2026-12-06T02:00:00+01:00, got 'tomorrow'"),
        (["--timezone", "Europe/Atlantis"], "--timezone: unknown time zone 'Europe/Atlantis'"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_naming_the_option(config: Path, argv: list[str], message: str) -> None:
    base = {"--name": "w", "--start": "2026-10-18T04:00", "--duration": "1h", "--class": "chat"}
    given = dict(zip(argv[::2], argv[1::2], strict=True))
    if "--endpoint" in given and "--class" not in given:
        base.pop("--class")
    merged = [x for k, v in {**base, **given}.items() for x in (k, v)]
    r = m3mon(config.parent, "maintenance", "add", *merged, "-c", str(config), "--write")
    assert r.status == 2 and r.out == ""
    assert len(r.err.splitlines()) == 1 and r.err.startswith(f"m3mon maintenance add: {message}"), r.err
    assert not (config.parent / "planned" / "maintenance.yaml").exists()


def test_a_duplicate_name_is_refused_and_the_file_kept(config: Path) -> None:
    tmp, file = config.parent, config.parent / "planned" / "maintenance.yaml"
    assert m3mon(tmp, "maintenance", "add", *SUNDAY, "-c", str(config), "--write").status == 0
    before = file.read_bytes()
    r = m3mon(tmp, "maintenance", "add", *DB[:1], "sunday-kernel", *DB[2:], "-c", str(config), "--write")
    assert (r.status, r.err) == (
        2,
        "m3mon maintenance add: --name: duplicate maintenance window 'sunday-kernel'\n",
    )
    assert file.read_bytes() == before


def test_write_needs_a_maintenance_file_and_list_a_known_class(config: Path) -> None:
    tmp = config.parent
    bare = tmp / "bare.yaml"
    bare.write_text(CONFIG.replace("maintenance_file: planned/maintenance.yaml\n", ""))
    r = m3mon(tmp, "maintenance", "add", *SUNDAY, "-c", str(bare), "--write")
    assert r.status == 2 and r.err.startswith(
        f"m3mon maintenance add: --write: {bare} has no maintenance_file"
    )
    r = m3mon(tmp, "maintenance", "add", *SUNDAY, "--write")
    assert (r.status, r.err) == (
        2,
        "m3mon maintenance add: --write: needs -c/--config (its maintenance_file is written); or use --file FILE\n",
    )
    r = m3mon(tmp, "maintenance", "list", "-c", str(config), "--class", "batch")
    assert (r.status, r.err) == (
        2,
        "m3mon maintenance list: --class: unknown request class 'batch'; known: chat, agent\n",
    )
    r = m3mon(tmp, "maintenance", "list", "-c", str(config), "--since", "a while")
    assert r.status == 2 and r.err.startswith("m3mon maintenance list: --since: expected a duration")
