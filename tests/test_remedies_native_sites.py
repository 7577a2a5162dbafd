"""A root exception that a native component builds (C / C++ / CUDA) names the source function that raises it.

Inputs are written from the sources remedies/native_sites.yaml cites: torch's C10_CUDA_CHECK
(c10/cuda/CUDAException.cpp: "CUDA error: " + cudaGetErrorString), its device count check
(c10/cuda/CUDAFunctions.cpp: "No CUDA GPUs are available"), vLLM's CUTLASS_CHECK (csrc/cutlass_extensions/common.hpp,
cutlassGetStatusString's "Error Internal") and libnvidia-container's xdlopen (src/xfuncs.h: "load library failed").
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remedies import explain
from remedies.nativesites import load_sites, native_sites, read_sites


def explained(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text)
    return explain.explain_sources([log])


def test_every_native_site_names_its_repository_function_and_source():
    sites = load_sites()
    assert sites
    for site in sites:
        assert "::" in site.site and re.fullmatch(r"[\w.-]+/[\w.-]+", site.repository)
        cited = [part.strip() for part in site.source.split(";")]
        assert all(re.match(r"[\w.-]+/[\w.-]+ [\w./-]+\.(?:h|hpp|cc|cpp|c|cu|cuh)\b", part) for part in cited)
        assert cited[0].startswith(f"{site.repository} {site.site.split('::')[0]}")


def test_a_sites_file_is_read_in_order(tmp_path):
    data = tmp_path / "sites.yaml"
    data.write_text("sites:\n"
                    "  - {component: a, match: 'first', repository: o/r, site: 'x.cc::f', source: o/r x.cc}\n"
                    "  - {component: b, match: 'second', repository: o/r, site: 'y.cc::g', condition: 'n == 0',"
                    " source: o/r y.cc}\n")
    first, second = read_sites(data)
    assert first.cited() == "x.cc::f (o/r)"
    assert second.cited() == "y.cc::g (o/r) when `n == 0`"


@pytest.mark.parametrize("line, site", [
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "c10/cuda/CUDAException.cpp"),
    ("torch.AcceleratorError: CUDA error: unspecified launch failure", "c10/cuda/CUDAException.cpp"),
    ("RuntimeError: No CUDA GPUs are available", "c10/cuda/CUDAFunctions.cpp::device_count_ensure_non_zero"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "CUDACachingAllocator.cpp"),
    ("RuntimeError: Error Internal", "csrc/cutlass_extensions/common.hpp::CUTLASS_CHECK"),
    ("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared "
     "object file: no such file or directory", "src/xfuncs.h::xdlopen"),
    ("nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown",
     "src/driver.c::driver_init_1_svc"),
    ("kernel: NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error",
     "kernel_rc.c::krcReportXid_IMPL"),
])
def test_native_messages_are_placed_in_the_function_that_builds_them(line, site):
    assert any(site in cited for cited in native_sites(line))


@pytest.mark.parametrize("line", [
    "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).",
    "Failed to initialize NVML: Driver/library version mismatch",
    "The CUDA error handling in this blog post is about a different error",
])
def test_other_messages_get_no_native_site(line):
    assert native_sites(line) == ()


def test_a_cuda_error_printed_without_a_traceback_names_torchs_check_as_its_raise_site(tmp_path):
    (finding, *_) = explained(tmp_path, "The server died during the first request:\n"
                                        "RuntimeError: CUDA error: unspecified launch failure\n")
    assert finding.root is not None and finding.root.native and finding.root.frame is None
    assert "c10_cuda_check_implementation" in finding.root.cited[0]
    assert "its native sources place the raise in c10/cuda/CUDAException.cpp" in finding.why


def test_an_entry_on_the_container_librarys_load_failure_names_its_dlopen(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "docker: Error response from daemon: failed to create task for container: nvidia-container-cli: "
        "initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such "
        "file or directory: unknown.\n"))
    assert finding.remedy.id == "QD-R-CUDA-CONTAINER-NVML-LOAD"
    assert finding.root is not None and finding.root.native
    assert any("src/xfuncs.h::xdlopen" in cited for cited in finding.root.cited)


def test_a_cutlass_status_engine_bug_keeps_the_named_function_and_adds_the_check_that_raised_it(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "On B200 vLLM fails in the profile run: `cutlass_scaled_mm_blockwise_sm100_fp8` raises "
        "`RuntimeError: Error Internal` for the block-FP8 checkpoint.\n"))
    assert finding.engine_bug is not None
    assert "cutlass_scaled_mm_blockwise_sm100_fp8" in finding.engine_bug.raised_at
    assert "csrc/cutlass_extensions/common.hpp::CUTLASS_CHECK" in finding.engine_bug.raised_at


def test_a_traceback_frame_is_kept_over_the_native_site(tmp_path):
    (finding, *_) = explained(tmp_path, (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2200, in execute_model\n'
        "    torch.cuda.synchronize()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"))
    root = finding.root
    assert root is not None and root.frame is not None and not root.native and not root.cited
