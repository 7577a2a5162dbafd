"""QD-PKG: the whole package inventory, live and from pasted dumps: one CUDA major among NVIDIA's wheels,
flashinfer's companions at flashinfer's version, one copy of each distribution."""

from __future__ import annotations

from pathlib import Path

from doctor.facts.model import Facts
from doctor.facts.probes import inventory, packages
from tests.conftest import facts_with, run, status_of

COLLECT_ENV = """PyTorch version              : 2.15.0+cu132
CUDA used to build PyTorch   : 13.2
Nvidia driver version        : 595.58.03
GPU models and configuration : GPU 0: NVIDIA H100 80GB HBM3
Versions of relevant libraries
{pip}
vLLM Version                 : 0.34.0
"""


def _dump(tmp_path: Path, *pip: str) -> Facts:
    path = tmp_path / "env.txt"
    path.write_text(COLLECT_ENV.format(pip="\n".join(f"[pip3] {p}" for p in pip)), encoding="utf-8")
    return Facts.load(path)


def _inventory(*dists: tuple[str, str] | tuple[str, str, str], complete: bool = True) -> dict:
    return {"source": "metadata", "complete": complete,
            "locations": inventory.as_locations([(d[0], d[1], d[2] if len(d) > 2 else "/venv/site") for d in dists])}


def test_a_dump_with_cublas_for_cuda_12_and_13_gets_a_finding_that_removes_the_other_major(tmp_path: Path) -> None:
    facts = _dump(tmp_path, "nvidia-cublas-cu12==12.8.4.1", "nvidia-cublas-cu13==13.2.1.1", "torch==2.15.0+cu132")
    result = run(facts, only=("QD-PKG-001",))["QD-PKG-001"][0]
    assert result.status.value == "warn"
    assert "CUDA 12: nvidia-cublas-cu12 12.8.4.1" in result.summary and "CUDA 13: nvidia-cublas-cu13" in result.summary
    assert result.fix[0] == "pip uninstall -y nvidia-cublas-cu12", "torch is cu132: the CUDA 12 wheel goes"


def test_unsuffixed_cuda_13_components_count_as_cuda_13() -> None:
    facts = facts_with(inventory=_inventory(("nvidia-cublas", "13.2.1.1"), ("cuda-toolkit", "13.2.2"),
                                            ("nvidia-nccl-cu13", "2.30.7"), ("nvidia-cudnn-cu13", "9.26.0.51")))
    result = run(facts, only=("QD-PKG-001",))["QD-PKG-001"][0]
    assert result.status.value == "ok" and "all CUDA 13" in result.summary
    mixed = facts_with(inventory=_inventory(("nvidia-cublas", "13.2.1.1"), ("nvidia-nccl-cu12", "2.27.3")))
    assert status_of(run(mixed, only=("QD-PKG-001",)), "QD-PKG-001") == ["warn"]


def test_no_nvidia_wheels_and_no_inventory_skip_with_the_reason() -> None:
    plain = run(facts_with(inventory=_inventory(("numpy", "2.2.6"))), only=("QD-PKG-001",))["QD-PKG-001"][0]
    assert plain.status.value == "skip" and "no NVIDIA CUDA wheels" in plain.summary
    old = run(facts_with(), only=("QD-PKG",))
    assert all(r.status.value == "skip" and "no package inventory" in r.summary for rs in old.values() for r in rs)


def test_a_flashinfer_cubin_behind_flashinfer_python_fails_with_pasteable_fixes(tmp_path: Path) -> None:
    facts = _dump(tmp_path, "flashinfer-python==0.7.4", "flashinfer-cubin==0.7.2.post1")
    result = run(facts, only=("QD-PKG-002",))["QD-PKG-002"][0]
    assert result.status.value == "fail" and result.subject == "flashinfer-cubin"
    assert "does not match flashinfer version (0.7.4)" in result.details[0]
    assert result.fix[0] == "pip uninstall -y flashinfer-cubin"


def test_the_jit_cache_local_cuda_tag_is_not_a_mismatch() -> None:
    facts = facts_with(inventory=_inventory(("flashinfer-python", "0.6.16"), ("flashinfer-cubin", "0.6.16"),
                                            ("flashinfer-jit-cache", "0.6.16+cu130")))
    assert status_of(run(facts, only=("QD-PKG-002",)), "QD-PKG-002") == ["ok", "ok"]
    behind = facts_with(inventory=_inventory(("flashinfer-python", "0.7.3"), ("flashinfer-jit-cache", "0.7.2+cu130")))
    result = run(behind, only=("QD-PKG-002",))["QD-PKG-002"][0]
    assert result.status.value == "fail" and "flashinfer install-jit-cache-wheel" in result.fix[1]


def test_two_copies_of_one_distribution_in_one_site_packages_are_found() -> None:
    facts = facts_with(inventory=_inventory(("torch", "2.13.0", "/venv/site"), ("torch", "2.14.0", "/venv/site"),
                                            ("numpy", "2.2.6")))
    result = run(facts, only=("QD-PKG-003",))["QD-PKG-003"][0]
    assert result.status.value == "warn"
    assert "torch 2.13.0 and 2.14.0 in /venv/site" in result.summary
    assert result.fix == ["pip uninstall -y torch && pip uninstall -y torch && pip install 'torch==2.14.0'"]


def test_a_copy_in_another_path_entry_is_shadowing_not_a_broken_install() -> None:
    facts = facts_with(inventory=_inventory(("torch", "2.14.0", "/venv/site"), ("torch", "2.13.0", "/usr/lib/python3/dist-packages")))
    result = run(facts, only=("QD-PKG-003",))["QD-PKG-003"][0]
    assert result.status.value == "ok" and "one copy each" in result.summary


def test_a_dump_cannot_show_duplicates_so_the_check_skips(tmp_path: Path) -> None:
    result = run(_dump(tmp_path, "torch==2.15.0+cu132"), only=("QD-PKG-003",))["QD-PKG-003"][0]
    assert result.status.value == "skip" and "dump" in result.summary


def test_the_inventory_probe_reads_names_versions_and_duplicates_from_metadata_directories(tmp_path: Path) -> None:
    first, second = tmp_path / "venv", tmp_path / "user"
    for where, dirname in ((first, "flashinfer_python-0.7.3.dist-info"), (first, "torch-2.14.0.dist-info"),
                           (second, "torch-2.13.0.dist-info"), (first, "legacy.egg-info")):
        (where / dirname).mkdir(parents=True)
    (first / "legacy.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: Legacy\nVersion: 1.2\n")
    found = inventory.probe([str(first), str(second), str(first)])
    assert found["complete"] and found["source"] == "metadata"
    assert sorted((d["name"], d["version"]) for d in Facts({"inventory": found}).inventory) == [
        ("flashinfer-python", "0.7.3"), ("legacy", "1.2"), ("torch", "2.13.0"), ("torch", "2.14.0")]


def test_an_inventory_past_its_deadline_says_it_is_incomplete(tmp_path: Path) -> None:
    assert inventory.probe([str(tmp_path)], deadline_s=-1)["complete"] is False


def test_an_egg_info_directory_name_drops_its_python_tag() -> None:
    assert packages.split_metadata_dir("foo_bar-1.0-py3.12.egg-info") == ("foo_bar", "1.0")
    assert packages.split_metadata_dir("foo.egg-info") == ("foo", None)


def test_the_cuda_13_set_torch_installs_is_one_major_although_its_library_versions_differ() -> None:
    """torch 2.11.0+cu130 as installed on the H200 rehearsal machine: cuFFT 12, cuRAND 10 and cuFile 1 are CUDA 13
    libraries with versions of their own (a warning there would tell the user to uninstall torch's own wheels)."""
    h200 = (("nvidia-cutlass-dsl-libs-cu13", "4.6.0"), ("cuda-toolkit", "13.0.2"), ("nvidia-cublas", "13.1.0.3"),
            ("nvidia-cuda-cupti", "13.0.85"), ("nvidia-cuda-nvrtc", "13.0.88"), ("nvidia-cuda-runtime", "13.0.96"),
            ("nvidia-cudnn-cu13", "9.19.0.56"), ("nvidia-cusparselt-cu13", "0.8.0"), ("nvidia-nccl-cu13", "2.28.9"),
            ("nvidia-nvjitlink", "13.0.88"), ("nvidia-nvshmem-cu13", "3.4.5"), ("nvidia-nvtx", "13.0.85"),
            ("nvidia-cufft", "12.0.0.61"), ("nvidia-cusolver", "12.0.4.66"), ("nvidia-cusparse", "12.6.3.3"),
            ("nvidia-cufile", "1.15.1.6"), ("nvidia-curand", "10.4.0.35"))
    result = run(facts_with(inventory=_inventory(*h200)), only=("QD-PKG-001",))["QD-PKG-001"][0]
    assert result.status.value == "ok" and "all CUDA 13" in result.summary
