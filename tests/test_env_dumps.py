"""`check --from` on the environment dumps users paste into issues (vLLM collect_env, SGLang check_env).

Every real dump in tests/fixtures/env-dumps is replayed against the verdicts its manifest records; the parser's
reading of each format is pinned on those dumps too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from doctor.errors import BadBundle
from doctor.facts import envdump
from doctor.facts.model import Facts
from tests.conftest import run
from tests.test_cli_check import qd

DUMPS = Path(__file__).parent / "fixtures" / "env-dumps"
MANIFEST = yaml.safe_load((DUMPS / "manifest.yaml").read_text(encoding="utf-8"))
CASES = MANIFEST["cases"]


def dump(name: str) -> Facts:
    return Facts.load(DUMPS / name)


def expected(case: dict) -> dict[str, list[str]]:
    common = MANIFEST["common"]
    merged = {**common["always"], **(common["with_gpus"] if case["gpus"] else {}), **case["expect"]}
    return {cid: [want] if isinstance(want, str) else want for cid, want in merged.items()}


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_every_real_dump_gets_the_verdicts_its_thread_shows(case):
    facts = dump(case["file"])
    results = run(facts, backend=facts.origin["backend"])
    assert not [r for rs in results.values() for r in rs if r.status.value == "error"]
    for cid, want in expected(case).items():
        got = [r.status.value for r in results[cid]]
        assert got and all(s in want for s in got), f"{cid}: wants {want}, got {got}: {results[cid][0].summary}"


def test_the_manifest_holds_every_dump_once_with_its_thread():
    files = [c["file"] for c in CASES]
    assert sorted(files) == sorted(p.name for p in DUMPS.glob("*.txt"))
    assert len(set(files)) == len(files)
    for case in CASES:
        assert re.fullmatch(r"https://github\.com/(vllm-project/vllm|sgl-project/sglang)/(issues|pull)/\d+",
                            case["source"]), case["source"]
        assert case["cause"] and case["expect"]
    assert sum(not c["file"].startswith("healthy-") for c in CASES) >= 15


def test_sectioned_vllm_dump_gives_gpu_driver_and_torch_build():
    facts = dump("vllm-31700-h100-driver-550-torch-cu128.txt")
    assert facts.origin["format"] == envdump.VLLM and facts.origin["backend"] == "vllm"
    assert [(g["name"], g["compute_capability"]) for g in facts.gpus] == [("NVIDIA H100 PCIe", "9.0")]
    assert facts.nvml["driver_version"] == "550.144.03"
    assert facts.package("torch")["cuda"] == "12.8"
    assert facts.data["torch_runtime"]["cuda_available"] is True
    assert not facts.knows("gpu.processes") and not facts.knows("host") and not facts.knows("packages.vllm")


def test_old_vllm_layout_lists_every_gpu_and_the_mig_slice_under_its_gpu():
    assert len(dump("healthy-vllm-12765-8x-rtx4090.txt").gpus) == 8
    (h100,) = dump("vllm-10142-h100-mig-slice.txt").gpus
    assert h100["mig"]["current"] is True and h100["compute_capability"] == "9.0"
    no_mig = dump("healthy-vllm-3842-a100-4x.txt")
    assert no_mig.knows("gpu.mig") and not any(g["mig"]["current"] for g in no_mig.gpus)


def test_no_cuda_means_no_driver_and_a_cpu_torch_is_recorded_as_such():
    facts = dump("vllm-6655-torch-cpu-build.txt")
    assert not facts.nvml_available and "No CUDA" in facts.nvml["error"]
    assert facts.knows("torch.cuda") and facts.package("torch")["cuda"] is None


def test_torch_warnings_name_the_gpu_its_arch_list_and_the_drivers_cuda():
    blackwell = dump("vllm-19605-rtx5070ti-torch-cu126.txt")
    assert [(g["name"], g["compute_capability"]) for g in blackwell.gpus] == [("NVIDIA GeForce RTX 5070 Ti", "12.0")]
    assert blackwell.data["torch_runtime"]["arch_list"][-1] == "sm_90"
    old_driver = dump("vllm-11623-driver-cuda-11.4-torch-cu121.txt")
    assert old_driver.nvml["cuda_driver_version"] == "11.4" and old_driver.nvml["driver_version"] is None
    assert "too old (found version 11040)" in old_driver.data["torch_runtime"]["error"]
    assert not old_driver.knows("gpus")


def test_sglang_check_env_lines_and_a_paste_flattened_onto_one_line_read_alike():
    lines = dump("sglang-14327-gb300-cu130-wheels.txt")
    assert lines.origin["format"] == envdump.SGLANG and lines.origin["engine_version"] == "0.5.5.post3"
    assert [g["compute_capability"] for g in lines.gpus] == ["10.3"] * 4
    assert lines.package_version("sgl-kernel") == "0.3.18.post2" and lines.package("vllm") is None
    assert lines.knows("packages.vllm") and not lines.knows("packages.ray")
    flat = dump("sglang-13198-gb10-torch-2.9.1.txt")
    assert [(g["name"], g["compute_capability"]) for g in flat.gpus] == [("NVIDIA GB10", "12.1")]
    assert flat.nvml["driver_version"] == "580.95.05" and flat.package("torch")["cuda"] == "13.0"
    assert {k: flat.package_version(k) for k in ("sglang", "sgl-kernel", "flashinfer", "transformers")} == {
        "sglang": "0.5.5.post1", "sgl-kernel": "0.3.17", "flashinfer": "0.5.0", "transformers": "4.57.1"}


def test_a_torch_without_cuda_tag_is_a_cuda_build_of_unknown_version_in_check_env():
    orin = dump("sglang-6843-orin-torch-2.7-sgl-kernel.txt")
    assert orin.package("torch")["cuda_build"] is True and not orin.knows("torch.cuda")
    assert run(orin, only=("QD-VER-005",))["QD-VER-005"][0].status.value == "ok"
    assert run(orin, only=("QD-DRV-002",))["QD-DRV-002"][0].status.value == "skip"


def test_topology_matrix_gives_nvlink_pairs_and_pcie_levels_and_ignores_nics():
    a100 = dump("healthy-sglang-pr965-a100-8x-nvlink.txt")
    assert a100.topology_pair(0, 7)["p2p"] == {"read": None, "nvlink": "ok"}
    assert a100.topology_pair(2, 3) is None   # the paste stops after GPU1's row
    t4 = dump("sglang-1325-t4-bf16.txt").topology_pair(0, 1)
    assert t4["common_ancestor"] == "HOSTBRIDGE" and t4["p2p"]["nvlink"] == "not_supported"


def test_pip_list_vllm_version_and_topology_with_nic_rows():
    # Verbatim excerpts of real dumps: vllm#25848 (pip list) and vllm#19607 (vLLM section); each is a fragment
    # without the 'PyTorch version' header, so the vLLM reader is fed directly.
    pip = """[pip3] flashinfer-python==0.3.1.post1
[pip3] nvidia-nccl-cu12==2.27.3
[pip3] torch==2.8.0+cu128
[pip3] transformers==4.57.0.dev0
[pip3] triton==3.4.0
[conda] Could not collect"""
    vllm = """vLLM Version                 : 0.8.5.post1
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled; Neuron: Disabled
GPU Topology:
        GPU0    GPU1    NIC0    NIC1    NIC2    NIC3    NIC4    NIC5    NIC6    NIC7    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV12    SYS     SYS     SYS     SYS     SYS     SYS     PXB     PXB                             N/A
GPU1    NV12     X      SYS     SYS     SYS     SYS     SYS     SYS     PXB     PXB                             N/A
NIC0    SYS     SYS      X      PIX     SYS     SYS     SYS     SYS     SYS     SYS"""
    found = envdump._Dump(envdump.VLLM)
    envdump._read_vllm((pip + "\n" + vllm).split("\n"), found)
    assert {k: v["version"] for k, v in found.packages.items()} == {
        "flashinfer": "0.3.1.post1", "nccl": "2.27.3", "torch": "2.8.0+cu128", "transformers": "4.57.0.dev0",
        "triton": "3.4.0", "vllm": "0.8.5.post1"}
    assert found.engine_version == "0.8.5.post1"
    assert [(p["a"], p["b"], p["p2p"]["nvlink"]) for p in found.topology] == [(0, 1, "ok")]


def test_environment_section_sets_the_visible_gpus_and_redacts_secrets():
    # Laid out as vllm/collect_env.py's env_info_fmt prints its last section (v0.9 and later).
    section = ["==============================", "     Environment Variables", "==============================",
               "CUDA_VISIBLE_DEVICES=1", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789", ""]
    found = envdump._Dump(envdump.VLLM)
    envdump._read_env_section(section, found)
    assert found.env_known and found.env["CUDA_VISIBLE_DEVICES"] == "1"
    assert "hf_abcdefghij" not in found.env["HF_TOKEN"]


@pytest.mark.parametrize("text, message", [
    ("hello world\n", "neither a qwen-doctor facts bundle (JSON) nor a vLLM collect_env / SGLang check_env dump"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: boom\n", "nor a vLLM collect_env"),
    ("", "nor a vLLM collect_env"),
])
def test_unrelated_text_is_one_line_and_exit_2(tmp_path, text, message):
    path = tmp_path / "env.txt"
    path.write_text(text)
    with pytest.raises(BadBundle) as info:
        Facts.load(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unrelated_text_exits_2_with_one_line_on_stderr(tmp_path):
    path = tmp_path / "env.txt"
    path.write_text("hello world\n")
    result = qd("check", "--from", str(path))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "nor a vLLM collect_env / SGLang check_env dump" in result.stderr


def test_check_from_a_dump_checks_its_engine_and_exits_1_on_the_fault():
    result = qd("check", "--from", str(DUMPS / "sglang-8373-rtx5080-torch-nightly-sgl-kernel.txt"), "--only", "QD-VER")
    assert result.returncode == 1
    assert "check --backend sglang" in result.stdout and "SGLang check_env dump" in result.stdout
    assert "torch 2.9.0.dev20250722+cu128 installed, sglang 0.4.9.post2 is built for torch==2.7.1" in result.stdout
    assert "sgl-kernel 0.1.2.post1 is older than sglang 0.4.9.post2's pin 0.2.5" in result.stdout
    healthy = qd("check", "--from", str(DUMPS / "healthy-vllm-3842-a100-4x.txt"),
                 "--only", "QD-DRV", "--only", "QD-GPU")
    assert healthy.returncode == 0, healthy.stdout


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_a_dump_cut_anywhere_reads_or_is_refused_in_one_line_and_no_check_crashes(case, tmp_path):
    lines = (DUMPS / case["file"]).read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "cut.txt"
    for cut in range(1, len(lines), max(1, len(lines) // 6)):
        path.write_text("".join(lines[:cut]), encoding="utf-8")
        try:
            facts = Facts.load(path)
        except BadBundle as exc:
            assert "\n" not in str(exc)
            continue
        results = run(facts, backend=facts.origin["backend"])
        assert not [r.summary for rs in results.values() for r in rs if r.status.value == "error"], cut


def test_a_rocm_torch_in_a_dump_is_recorded_as_such():
    # The PyTorch section of a real ROCm dump (vllm#44641), verbatim.
    section = """PyTorch version              : 2.10.0+git8514f05
Is debug build               : False
CUDA used to build PyTorch   : N/A
ROCM used to build PyTorch   : 7.2.53211
XPU used to build PyTorch    : N/A"""
    found = envdump._Dump(envdump.VLLM)
    envdump._read_vllm(section.split("\n"), found)
    assert found.packages["torch"]["hip"] == "7.2.53211" and found.packages["torch"]["cuda"] is None


def verdict(name: str, check_id: str) -> list[str]:
    facts = dump(name)
    return [r.status.value for r in run(facts, backend=facts.origin["backend"])[check_id]]


def test_a_dump_cut_before_its_driver_lines_skips_the_driver_check_but_no_cuda_still_fails():
    # vllm#21310 stops in the Python section; vllm#4858 prints "No CUDA" where the driver goes.
    assert not dump("vllm-21310-rhel-cut-at-python.txt").knows("nvml")
    assert verdict("vllm-21310-rhel-cut-at-python.txt", "QD-DRV-001") == ["skip"]
    assert verdict("vllm-4858-no-cuda-gpu.txt", "QD-DRV-001") == ["fail"]


def test_a_package_list_alone_and_a_check_env_cut_inside_python_are_read_not_refused():
    pips = dump("vllm-21689-pip-list-only.txt")
    assert pips.origin["format"] == envdump.VLLM and pips.package_version("torch") == "2.7.0"
    assert not pips.knows("packages.vllm") and not pips.knows("nvml")
    assert dump("sglang-4248-cut-at-python.txt").origin["format"] == envdump.SGLANG


def test_a_gpu_whose_name_gives_no_capability_is_skipped_not_failed_as_too_old():
    # "NVIDIA vGPU-32GB" (vllm#15513) names no architecture; a T4 (sglang#1325) is known to be 7.5.
    assert verdict("vllm-15513-vgpu-32gb.txt", "QD-GPU-002") == ["skip"]
    assert verdict("vllm-15513-vgpu-32gb.txt", "QD-GPU-004") == ["skip"]
    assert verdict("sglang-1325-t4-bf16.txt", "QD-GPU-002") == ["fail"]


@pytest.mark.parametrize("name", ["healthy-vllm-12378-a100-40gb.txt", "sglang-2805-a40-0.4.0.txt"])
def test_a_dump_quoted_in_a_reply_reads_as_the_dump_itself(name, tmp_path):
    text = (DUMPS / name).read_text(encoding="utf-8")
    path = tmp_path / "quoted.txt"
    path.write_text("".join(f"> {line}" for line in text.splitlines(keepends=True)), encoding="utf-8")
    quoted, plain = Facts.load(path), dump(name)
    assert quoted.origin["format"] == plain.origin["format"] and quoted.gpus == plain.gpus
    assert quoted.packages == plain.packages and quoted.nvml == plain.nvml


@pytest.mark.parametrize("codec", ["utf-16", "utf-8-sig"])
def test_a_dump_or_bundle_saved_by_powershell_reads_as_the_same_facts(tmp_path: Path, codec: str):
    """`python collect_env.py > env.txt` in PowerShell 5.1 writes UTF-16 LE with a BOM; Notepad saves UTF-8 with one."""
    dump = DUMPS / "healthy-vllm-13497-rtx4090.txt"
    bundle = Path(__file__).parent / "fixtures" / "h200.json"
    for original in (dump, bundle):
        saved = tmp_path / f"{codec}-{original.name}"
        saved.write_bytes(original.read_text(encoding="utf-8").encode(codec))
        read, expected = Facts.load(saved).data, Facts.load(original).data
        for facts in (read, expected):
            facts.get("origin", {}).pop("source", None)  # the file's own name
        assert read == expected
