"""What ``openslo import`` does with the sections OpenSLO does not describe (issue 26, finding 6):
without ``--base`` it says that storage, exporter, alerting and report are m3mon's defaults
(alerts then reach no one) instead of dropping them silently; with a ``--base`` in another folder,
the files the base names relative to itself are the same files in the imported config."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from monitor.model import load_model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


@pytest.fixture
def documents(tmp_path: Path) -> list[str]:
    assert main(["openslo", "export", "-c", str(EXAMPLE), "-o", str(tmp_path / "docs")]) == 0
    return sorted(str(p) for p in (tmp_path / "docs").glob("*.yaml"))


def test_without_base_the_defaults_are_named(
    documents: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["openslo", "import", *documents, "-o", str(tmp_path / "out.yaml")]) == 0
    err = capsys.readouterr().err.strip()
    assert err == (
        "m3mon openslo import: note: without --base, storage, exporter, alerting, report take m3mon's "
        "defaults (alerts route to receivers 'pager' and 'chat' with no webhook: nobody is paged); "
        "give --base CONFIG to keep yours"
    )
    text = (tmp_path / "out.yaml").read_text()
    assert "# Defaults, not from OpenSLO or --base: storage, exporter, alerting, report.\n" in text


def test_a_base_elsewhere_keeps_naming_its_own_files(
    documents: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "conf" / "monitor.yaml"
    base.parent.mkdir()
    (base.parent / "web.yml").write_text("{}\n")
    base.write_text(EXAMPLE.read_text().replace("exporter:\n", "exporter:\n  web_config_file: web.yml\n", 1))
    out = tmp_path / "elsewhere" / "imported.yaml"
    out.parent.mkdir()
    assert main(["openslo", "import", *documents, "--base", str(base), "-o", str(out)]) == 0
    assert capsys.readouterr().err == ""
    original, imported = load_model(base), load_model(out)
    assert original.storage.url == f"sqlite:///{base.parent / 'm3mon.db'}" == imported.storage.url
    assert Path(imported.web_config_file or "").resolve() == base.parent / "web.yml"
    assert "# Defaults" not in out.read_text()
