"""Rules the engines' recipes encode, as pure functions of a backend and its command-line flags, shared by
`lint` (doctor/lint/backend_args.py) and `check` (checks/recipes.py).

    speculative_with_pp("vllm", {"--pipeline-parallel-size": "2", "--speculative-config": "{...}"}) -> problem

Sources:
- vLLM: MTP / speculative decoding does not start or serves wrong output under pipeline parallelism in the
  releases qwen-doctor covers: vllm-project/vllm#49355 (0.25: "MTP speculative decoding is broken with PP>1"),
  #52069 (the draft must implement SupportsPP; create_engine_config fails), #57755 (0.28.0 / 0.29.0:
  _pp_broadcast_prev_sampled_token_ids asserts one sampled token per request), #36643 (Qwen3.5 PP + MTP); the
  recipes gate spec_decoding off multi_node_tp_pp (vllm-project/recipes b76bd29, Kimi-K3, vllm#50098).
- SGLang 0.5.23 srt/arg_groups/validation_hook.py check_pipeline_parallel_compat: with --pp-size > 1 the only
  speculative algorithm accepted is EAGLE without multi-layer EAGLE (NEXTN is read as EAGLE,
  speculative_hook.py), so MTP passes there and DFLASH / EAGLE3 / NGRAM / STANDALONE are refused.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from doctor.deployment.table import option, spellings_of

TOOL_PARSER, LANGUAGE_MODEL_ONLY = option("tool_call_parser"), option("language_model_only")
SGLANG_PP_SPEC_OK = ("EAGLE", "NEXTN")
SOURCE = ("vllm-project/vllm#49355, #52069, #57755, #36643; vllm-project/recipes b76bd29 (spec_decoding gated off "
          "multi_node_tp_pp); sglang 0.5.23 srt/arg_groups/validation_hook.py check_pipeline_parallel_compat")


@lru_cache(maxsize=1)
def _spellings() -> dict[str, tuple[str, ...]]:
    """The table's spellings (read from the flag schemas on first use), plus what argparse also accepts: its
    abbreviations (`--pp`, `--speculative-algo`) and vLLM's speculative flags before --speculative-config (0.9:
    --num-speculative-tokens, --speculative-model)."""
    return {"pp": (*spellings_of("pp"), "--pp"),
            "vllm_spec": (*spellings_of("speculative_config", "vllm"), "--num-speculative-tokens",
                          "--speculative-model"),
            "sglang_spec": (*spellings_of("speculative_algorithm", "sglang"), "--speculative-algo")}


def _first(flags: Mapping[str, str], kind: str) -> tuple[str, str] | None:
    found = next((n for n in _spellings()[kind] if n in flags), None)
    return (found, flags[found]) if found else None


def speculative_with_pp(backend: str, flags: Mapping[str, str]) -> str | None:
    """What is wrong with speculative decoding (MTP) combined with pipeline parallelism, or None."""
    pp = _first(flags, "pp")
    try:
        stages = int(pp[1]) if pp else 1
    except ValueError:
        return None
    if stages <= 1:
        return None
    if backend == "vllm":
        spec = _first(flags, "vllm_spec")
        if spec:
            return (f"{spec[0]} with {pp[0]} {stages}: vLLM's speculative decoding (MTP included) does not start "
                    "or corrupts output under pipeline parallelism")
        return None
    spec = _first(flags, "sglang_spec")
    if spec and spec[1].upper() not in SGLANG_PP_SPEC_OK:
        return (f"{spec[0]} {spec[1]} with {pp[0]} {stages}: SGLang accepts only EAGLE / NEXTN (MTP) speculative "
                "decoding with pipeline parallelism")
    return None


# Tool-call parsers and the format they read. Qwen3.5 / Qwen3.6 emit XML-style calls
# (<tool_call><function=NAME><parameter=P>...); vllm-project/recipes (86c7777, "stay in sync with model card on tool
# call parser") and sgl-cookbook (data/models/src/v0.5.10/qwen36.yaml tool_parser) give qwen3_coder.
# vLLM 0.32.0 vllm/tool_parsers/__init__.py: qwen3_coder and qwen3_xml are the same Qwen3EngineToolParser;
# qwen3_json is an alias of hermes (JSON inside <tool_call>). SGLang 0.5.23 srt/function_call/parser_names.py
# lists qwen3_coder (Qwen3CoderDetector) and qwen / qwen25 (Qwen25Detector, JSON); it has no qwen3_xml.
JSON_TOOL_PARSERS = ("hermes", "qwen", "qwen25", "qwen3_json")
TOOL_PARSER_SOURCE = ("vllm 0.32.0 vllm/tool_parsers/__init__.py; sglang 0.5.23 srt/function_call/parser_names.py, "
                      "function_call_parser.py; vllm-project/recipes 86c7777; sgl-cookbook qwen36.yaml")


def tool_parser_issue(backend: str, flags: Mapping[str, str]) -> str | None:
    """What is wrong with the --tool-call-parser for Qwen3.5 / Qwen3.6 on `backend`, or None."""
    parser = flags.get(TOOL_PARSER)
    if not parser:
        return None
    if parser in JSON_TOOL_PARSERS:
        return (f"{TOOL_PARSER} {parser} reads JSON tool calls; Qwen3.5 / Qwen3.6 write XML-style calls "
                "(<tool_call><function=NAME><parameter=...>), which qwen3_coder parses, so every call is lost")
    if backend == "sglang" and parser == "qwen3_xml":
        return f"{TOOL_PARSER} qwen3_xml is a vLLM name; SGLang's parser for Qwen3.5 / Qwen3.6 is qwen3_coder"
    return None


# SGLang and Qwen3.5's vision tower. `--language-model-only` exists from SGLang 0.5.18 (flag schemas) but
# server_args.LANGUAGE_MODEL_ONLY_ARCHITECTURES (0.5.23: DeepseekV4, MuseGlimmer, Cosmos3, Cosmos3Edge) does not
# list Qwen3.5, so arg_groups/model_hook.py refuses it ("--language-model-only does not support ...");
# sgl-project/sglang#37828 adds Qwen3.5 and is not in a covered release. `--language-only` is the EPD
# (encoder-disaggregated) worker flag and still builds the vision tower (sgl-project/sglang#38145).
# The first SGLang release that skips Qwen3.5's vision tower: none covered yet (set it when #37828 ships).
SGLANG_SKIPS_QWEN35_VISION_FROM: str | None = None
LMO_SOURCE = ("sglang 0.5.23 srt/server_args.py LANGUAGE_MODEL_ONLY_ARCHITECTURES, srt/arg_groups/model_hook.py; "
              "sgl-project/sglang#37828 (open), #38145")


def skips_vision_tower(backend: str, version: str | None) -> bool:
    """Whether --language-model-only (--language-only) keeps Qwen3.5's vision tower out of GPU memory."""
    if backend != "sglang":
        return True
    if SGLANG_SKIPS_QWEN35_VISION_FROM is None:
        return False
    from packaging.version import InvalidVersion, Version

    try:
        return version is None or Version(version) >= Version(SGLANG_SKIPS_QWEN35_VISION_FROM)
    except InvalidVersion:
        return False


def language_model_only_issue(backend: str, flags: Mapping[str, str], version: str | None = None) -> str | None:
    """What is wrong with --language-model-only for Qwen3.5 on `backend` `version`, or None."""
    if backend != "sglang" or LANGUAGE_MODEL_ONLY not in flags or skips_vision_tower(backend, version):
        return None
    return (f"{LANGUAGE_MODEL_ONLY} is refused by SGLang for Qwen3.5 (its LANGUAGE_MODEL_ONLY_ARCHITECTURES lists "
            "other models; sgl-project/sglang#37828 adds Qwen3.5), and the vision tower stays loaded")


# vLLM: the concurrency limit against the Mamba (GDN state) cache blocks of a hybrid model. Each running sequence
# holds one block of the shared pool, so at most num_blocks = KV tokens / block size sequences run at once.
# - From vLLM 0.19.0 (vllm-project/vllm#38270, merged 2026-03-26, after 0.18.0 of 2026-03-20), the engine refuses
#   to start when max_num_seqs exceeds num_blocks and FULL CUDA graphs are captured (vllm config/compilation.py:
#   "max_num_seqs (N) exceeds available Mamba cache blocks (M) ... Please lower max_num_seqs to at most M";
#   reproduced on 0.23.1, 0.25.1 and 0.28.0: vllm#49064, kaito-project/kaito#2319). The check
#   (resolve_cudagraph_mode_and_sizes, read in 0.26.0 and the 0.32.0 CPU build) runs whenever the mode has FULL
#   graphs, which the default FULL_AND_PIECEWISE has, speculative decoding or not: vLLM 0.26.0 on one H100, no
#   drafter, --max-num-seqs 512 against 335 blocks refused (tests/fixtures/h100-rehearsal/vllm-kv/
#   h100-vllm-0.26-bf16-512-16384-u095.log). Eager mode and cudagraph_mode PIECEWISE / NONE capture no FULL graph.
#   An earlier note here said a 0.26.0 boot served --max-num-seqs 1024 with 294,167 KV tokens at 8k context and
#   no drafter; it named no source, and the engine's check and the H100 boot say otherwise.
# - Before (0.17.x, 0.18.x) nothing refuses: the capture sizes are capped instead (vllm#37416) and requests
#   beyond the blocks wait.
MAMBA_REFUSES_FROM = "0.19.0"
MAMBA_SOURCE = ("vllm-project/vllm#38270 (config/compilation.py), #37416, #49064; kaito-project/kaito#2319; "
                "vllm-project/recipes#551")


def mamba_concurrency(version: str | None, max_num_seqs: int, mamba_blocks: int, full_graphs: bool) -> tuple[str, str]:
    """('pass' | 'clamp' | 'refuse', why) for `max_num_seqs` against `mamba_blocks` on vLLM `version`."""
    from packaging.version import InvalidVersion, Version

    if max_num_seqs <= mamba_blocks:
        return "pass", f"max_num_seqs {max_num_seqs} <= {mamba_blocks} Mamba cache blocks"
    try:
        refuses = version is None or Version(version) >= Version(MAMBA_REFUSES_FROM)
    except InvalidVersion:
        refuses = True
    if refuses and full_graphs:
        return "refuse", (f"max_num_seqs {max_num_seqs} exceeds the {mamba_blocks} Mamba cache blocks and FULL CUDA "
                          f"graphs are captured: vLLM {version or 'newest'} refuses to start "
                          f"(lower {option('max_num_seqs', 'vllm')} to at most {mamba_blocks})")
    return "clamp", (f"max_num_seqs {max_num_seqs} exceeds the {mamba_blocks} Mamba cache blocks: vLLM "
                     f"{version or 'newest'} starts, and at most {mamba_blocks} sequences run at once")
