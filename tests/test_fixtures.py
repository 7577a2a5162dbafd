"""Derived fixtures are reproducible from the recorded H200 facts and say what was changed."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES
from tests.fixtures import derive


@pytest.mark.parametrize("name", sorted(derive.DERIVED))
def test_derived_fixture_is_current(name: str):
    assert (FIXTURES / name).read_text() == derive.render(name), f"run python tests/fixtures/derive.py ({name})"


@pytest.mark.parametrize("name", sorted(derive.DERIVED))
def test_derived_fixture_documents_its_changes(name: str):
    data = json.loads((FIXTURES / name).read_text())
    assert data["derived"]["from"].startswith("h200.json")
    assert data["derived"]["changes"]


def test_recorded_fixture_is_raw_collect_output():
    data = json.loads((FIXTURES / "h200.json").read_text())
    assert "derived" not in data
    assert data["torch_runtime"]["arch_list"] == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert (FIXTURES / "h200" / "nvidia-smi-q.xml").read_text().count("<gpu id=") == 1
