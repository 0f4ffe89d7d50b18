"""Session fixtures: promtool, the generated rules of the selected scenarios, a migrated database."""

from __future__ import annotations

import pytest

from tests.slo_agreement.harness import Prepared, prepare
from tests.slo_agreement.scenarios import SCENARIOS
from tests.slo_agreement.streams import Scenario
from tests.support.real import require_binary


@pytest.fixture(scope="session")
def promtool() -> str:
    return require_binary("promtool", "/usr/bin/promtool")


def _selected(session: pytest.Session) -> tuple[Scenario, ...]:
    """The scenarios of the tests this session runs (``-k`` narrows generation too)."""
    chosen = {id(item.callspec.params["scn"]) for item in session.items if hasattr(item, "callspec")
              and "scn" in item.callspec.params}  # fmt: skip
    return tuple(s for s in SCENARIOS if id(s) in chosen) or SCENARIOS


@pytest.fixture(scope="session")
def prepared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    return prepare(_selected(request.session), tmp_path_factory.mktemp("slo-agreement"))
