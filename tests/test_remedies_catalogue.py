"""The shipped catalogue: complete, sourced, and every sample line recognised by its own entry only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remedies import CatalogueError, Matcher, load_catalogue
from remedies.model import COMPONENTS

CATALOGUE = load_catalogue()
MATCHER = Matcher(CATALOGUE)
SAMPLES = [(r.id, s) for r in CATALOGUE for s in r.samples]


def test_catalogue_has_at_least_50_entries_covering_every_component():
    assert len(CATALOGUE) >= 50
    assert {r.component for r in CATALOGUE} == set(COMPONENTS)


def test_every_entry_is_sourced_and_has_ordered_fix_steps():
    for remedy in CATALOGUE:
        assert remedy.source and remedy.fix and remedy.why, remedy.id
        for source in remedy.source:
            assert source.startswith("https://") or re.match(r"^[\w.-]+/[\w.-]+ \S+", source), (remedy.id, source)


@pytest.mark.parametrize(("remedy_id", "sample"), SAMPLES, ids=[f"{i}:{n}" for n, (i, _) in enumerate(SAMPLES)])
def test_each_sample_line_matches_only_its_own_entry(remedy_id, sample):
    remedy = CATALOGUE.get(remedy_id)
    if any(v.literal in sample and v.regex.search(sample) for v in remedy.variants):
        # a variant's wording names the entry only with the lines before it, never alone
        assert remedy_id not in [r.id for r in MATCHER.match_line(sample)]
    elif remedy.context is None:
        assert [r.id for r in MATCHER.match_line(sample)] == [remedy_id]
    else:  # an entry that needs its traceback (context) names no line alone; another entry names the message
        assert remedy_id not in [r.id for r in MATCHER.match_line(sample)] and MATCHER.match_line(sample)


@pytest.mark.parametrize(
    ("claim", "remedy_id"),
    [
        ("RadixAttention table full", "QD-R-SGLANG-KV-POOL-FULL"),
        ("radix_size", "QD-R-SGLANG-SERVERARGS-KWARG"),
        ("RayRuntime", "QD-R-SGLANG-NO-RAYRUNTIME"),
        ('dtype="fp8"', "QD-R-VLLM-DTYPE-INVALID"),
        ("fp8_e4m3", "QD-R-VLLM-QUANTIZATION-INVALID"),
        ("save_pretrained", "QD-R-VLLM-SAVE-PRETRAINED"),
        ("size of tensor a (1856)", "QD-R-TORCH-TENSOR-SIZE-MISMATCH"),
    ],
)
def test_the_articles_invented_messages_and_apis_point_to_real_entries(claim, remedy_id):
    remedy = CATALOGUE.get(remedy_id)
    assert remedy is not None and claim in (remedy.article_claim or "")


def test_radix_table_full_is_answered_with_what_sglang_really_prints():
    remedy = CATALOGUE.get("QD-R-SGLANG-KV-POOL-FULL")
    printed = "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.8353"
    assert [r.id for r in MATCHER.match_line(printed)] == [remedy.id]
    assert "RadixAttention table full" in remedy.title
    assert not MATCHER.match_line("RadixAttention table full")


def test_sglang_graph_flags_are_given_per_version_range():
    steps = {(s.applies, s.text) for s in CATALOGUE.get("QD-R-SGLANG-CUDA-GRAPH-CAPTURE").fix}
    assert any(a == "sglang<0.5.23" and "--cuda-graph-max-bs " in t + " " for a, t in steps)
    assert any(a == "sglang>=0.5.23" and "--cuda-graph-max-bs-decode" in t for a, t in steps)


@pytest.mark.parametrize(
    ("remedy_id", "flag"),
    [
        ("QD-R-VLLM-CONV1D-CACHE-LINES", "--max-cudagraph-capture-size"),
        ("QD-R-VLLM-KV-NO-MEMORY", "--language-model-only"),
        ("QD-R-VLLM-MAMBA-BLOCKS", "--max-num-seqs"),
        ("QD-R-SGLANG-NOT-ENOUGH-MEMORY", "--max-mamba-cache-size"),
    ],
)
def test_qwen35_specific_entries_name_the_real_flags(remedy_id, flag):
    assert any(flag in step.text for step in CATALOGUE.get(remedy_id).fix)


def test_wrappers_rank_after_root_causes():
    wrappers = [r for r in CATALOGUE if r.wrapper]
    assert {"QD-R-VLLM-ENGINE-CORE-INIT-FAILED", "QD-R-SGLANG-CHILD-FAILED"} <= {r.id for r in wrappers}
    assert min(r.rank for r in wrappers) > max(r.rank for r in CATALOGUE if not r.wrapper)


def test_lookup_is_case_insensitive_and_unknown_ids_give_none():
    assert CATALOGUE.get("qd-r-torch-cuda-oom").id == "QD-R-TORCH-CUDA-OOM"
    assert CATALOGUE.get("QD-R-NOPE") is None


def test_loading_is_cached_per_process():
    assert load_catalogue() is CATALOGUE


def test_a_missing_catalogue_directory_is_a_clear_error(tmp_path: Path):
    with pytest.raises(CatalogueError, match="no catalogue files"):
        load_catalogue(tmp_path)


# One line per substring of reference/qwen35-facts.md section D, as the emitters print them.
SECTION_D = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
    "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",
    "ValueError: To serve at least one request with the models's max seq len (262144), (5.00 GiB KV cache is needed, "
    "which is larger than the available KV cache memory (1.00 GiB).",
    "The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (100)",
    "User-specified max_model_len (300000) is greater than the derived max_model_len (max_position_embeddings=262144). "
    "To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
    "Free memory on device (1.0/79.2 GiB) on startup is less than desired GPU memory utilization (0.9, 71.3 GiB).",
    "ValueError: max_num_seqs (512) exceeds available Mamba cache blocks (300)",
    "    assert num_cache_lines >= batch",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "KV cache pool is full. Retract requests. #retracted_reqs: 2",
    "Prefill out of memory. Try to lower your batch size.",
    "Exception: Capture cuda graph failed: CUDA error",
    "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    "CUDA error: no kernel image is available for execution on the device",
    "Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
    "Your GPU does not have native support for FP8 computation but FP8 quantization is being used.",
    "Model architectures ['Qwen3_5MoeForConditionalGeneration'] are not supported for now.",
    "The checkpoint you are trying to load has model type `qwen3_5_moe` but Transformers does not recognize this architecture.",
    "Total number of attention heads (16) must be divisible by tensor parallel size (3).",
    "AssertionError: 16 is not divisible by 3",
    "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
    "include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
    "RuntimeError: Insufficient space in /dev/shm",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
    "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "OSError: [Errno 98] Address already in use",
    "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
    "gcs_rpc_client.h:151: Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.",
    "The node with node id: ab and address: 10.0.0.2 and node name: n2 has been marked dead because the detector has "
    "missed too many heartbeats from it.",
    "ValueError: Cannot provide a placement group requiring 8.0 GPUs (placement_group_specs=[]) within 1800 seconds.",
    "RuntimeError: The NVIDIA driver on your system is too old (found version 12040).",
    "CUDA error: an illegal memory access was encountered",
    "RuntimeError: Cannot re-initialize CUDA in forked subprocess.",
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files",
    "Cannot find the requested files in the disk cache and outgoing traffic has been disabled.",
    "401 Client Error. Cannot access gated repo for url https://huggingface.co/x/y/resolve/main/config.json.",
    "RuntimeError: The size of tensor a (1856) must match the size of tensor b (1024) at non-singleton dimension 0",
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    "ValueError: Warning: User-specified context_length (300000) is greater than the derived context_length (262144). "
    "To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
]


@pytest.mark.parametrize("line", SECTION_D)
def test_every_message_of_the_reference_error_table_is_recognised(line):
    assert MATCHER.match_line(line)


def test_the_library_does_not_import_click():
    import subprocess
    import sys

    code = "import sys, remedies; remedies.Matcher(); remedies.explain_sources([]); assert 'click' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1]).returncode == 0
