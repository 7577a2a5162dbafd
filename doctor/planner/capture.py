"""The CUDA graphs vLLM captures for a configuration, per release: the default capture sizes and the graphs each
model runner captures from them (what profile_cudagraph_memory's estimate counts).

Read in the config/vllm.py `_set_cudagraph_sizes`, config/compilation.py and v1/worker/gpu/cudagraph_utils.py of
the 0.26.0-0.34.0 wheels:
- The ceiling: min(max_num_seqs x (1 + k) x 2, 512) tokens; from 0.28.0 1024 on a data-centre Blackwell GPU
  (`current_platform.is_device_capability_family(100)`), 512 elsewhere; then at most max_num_batched_tokens.
- Up to 0.28.0 the sizes are 1, 2, 4, multiples of 8 below 256 and of 16 from 256 up to the ceiling
  (capture_sizes, which also holds the V1 runner's rounding to multiples of 1 + k).
- From 0.29.0 (vllm-project/vllm#50488, capped by #54418 before the release), with k speculative tokens the
  uniform decode sizes are appended: n x (1 + k) for a request-count grid n of 1, 2, 4, multiples of 8 below 256,
  of 16 from 256, and max_num_seqs itself (at most the ceiling's number of requests), each within the ceiling
  and max_num_batched_tokens. Every release read (0.20.2-0.34.0) appends an off-stride max_num_batched_tokens
  that is within the ceiling. The V1 runner
  still rounds every size up to a multiple of 1 + k (`not use_v2_model_runner`, compilation.py); the V2 runner
  does not.
- V2 runner graphs (CudaGraphManager._init_candidates): one PIECEWISE graph per size and one FULL decode graph per
  distinct round_up(size, 1 + k) within max_num_seqs x (1 + k) requests' tokens and the largest size.
- V2 speculator graphs (speculator_graphs): DFlash's FULL decode graphs, or an autoregressive drafter's draft
  prefill graphs in the target's modes and, with k >= 2, its one-token draft decode graphs, in the same pool.
Between #50488 and #54418 (nightly builds only, never a release) the uniform decode sizes were not held to the
ceiling: max_num_seqs x (1 + k) tokens, 2,176 for DFlash's nightly CI, whose graphs left 0.94 GiB of KV cache where
5.12 GiB were needed (#54418); a boot of such a build logs several GiB of graphs that no release captures.
The window is a few days of main: #50488 merged as d3d79ff, the head of nightly build 86121 of 2026-08-29, whose
H200 spec-decode jobs broke (vllm-project/vllm#54352, the auto-revert draft: max_cudagraph_capture_size 512 at
21fa2c5a / 6d4562c5 before it, 768-6400 at d3d79ff); #54418 was opened on 2026-08-30. Main's nightlies of those
weeks carry an older base (0.26.1rc1.dev608+g99a10304d on 2026-08-15, recipes#810; 0.26.1rc1.dev1102+ge9d1398d9
on 2026-08-31, vllm#53520) and no release tag orders their commits, so a version string cannot place a build in the
window: such a build plans as the release its base names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from packaging.version import Version

MAX_CAPTURE_SIZE = 512
BLACKWELL_CAPTURE_SIZE = 1024      # default_max_graph_size on compute capability 10.x, from 0.28.0


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int = 0,
                  full_decode: bool = True) -> list[int]:
    """vLLM's default cudagraph_capture_sizes (config/vllm.py _set_cudagraph_sizes, 0.20.1-0.26.0). With
    speculative decoding and FULL decode graphs, config/compilation.py adjust_cudagraph_sizes_for_spec_decode
    rounds every size up to a multiple of q = 1 + k and drops those above the largest (a workaround for
    vllm-project/vllm#28207): "PIECEWISE=15 (largest=112), FULL=8 (largest=56)" for 6 DFlash tokens and 8
    sequences, "PIECEWISE=9 (largest=64), FULL=5 (largest=32)" for 3 MTP tokens (tests/data/published_kv/
    vllm-partial.yaml, vLLM 0.22.0). Without FULL decode graphs the sizes stay as they are ("PIECEWISE=6
    (largest=24)" for 2 MTP tokens and 5 sequences under FlashInfer on a GB10, vllm.yaml)."""
    top = min(max_num_seqs * (1 + spec_tokens) * 2, MAX_CAPTURE_SIZE, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8))
    sizes = sizes + list(range(256, top + 1, 16))
    if max_num_batched_tokens <= top and max_num_batched_tokens not in sizes:
        sizes.append(max_num_batched_tokens)   # "ensure max_num_tokens is captured" (read in 0.20.2-0.34.0)
    query = 1 + spec_tokens
    if not full_decode or query <= 1 or not sizes:
        return sizes
    rounded = sorted({-(-s // query) * query for s in sizes if -(-s // query) * query <= top})
    return rounded or ([query] if query <= top else [])


def graph_modes(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int = 0,
                full_decode: bool = True) -> int:
    """Capture modes holding at least one graph (PIECEWISE, and FULL when a decode batch fills a size): each
    mode's first capture is measured whole by profile_cudagraph_memory, the others by the increment."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, spec_tokens, full_decode)
    query = 1 + spec_tokens
    full = full_decode and any(query <= s <= query * max_num_seqs for s in sizes)
    return (1 if sizes else 0) + (1 if full else 0)


def graph_count(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int = 0,
                full_decode: bool = True) -> int:
    """Graphs FULL_AND_PIECEWISE captures: one PIECEWISE graph per capture size, one FULL graph per capture size
    a uniform decode batch fills, q <= size <= q x max_num_seqs with q = 1 + speculative tokens
    (vllm/v1/cudagraph_dispatcher.py initialize_cudagraph_keys), none where FULL decode graphs fell back
    (spec_full_decode). Logged: "PIECEWISE=51 (largest=512), FULL=35 (largest=256)" for 256 sequences
    (tests/data/published_kv/vllm.yaml, GB10 boots of vLLM 0.18.1). A drafter's graphs (EAGLE / MTP / DFlash)
    are captured inside each PIECEWISE capture into the same pool (gpu_model_runner.py _dummy_run:
    drafter.dummy_run with use_cudagraphs only while capturing PIECEWISE) and are not counted apart."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, spec_tokens, full_decode)
    query = 1 + spec_tokens
    full = sum(1 for s in sizes if query <= s <= query * max_num_seqs) if full_decode else 0
    return len(sizes) + full



@dataclass(frozen=True)
class CapturePlan:
    """The graphs one configuration captures: PIECEWISE and FULL counts (capture modes: those with a graph)."""

    piecewise: int
    full: int

    @property
    def graphs(self) -> int:
        return self.piecewise + self.full

    @property
    def modes(self) -> int:
        return (1 if self.piecewise else 0) + (1 if self.full else 0)


def _base(version: str) -> Version:
    return Version(Version(version).base_version)


def capture_ceiling(version: str, capability: tuple[int, int]) -> int:
    """The default capture ceiling in tokens before max_num_seqs and max_num_batched_tokens bound it."""
    if capability[0] == 10 and _base(version) >= Version("0.28.0"):
        return BLACKWELL_CAPTURE_SIZE
    return MAX_CAPTURE_SIZE


def request_counts(max_reqs: int, ceiling: int) -> list[int]:
    """The request-count grid the uniform decode sizes scale (config/vllm.py request_counts, 0.29.0-0.34.0)."""
    max_reqs = min(max_reqs, ceiling)
    counts = [n for n in (1, 2, 4) if n <= max_reqs]
    counts += list(range(8, min(max_reqs + 1, 256), 8)) + list(range(256, max_reqs + 1, 16))
    return sorted(set(counts + [max_reqs]))


def default_sizes(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int, version: str,
                  capability: tuple[int, int]) -> list[int]:
    """cudagraph_capture_sizes as `_set_cudagraph_sizes` leaves them (before the V1 runner's rounding)."""
    ceiling = capture_ceiling(version, capability)
    query = 1 + spec_tokens
    top = min(max_num_seqs * query * 2, ceiling)
    uniform: list[int] = []
    newer = _base(version) >= Version("0.29.0")
    if newer and query > 1:
        uniform = [n * query for n in request_counts(max_num_seqs, ceiling) if n * query <= top]
    top = min(top, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))
    if max_num_batched_tokens <= top:
        sizes.append(max_num_batched_tokens)
    sizes += [s for s in uniform if s <= max_num_batched_tokens]
    return sorted(set(sizes))


def v2_graphs(sizes: list[int], max_num_seqs: int, spec_tokens: int, full_decode: bool) -> CapturePlan:
    """The V2 runner's PIECEWISE graphs (every size) and FULL decode graphs (distinct sizes rounded up to a
    multiple of 1 + k within max_num_seqs requests and the largest size)."""
    query = 1 + spec_tokens
    largest = max(sizes, default=0)
    full = {-(-s // query) * query for s in sizes} if full_decode else set()
    full = {s for s in full if s <= min(max_num_seqs * query, largest)}
    return CapturePlan(len(sizes), len(full))


def capture_plan(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int, full_decode: bool,
                 version: str, capability: tuple[int, int], v1_runner: bool) -> CapturePlan:
    """The graphs vLLM `version` captures for these sizes on a GPU of `capability`, by the runner that runs them."""
    if _base(version) < Version("0.29.0") and capture_ceiling(version, capability) == MAX_CAPTURE_SIZE:
        total = graph_count(max_num_seqs, max_num_batched_tokens, spec_tokens, full_decode)
        modes = graph_modes(max_num_seqs, max_num_batched_tokens, spec_tokens, full_decode)
        piecewise = len(capture_sizes(max_num_seqs, max_num_batched_tokens, spec_tokens, full_decode))
        return CapturePlan(piecewise, total - piecewise) if modes else CapturePlan(0, 0)
    sizes = default_sizes(max_num_seqs, max_num_batched_tokens, spec_tokens, version, capability)
    query = 1 + spec_tokens
    if v1_runner:
        if full_decode and query > 1 and sizes:
            top = sizes[-1]
            sizes = sorted({-(-s // query) * query for s in sizes if -(-s // query) * query <= top}) or \
                ([query] if query <= top else [])
        full = sum(1 for s in sizes if query <= s <= query * max_num_seqs) if full_decode else 0
        return CapturePlan(len(sizes), full)
    return v2_graphs(sizes, max_num_seqs, spec_tokens, full_decode)


def walk_grid(limit: int, step: Callable[[int], float]) -> list[int]:
    """config/compilation.py _walk_grid (0.34.0): 1, ..., `limit`, each the next multiple of the largest power of
    two not above step(size)."""
    grid, size = [], 1
    while size < limit:
        grid.append(size)
        stride = 1 << max(0, math.floor(math.log2(max(1.0, step(size)))))
        size = (size // stride + 1) * stride
    return [*grid, limit] if limit else []


def speculator_graphs(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int, method: str,
                      full_decode: bool, version: str, capability: tuple[int, int]) -> CapturePlan:
    """The CUDA graphs the V2 model runner's speculator captures after the target's (model_runner.py capture_model:
    `self.speculator.capture()`), into the same global pool, and that profile_cudagraph_memory measures in full
    ("PIECEWISE, encoder and speculator graphs are measured in full", v1/worker/gpu/cudagraph_utils.py). Read in the
    0.29.0, 0.30.0 and 0.31.0 wheels (0.32 / 0.33 taken as 0.31) and 0.34.0:
    - DFlash (spec_decode/dflash/speculator.py init_cudagraph_manager): FULL_DECODE_ONLY graphs of its query
      forward at decode_query_len 1 + k where the target's decode mode is FULL ("PIECEWISE cudagraphs are not
      supported for dflash"), none otherwise: the same descriptors as the target's FULL decode graphs
      (CudaGraphManager._init_candidates: round_up(size, 1 + k) within max_num_seqs requests and the ceiling).
    - EAGLE / EAGLE3 / MTP (spec_decode/autoregressive/speculator.py, 0.34 target_dependent_ar/ for the prefill):
      draft prefill graphs in the target's mode at query length 1 + k (its PIECEWISE and FULL decode graphs again),
      and with k >= 2 FULL_DECODE_ONLY draft decode graphs at query length 1: every capture size up to
      max_num_seqs requests (0.29-0.31), the request grid up to max_num_seqs itself in 0.34
      (config/vllm.py get_draft_decode_cudagraph_request_sizes, compilation.py decode_cudagraph_capture_grid).
    0.34's prefill graphs are taken as the target's own plan here (its grids are not re-read)."""
    if spec_tokens <= 0:
        return CapturePlan(0, 0)
    sizes = default_sizes(max_num_seqs, max_num_batched_tokens, spec_tokens, version, capability)
    target = v2_graphs(sizes, max_num_seqs, spec_tokens, full_decode)
    if method == "dflash":
        return CapturePlan(0, target.full)
    if spec_tokens < 2 or not full_decode:
        return target
    if _base(version) >= Version("0.34.0"):
        decode = len(walk_grid(max_num_seqs, lambda n: 0.65 * n ** (2 / 3)))
    else:
        decode = sum(1 for s in sizes if s <= max_num_seqs)
    return CapturePlan(target.piecewise, target.full + decode)


def speculator_logit_rows(max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int, method: str,
                          full_decode: bool, version: str, capability: tuple[int, int]) -> int:
    """Rows of draft logits the largest FULL speculator graph computes inside the graph (its pool holds them; the
    target's graphs hold no logits: V2 computes them outside its graph): DFlash samples num_reqs x k rows
    (dflash/speculator.py sample_draft), a draft prefill or decode graph one row per request
    (autoregressive/speculator.py: compute_logits + sample recorded in the FULL graph); 0 without FULL graphs."""
    if spec_tokens <= 0 or not full_decode:
        return 0
    query = 1 + spec_tokens
    sizes = default_sizes(max_num_seqs, max_num_batched_tokens, spec_tokens, version, capability)
    full = [s for s in {-(-s // query) * query for s in sizes} if s <= min(max_num_seqs * query, max(sizes))]
    requests = max(full, default=0) // query
    if method == "dflash":
        return requests * spec_tokens
    if spec_tokens < 2:
        return requests
    if _base(version) >= Version("0.34.0"):
        return max(requests, max_num_seqs)
    return max(requests, max((s for s in sizes if s <= max_num_seqs), default=0))
