"""The V2 model runner's speculator CUDA graphs (vLLM 0.29+, capture.speculator_graphs): captured after the target's
into the same pool and measured in full by profile_cudagraph_memory, so they count in the graph estimate."""

from __future__ import annotations

from doctor.models import get_model
from doctor.planner import ServeConfig, plan
from doctor.planner.capture import default_sizes, speculator_graphs, speculator_logit_rows, v2_graphs, walk_grid
from doctor.planner.coefficients import current
from doctor.planner.hardware import Hardware, get_gpu
from doctor.planner.overhead import overhead_inputs, v2_speculator_method

HOPPER = (9, 0)
BF16 = get_model("Qwen/Qwen3.5-35B-A3B")
DFLASH = dict(speculative_method="dflash", drafter="z-lab/Qwen3.5-35B-A3B-DFlash")


def test_dflash_captures_one_full_graph_per_target_full_decode_graph_and_no_piecewise():
    # dflash/speculator.py: FULL_DECODE_ONLY at decode_query_len 1 + k ("PIECEWISE cudagraphs are not supported")
    sizes = default_sizes(256, 8192, 15, "0.30.0", HOPPER)
    target = v2_graphs(sizes, 256, 15, True)
    drafted = speculator_graphs(256, 8192, 15, "dflash", True, "0.30.0", HOPPER)
    assert (drafted.piecewise, drafted.full) == (0, target.full) and target.full > 0
    assert speculator_graphs(256, 8192, 15, "dflash", False, "0.30.0", HOPPER).graphs == 0
    # its largest graph: 512 tokens of 16 = 32 requests, each sampling 15 draft rows
    assert speculator_logit_rows(256, 8192, 15, "dflash", True, "0.30.0", HOPPER) == 32 * 15


def test_mtp_repeats_the_target_graphs_for_the_draft_prefill_and_adds_one_token_decode_graphs_from_k_2():
    sizes = default_sizes(64, 8192, 3, "0.30.0", HOPPER)
    target = v2_graphs(sizes, 64, 3, True)
    assert speculator_graphs(64, 8192, 1, "mtp", True, "0.30.0", HOPPER) == v2_graphs(
        default_sizes(64, 8192, 1, "0.30.0", HOPPER), 64, 1, True)
    with_decode = speculator_graphs(64, 8192, 3, "mtp", True, "0.30.0", HOPPER)
    # autoregressive/speculator.py: decode_query_len=1, every capture size up to max_num_seqs requests
    assert with_decode.piecewise == target.piecewise
    assert with_decode.full == target.full + sum(1 for s in sizes if s <= 64)
    # 0.34: the one-token decode graphs take the request grid up to max_num_seqs itself
    grid = walk_grid(64, lambda n: 0.65 * n ** (2 / 3))
    assert speculator_graphs(64, 8192, 3, "mtp", True, "0.34.0", HOPPER).full == \
        v2_graphs(default_sizes(64, 8192, 3, "0.34.0", HOPPER), 64, 3, True).full + len(grid)


def test_the_grid_of_0_34_walks_as_compilation_py_does():
    # decode_cudagraph_capture_grid: every count up to 6, then steps of 2 from 8, 4 from 16 ... "64 sizes at 1024"
    assert walk_grid(1024, lambda n: 0.65 * n ** (2 / 3))[:8] == [1, 2, 3, 4, 5, 6, 8, 10]
    assert len(walk_grid(1024, lambda n: 0.65 * n ** (2 / 3))) == 64


def test_only_the_v2_runner_adds_speculator_graphs():
    assert v2_speculator_method(ServeConfig(backend_version="0.26.0", mtp_tokens=3)) is None   # V1: inside the target's
    assert v2_speculator_method(ServeConfig(backend_version="0.30.0", mtp_tokens=3)) == "mtp"
    assert v2_speculator_method(ServeConfig(backend_version="0.30.0", mtp_tokens=3, **DFLASH)) == "dflash"
    assert v2_speculator_method(ServeConfig(backend_version="0.30.0")) is None


def test_the_graph_estimate_counts_the_speculator_graphs_and_their_draft_logits():
    gpu = get_gpu("H200")
    cfg = ServeConfig(backend_version="0.30.0", mtp_tokens=15, max_num_seqs=256, max_num_batched_tokens=8192,
                      prefix_caching=True, **DFLASH)
    inputs = overhead_inputs(BF16, cfg, gpu)
    speculator = speculator_graphs(256, 8192, 15, "dflash", True, "0.30.0", gpu.capability)
    assert inputs.speculator_logits == 32 * 15 * BF16.vocab_size * 2      # 0.22 GiB of BF16 draft logits
    coef = current()
    planned = plan(BF16, Hardware(gpu, 1), cfg).ranks[0].terms
    expected = coef.first_capture() + (inputs.graphs - inputs.graph_modes) * coef.per_graph(False, 1) \
        + inputs.speculator_logits
    assert planned.cudagraph_estimate == int(expected) and planned.graphs == inputs.graphs
    assert speculator.graphs > 0 and inputs.graphs > speculator.graphs
