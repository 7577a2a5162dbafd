"""Shared test fixtures: recorded and derived facts bundles, and a context builder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from doctor import registry, runner
from doctor.context import CheckContext
from doctor.facts.model import Facts
from doctor.results import Result

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(name: str) -> Facts:
    return Facts.load(FIXTURES / f"{name}.json")


def fixture_data(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def run(facts: Facts, backend: str | None = None, only: tuple[str, ...] = (), **options: Any) -> dict[str, list[Result]]:
    """Run the built-in checks; results by check id."""
    reg = registry.load(plugins=False)
    specs = runner.select(reg, backend, only)
    results = runner.run_checks(specs, CheckContext(facts=facts, backend=backend, options=options))
    by_id: dict[str, list[Result]] = {}
    for r in results:
        by_id.setdefault(r.check_id, []).append(r)
    return by_id


@pytest.fixture(autouse=True)
def _private_run_directory(tmp_path_factory, monkeypatch) -> None:
    """Servers a test starts are recorded in a run directory of its own, never the user's."""
    monkeypatch.setenv("QWEN_DOCTOR_STATE_DIR", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def h200() -> Facts:
    return load_fixture("h200")


def facts_with(name: str = "h200", packages: dict[str, Any] | None = None, env: dict[str, str] | None = None,
               **sections: Any) -> Facts:
    """A fixture with some packages / env vars / sections replaced (None removes a package)."""
    data = fixture_data(name)
    for pkg, value in (packages or {}).items():
        if value is None:
            data["packages"][pkg] = None
        elif isinstance(value, dict):
            data["packages"][pkg] = value
        else:
            data["packages"][pkg] = {**(data["packages"].get(pkg) or {}), "version": value, "distribution": pkg}
    if env is not None:
        data["env"] = env
    for key, value in sections.items():
        data[key] = value
    return Facts(data)


def status_of(results: dict[str, list[Result]], check_id: str) -> list[str]:
    return [r.status.value for r in results[check_id]]


SLOW_MARKERS = ("vllm", "ray", "spark", "chromium", "slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fast unit tests first, then the slow real-engine tests (vLLM, Ray, Spark, Chromium)."""
    items.sort(key=lambda item: any(item.get_closest_marker(m) for m in SLOW_MARKERS))


def need(available: bool, reason: str) -> None:
    """Skip a real-engine test where the engine is missing; in CI (CI=true) a missing engine is a failure."""
    import os

    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason)
