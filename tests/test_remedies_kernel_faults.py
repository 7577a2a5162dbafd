"""A kernel the engine dispatched fails behind a generic entry: the engine's bug is named, not memory advice.

Capture failures: SGLang's `Capture cuda graph failed: {e}` with `e` continued over indented lines, in the
wordings of the kernel libraries' own architecture checks (FlashInfer csrc/trtllm_gemm_runner.cu, CUTLASS's
cutlassGetStatusString, vLLM's CUTLASS arch guards). FLA faults: the Gated-DeltaNet chunk kernels' paths in vLLM
(model_executor/layers/fla/ops, third_party/flash_linear_attention/ops) and SGLang (srt/layers/attention/fla,
kernels/ops/attention/fla), a crashed launch in the wordings of torch, Triton and the driver API, and the
out-of-memory raised after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain
from remedies.kernelfault import arch_mismatch, continued

CAPTURE = "QD-R-SGLANG-CUDA-GRAPH-CAPTURE"
FRAMES = (
    "[2026-03-02 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 390, in __init__\n'
    "    raise Exception(\n"
)
TRAILER = ("Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
           "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose\n")
INNER_MISMATCHES = [
    ["Error in function 'TrtllmGenGemmRunner' at /workspace/csrc/trtllm_gemm_runner.cu:176:",
     "The trtllm-gen GEMM cubin manifest contains no kernels runnable on sm103;",
     "this backend currently ships cubins for sm100, sm107."],
    ["Error in function 'checkPassingConfigIndex' at csrc/trtllm_gemm_runner.cu:190:",
     "Tactic 12 is not in this runner's compatible config set",
     "(device architecture or GEMM options mismatch)"],
    ["RuntimeError: CUTLASS error:", "Error Arch Mismatch"],
    ["RuntimeError: kernel gemm_Bfloat16_E4m3E4m3_Fp32_t128x16x128u2_s6_et64x16_m64x16x32_c1x1x1_rM_TN_transOut_",
     "noShfl_dsFp8_schedS_sm100a failed to launch on this device (sm_103):", "invalid device function"],
]
INDENTS = ["    ", "\t", "        "]


def findings(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain.explain_sources([log])


def capture_log(inner: list[str], indent: str, trailer: bool = True) -> str:
    first, *rest = inner
    body = f"Exception: Capture cuda graph failed: {first}\n" + "".join(f"{indent}{part}\n" for part in rest)
    return FRAMES + body + (TRAILER if trailer else "")


CASES = [(i, indent, trailer) for i in range(len(INNER_MISMATCHES)) for indent in INDENTS for trailer in (True, False)]


@pytest.mark.parametrize(("inner", "indent", "trailer"), CASES)
def test_a_capture_wrapping_an_arch_mismatch_names_the_engine_bug_first(tmp_path, inner, indent, trailer):
    found = findings(tmp_path, capture_log(INNER_MISMATCHES[inner], indent, trailer))
    first = found[0]
    assert first.remedy.id == CAPTURE
    assert first.engine_bug is not None and first.engine_bug.engine == "sglang"
    assert not any("--mem-fraction-static" in step.text for step in first.fix)
    assert INNER_MISMATCHES[inner][-1].strip() in first.engine_bug.why


@pytest.mark.parametrize("inner", [
    ["CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"],
    ["[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer"],
    ["Could not run 'sgl_kernel::rmsnorm' with arguments from the 'CUDA' backend."],
])
def test_a_capture_that_ran_out_of_memory_keeps_the_capture_advice(tmp_path, inner):
    first = findings(tmp_path, capture_log(inner, "    "))[0]
    assert first.remedy.id == CAPTURE and first.engine_bug is None
    assert any("--mem-fraction-static" in step.text for step in first.fix or first.remedy.fix)


def test_continuation_stops_at_frames_records_and_the_engines_advice():
    lines = ["Exception: Capture cuda graph failed: first", "    second", '  File "x.py", line 1, in f',
             "    third"]
    assert continued(lines, lines[0]) == "Exception: Capture cuda graph failed: first second"
    assert continued(["a: b", "    c", "Possible solutions:", "    d"], "a: b") == "a: b c"


@pytest.mark.parametrize(("text", "mismatch"), [
    ("kernels built for sm100a cannot run on sm_120", True),
    ("GPU sm_90 ran out of memory", False),
    ("compute capability 10.3 (sm103) is used", False),
    ("no kernel image is available for execution on the device", True),
])
def test_arch_mismatch_needs_two_arches_and_a_kernel_or_the_checks_own_words(text, mismatch):
    assert arch_mismatch(text) is mismatch


FLA_PATHS = [
    ("vllm", "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/fla/ops/chunk_delta_h.py"),
    ("vllm", "/opt/venv/lib/python3.12/site-packages/vllm/third_party/flash_linear_attention/ops/chunk_delta_h.py"),
    ("sglang", "/sgl-workspace/sglang/python/sglang/srt/layers/attention/fla/chunk_delta_h.py"),
    ("sglang", "/usr/local/lib/python3.12/dist-packages/sglang/kernels/ops/attention/fla/chunk_delta_h.py"),
]
LAUNCH_FAILURES = [
    "RuntimeError: Triton Error [CUDA]: unspecified launch failure",
    "torch.AcceleratorError: CUDA error: unspecified launch failure",
    "RuntimeError: CUDA driver error: CUDA_ERROR_LAUNCH_FAILED",
]


def fla_log(path: str, failure: str | None, engine: str) -> str:
    record = "(EngineCore_DP0 pid=312) ERROR 11-02 10:00:01 [core.py:700] " if engine == "vllm" else "[2026-03-02 10:00:01 TP0] "
    lines = [
        f"{record}Traceback (most recent call last):",
        f'{record}  File "{path}", line 270, in chunk_gated_delta_rule_fwd_h',
        f"{record}    h = k.new_empty(B, NT, H, K, V)",
        f"{record}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
        "capacity of 31.36 GiB of which 1.02 GiB is free.",
    ]
    if failure:
        lines.insert(0, f"{record}{failure}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("engine", "path"), FLA_PATHS)
@pytest.mark.parametrize("failure", LAUNCH_FAILURES)
def test_an_oom_after_an_fla_kernel_crashed_is_the_kernels_bug(tmp_path, engine, path, failure):
    first = findings(tmp_path, fla_log(path, failure, engine))[0]
    assert first.engine_bug is not None and first.engine_bug.engine == engine
    assert "chunk_gated_delta_rule_fwd_h" in first.engine_bug.raised_at
    assert not any("gpu-memory-utilization" in step.text or "mem-fraction" in step.text for step in first.fix)


@pytest.mark.parametrize(("engine", "path"), FLA_PATHS)
def test_an_fla_oom_without_a_crashed_launch_stays_an_out_of_memory(tmp_path, engine, path):
    """The FLA autotuner on a 32 GB card can simply be short of memory: the sizing advice stands."""
    first = findings(tmp_path, fla_log(path, None, engine))[0]
    assert first.engine_bug is None
    assert first.remedy.id in ("QD-R-TORCH-CUDA-OOM", "QD-R-CUDA-DEVICE-OOM")


SPEC_FLAGS = ['--speculative-config \'{"method":"mtp","num_speculative_tokens":2}\'',
              "--speculative-algorithm NEXTN --speculative-num-steps 3", "with EAGLE3 drafting on"]
ASSERT_LINES = [
    '/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [12,0,0], thread: [64,0,0] Assertion '
    '`-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.\n'
    "RuntimeError: CUDA error: device-side assert triggered",
    "torch.AcceleratorError: CUDA error: device-side assert triggered",
]


@pytest.mark.parametrize("flag", SPEC_FLAGS)
@pytest.mark.parametrize("lines", ASSERT_LINES)
def test_a_device_assert_under_speculative_decoding_is_the_engines_bug(tmp_path, flag, lines):
    first = findings(tmp_path, f"After hours of traffic with {flag} vLLM dies:\n```\n{lines}\n```\n")[0]
    assert first.remedy.id == "QD-R-CUDA-DEVICE-ASSERT"
    assert first.engine_bug is not None and "index assert" in first.engine_bug.why


def test_a_device_assert_without_speculative_decoding_keeps_the_entry_alone(tmp_path):
    first = findings(tmp_path, f"vLLM dies:\n```\n{ASSERT_LINES[1]}\n```\n")[0]
    assert first.remedy.id == "QD-R-CUDA-DEVICE-ASSERT" and first.engine_bug is None
