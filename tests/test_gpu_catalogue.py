"""The one GPU catalogue (doctor/data/gpus.yaml): the planner's named GPUs and the product-name patterns agree."""

from __future__ import annotations

import yaml
from importlib import resources

import pytest

from doctor.knowledge import capability_of
from doctor.planner.hardware import GIB, get_gpu, gpu_from_facts


def _entries() -> dict:
    return yaml.safe_load(resources.files("doctor.data").joinpath("gpus.yaml").read_text(encoding="utf-8"))["gpus"]


@pytest.mark.parametrize("name", sorted(_entries()))
def test_every_named_gpu_is_recognised_by_the_patterns_with_its_own_compute_capability(name):
    entry = _entries()[name]
    found = {capability_of(n) for n in [name, *entry.get("aliases", [])]} - {None}
    assert found == {entry["compute_capability"]}


def test_the_rtx_5090_total_is_the_native_one_and_wsl2_has_its_own_entry():
    # native Linux cudaMemGetInfo total 31.36 GiB; WSL2 reports NVML's full 32,607 MiB
    assert round(get_gpu("RTX5090").usable_bytes / GIB, 2) == 31.36
    assert round(get_gpu("RTX5090-WSL").usable_bytes / GIB, 2) == round(32607 / 1024, 2) == 31.84
    assert get_gpu("5090-WSL").compute_capability == get_gpu("5090").compute_capability == "12.0"


def test_a_facts_name_finds_its_catalogue_entry():
    assert gpu_from_facts("NVIDIA GeForce RTX 5090", 32607 << 20, "12.0") == get_gpu("RTX5090")
    assert gpu_from_facts("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 0, None).torch_bytes > 0
