"""Version knowledge that stays current: torch 2.15's CUDA 13.2 build, SGLang's sglang-kernel rename."""

from __future__ import annotations

from pathlib import Path

from doctor.facts.model import Facts
from tests.conftest import facts_with, run

CU132_ON_H100 = """PyTorch version              : 2.15.0+cu132
Is debug build               : False
CUDA used to build PyTorch   : 13.2
Is CUDA available            : True
GPU models and configuration : GPU 0: NVIDIA H100 80GB HBM3
Nvidia driver version        : 595.58.03
[pip3] torch==2.15.0+cu132
"""


def test_a_collect_env_dump_with_torch_2_15_cu132_on_an_h100_judges_the_arch_check(tmp_path: Path) -> None:
    path = tmp_path / "env.txt"
    path.write_text(CU132_ON_H100, encoding="utf-8")
    result = run(Facts.load(path), only=("QD-GPU-004",))["QD-GPU-004"][0]
    assert result.status.value == "ok", result.summary
    assert "sm_90" in result.evidence["arch_list"]


def _kernel_fix(sglang: str, kernel: str, dist: str) -> str:
    facts = facts_with(packages={"sglang": sglang, "sgl-kernel": {"version": kernel, "distribution": dist}})
    return run(facts, backend="sglang", only=("QD-VER-006",))["QD-VER-006"][0].fix[0]


def test_qd_ver_006_names_sglang_kernel_from_sglang_0_5_10() -> None:
    assert _kernel_fix("0.5.23", "0.4.9", "sglang-kernel") == "pip install 'sglang-kernel==0.4.10'"
    assert _kernel_fix("0.5.10", "0.4.0", "sglang-kernel") == "pip install 'sglang-kernel==0.4.1'"


def test_qd_ver_006_keeps_sgl_kernel_before_0_5_10_and_replaces_the_old_distribution_after() -> None:
    assert _kernel_fix("0.5.9", "0.3.20", "sgl-kernel") == "pip install 'sgl-kernel==0.3.21'"
    assert _kernel_fix("0.5.23", "0.3.21", "sgl-kernel") == \
        "pip uninstall -y sgl-kernel && pip install 'sglang-kernel==0.4.10'"


def test_torch_2_15_is_known_as_a_cuda_13_2_build_and_vllm_0_34_pins_torch_2_14() -> None:
    from doctor.knowledge import load_yaml, parse_version, version_matrix

    builds = {b["torch"]: b for b in load_yaml("doctor.data", "torch_arch.yaml")["builds"]}
    assert builds["2.15.0"]["cuda"] == "13.2" and builds["2.15.0"]["nccl"] == "2.30.7"
    assert version_matrix().pins("vllm", parse_version("0.34.0")).torch == "2.14.0"
