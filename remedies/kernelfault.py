"""Kernel faults behind a generic entry: the engine's bug, read from the whole message and the kernel it names.

Two shapes in which a kernel the engine dispatched fails and a generic entry (graph capture, out of memory) is
all the line says:

- **A capture failure wrapping a kernel-dispatch error.** SGLang raises `Exception(f"Capture cuda graph failed:
  {e}\\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")` (sglang/srt/model_executor/cuda_graph_runner.py, later
  runner/decode_cuda_graph_runner.py and speculative/eagle_draft*_cuda_graph_runner.py); the inner error `e`
  often spans lines (FlashInfer's `Error in function '{}' at {}:{}: {}` with the message of its check,
  include/flashinfer/exception.h), and a paste indents the continuation. `continued` joins them; when the inner
  error shows a kernel built for another GPU architecture than the one it ran on (FlashInfer's trtllm-gen
  "cubin manifest contains no kernels runnable on sm{}" and "compatible config set (device architecture ...
  mismatch)", csrc/trtllm_gemm_runner.cu; CUTLASS's "Error Arch Mismatch"; a kernel's own "only supports smXXX";
  kernel names or arches for two different SMs), the engine dispatched a kernel this GPU cannot run: a bug beside
  the capture entry, whose memory and graph-size advice does not apply.
- **An FLA (Gated-DeltaNet) Triton kernel that crashed.** The hybrid models' linear-attention layers run the
  flash-linear-attention chunk kernels the engines vendor (vllm/model_executor/layers/fla/ops and
  vllm/third_party/flash_linear_attention/ops, sglang/srt/layers/attention/fla and sglang/kernels/ops/attention/
  fla: chunk_gated_delta_rule_fwd_h allocates `h = k.new_empty(B, NT, H, V, K)`). A launch that dies with
  "unspecified launch failure" leaves the CUDA context broken, and the out-of-memory raised at the next
  allocation inside those kernels is its consequence: the kernel's bug, first, instead of sizing advice. An FLA
  out-of-memory without a crashed launch stays an out-of-memory (the autotuner on a 32 GB card really is short).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from remedies.advisories import engine_release
from remedies.bugfeatures import MAX_FEATURE_LINES, features
from remedies.datalist import read_list
from remedies.enginebug import NamedBug, Verdict, engine_in
from remedies.loader import load_catalogue

WORDINGS = Path(__file__).with_name("kernel_wordings.yaml")


def wordings(key: str) -> re.Pattern[str]:
    """The kernel-failure wordings listed under `key` in kernel_wordings.yaml, as one case-insensitive pattern."""
    return re.compile("|".join(f"(?:{item['pattern']})" for item in read_list(WORDINGS, key)), re.I)


CAPTURE_ENTRIES = ("QD-R-SGLANG-CUDA-GRAPH-CAPTURE",)
OOM_ENTRIES = ("QD-R-TORCH-CUDA-OOM", "QD-R-CUDA-DEVICE-OOM")
MAX_CONTINUATION = 12
_CONTINUES = re.compile(r"^(?: {2,}|\t)[ \t]*(?!File \")\S")
_ENDS = re.compile(r"^\s*(?:Possible solutions|Open an issue on GitHub)")
_ARCH = re.compile(r"(?i)\bsm_?(?P<arch>\d{2,3})[af]?\b|compute capability[ :=(]{1,3}(?P<major>\d{1,2})[., ]{1,2}(?P<minor>\d)")
_MISMATCH = wordings("arch_mismatch")
_KERNEL_WORD = re.compile(r"(?i)\b(?:kernels?|cubins?|gemm|compiled|built|ships?)\b")
_FLA = re.compile(r"(?:^|[/\\])(?:fla|flash_linear_attention)[/\\](?:ops[/\\])?\w{1,60}\.py"
                  r"|\bchunk_gated_delta_rule\w{0,40}|\bchunk_fwd_(?:kernel_)?o\b|\bchunk_scaled_dot_kkt\w{0,20}"
                  r"|\bsolve_tril\b|\brecompute_w_u_fwd\b|\bfused_recurrent_gated_delta_rule\w{0,20}")
_LAUNCH_FAILURE = wordings("launch_failure")
_LAUNCH_WORDS = ("launch failure", "LaunchFailure", "LAUNCH_FAILED")
_SITE = re.compile(r"Error in function '(?P<func>[^'\n]{1,120})' at (?P<file>[^\s:]{1,300}):(?P<line>\d{1,7})")


def continued(lines: list[str], line: str) -> str:
    """`line` joined with the continuation lines that follow it in `lines` (indented, not traceback frames), up
    to the engine's own advice that ends its message."""
    at = next((i for i, text in enumerate(lines[:MAX_FEATURE_LINES]) if text.rstrip("\n") == line.rstrip("\n")),
              None)
    if at is None:
        return line
    parts = [line.strip()]
    for text in lines[at + 1:at + 1 + MAX_CONTINUATION]:
        if _ENDS.match(text) or not _CONTINUES.match(text):
            break
        parts.append(text.strip())
    return " ".join(parts)


def arch_mismatch(text: str) -> bool:
    """Whether an error names a kernel built for another GPU architecture than the one it ran on."""
    if _MISMATCH.search(text):
        return True
    arches = {hit.group("arch") or f"{hit.group('major')}{hit.group('minor')}" for hit in _ARCH.finditer(text)}
    return len(arches) >= 2 and bool(_KERNEL_WORD.search(text))


def kernel_fault(entry_id: str, line: str, read_lines: Callable[[], list[str]]) -> Verdict | None:
    """The engine bug behind a capture or out-of-memory entry (see the module doc), else None; the log's lines
    are read only for those entries."""
    if entry_id not in CAPTURE_ENTRIES and entry_id not in OOM_ENTRIES:
        return None
    entry = load_catalogue().get(entry_id)
    own_steps = len(entry.fix) if entry is not None else 0
    if entry_id in CAPTURE_ENTRIES:
        return _capture_fault(line, read_lines(), own_steps)
    return _fla_fault(read_lines(), own_steps)


def _capture_fault(line: str, lines: list[str], memory_steps: int) -> Verdict | None:
    """The bug first, the entry's memory and graph-size steps (`memory_steps` of them) dropped."""
    message = continued(lines, line)
    inner = message.split("Capture cuda graph failed:", 1)[-1].strip()
    if not arch_mismatch(inner):
        return None
    head = lines[:MAX_FEATURE_LINES]
    engine = engine_in(None, head) or "sglang"
    site = _SITE.search(inner)
    where = (f"{site.group('file')}:{site.group('line')} ({site.group('func')}), called during {engine}'s CUDA-graph "
             "capture" if site else f"{engine} CUDA-graph capture (the kernel the error names)")
    reason = (f"The capture failed because a kernel the engine dispatched was built for another GPU architecture "
              f"than this one ({inner[:300]}): the engine chose a kernel this GPU cannot run, which no memory or "
              "graph-size setting changes.")
    return Verdict(_named(engine, where, head, reason), "first", memory_steps)


def _fla_fault(lines: list[str], sizing_steps: int) -> Verdict | None:
    """The bug first, the entry's sizing steps (`sizing_steps` of them) dropped: they do not apply."""
    head = lines[:MAX_FEATURE_LINES]
    # the crashed launch first, by its words alone: most out-of-memory logs have none, and stop here cheaply
    if not any(word in text for text in head for word in _LAUNCH_WORDS) or not any(
            _LAUNCH_FAILURE.search(text[:4096]) for text in head):
        return None
    kernels = [hit.group(0) for text in head if "chunk" in text or "fla" in text or "solve_tril" in text
               or "recompute_w_u" in text for hit in _FLA.finditer(text[:4096])]
    kernel = kernels[-1] if kernels else None  # the deepest: a traceback names the kernel's function last
    if kernel is None:
        return None
    engine = engine_in(None, head) or "vllm"
    reason = (f"A flash-linear-attention (Gated-DeltaNet) Triton kernel ({kernel.strip('/')}) crashed with an "
              "unspecified launch failure; the out-of-memory that follows is raised in the broken CUDA context, "
              "so lowering memory settings does not fix it.")
    return Verdict(_named(engine, f"{engine} FLA chunk kernel {kernel.strip('/')}", head, reason), "first",
                   sizing_steps)


def _named(engine: str, where: str, head: list[str], reason: str) -> NamedBug:
    release = engine_release(head, engine) if engine in ("vllm", "sglang") else None
    return NamedBug(engine, where, release, (), None, None, reason=reason, features=features(head))
