"""Deploy judges the packages of the interpreter the engine runs in, not qwen-doctor's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from doctor.deploy.preflight import backend_packages, with_packages
from doctor.errors import DoctorError
from doctor.facts.model import Facts


@pytest.fixture(scope="module")
def other_venv(tmp_path_factory) -> Path:
    """A bare virtualenv with one fake distribution: the backend's interpreter, unlike ours."""
    root = tmp_path_factory.mktemp("backend")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    site = next((root / "venv" / "lib").glob("python3*/site-packages"))
    meta = site / "only_here_dist-1.2.3.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: only-here-dist\nVersion: 1.2.3\n")
    return root / "venv" / "bin" / "python"


def test_the_inventory_is_the_backend_interpreters(other_venv: Path) -> None:
    seen = backend_packages(str(other_venv))
    listed = "\n".join(seen["inventory"]["locations"].values())
    assert "only-here-dist==1.2.3" in listed
    assert "click==" not in listed          # qwen-doctor's own dependency is not in that venv
    assert seen["inventory"]["complete"] is True
    assert seen["packages"]["torch"] is None


def test_the_facts_take_both_sections_and_keep_the_rest(other_venv: Path) -> None:
    facts = Facts({"packages": {"torch": {"version": "9"}}, "inventory": {"locations": {"/x": "a==1"}},
                   "host": {"hostname": "h"}})
    judged = with_packages(facts, backend_packages(str(other_venv)))
    assert judged.data["packages"]["torch"] is None
    assert "/x" not in judged.data["inventory"]["locations"]
    assert judged.data["host"] == {"hostname": "h"}


def test_an_interpreter_that_cannot_run_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DoctorError, match="cannot run the backend interpreter"):
        backend_packages(str(tmp_path / "missing-python"))
