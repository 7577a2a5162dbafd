"""A traceback cut before its exception line is still a crash raised at its deepest engine frame, rooted at a C
library's report above it; an engine message quoted in prose without its class is still read (remedies/cuttrace.py,
remedies/prosespans.py). Generated over the mined raise templates no entry covers, as bench/explain_shapes.py's
`source` family, so that no one wording is fitted."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.cuttrace import CUT
from remedies.prosespans import pieces
from remedies.templates import MIN_PREFIX, skeleton

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import explain_shapes  # noqa: E402

SOURCE = explain_shapes.source_lines()[::8]  # every 8th of the bench's sampled templates
VLLM = explain_shapes.VLLM
FRAMES = [
    "Traceback (most recent call last):",
    f'  File "{VLLM}/entrypoints/openai/api_server.py", line 1200, in run_server',
    "    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)",
    f'  File "{VLLM}/v1/worker/gpu_worker.py", line 210, in determine_available_memory',
    "    self.model_runner.profile_run()",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
    "    return func(*args, **kwargs)",
]
UPSTREAM = [
    "node-1:2222:2222 [1] misc/cudawrap.cc:188 NCCL WARN Cuda failure 1 'invalid argument'",
    "nvshmem_init: src/host/init/init.cu:1007: non-zero status: 7 nvshmem setup heap failed",
    "[ERROR] CUDA driver error: misaligned address",
    "RuntimeError: CUDA error: CUDA_ERROR_ILLEGAL_ADDRESS",
]
HEAD = "INFO 05-01 10:00:00 [api_server.py:1052] vLLM API server version 0.10.1"


def explain(tmp_path: Path, lines: list[str]):
    path = tmp_path / "paste.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


@pytest.mark.parametrize("cut", range(2, len(FRAMES) + 1))
@pytest.mark.parametrize("shape", ["plain", "fenced", "compose"])
def test_a_traceback_cut_before_its_exception_is_raised_at_its_deepest_engine_frame(tmp_path, cut, shape):
    frames = FRAMES[:cut]
    lines = {"plain": [HEAD, *frames], "fenced": ["The server dies at start:", "```", *frames, "```"],
             "compose": [f"vllm-1  | {x}" for x in (HEAD, *frames)]}[shape]
    found = explain(tmp_path, lines)
    assert found and found[0].crash is not None and found[0].crash.exception == CUT
    deepest = [x for x in frames if 'File "' in x and "/vllm/" in x][-1]
    assert found[0].crash.frame is not None and f"in {found[0].crash.frame.function}" in deepest
    assert found[0].engine_bug is None  # no exception to judge: no verdict on the engine's code


@pytest.mark.parametrize("upstream", UPSTREAM)
def test_a_c_librarys_report_above_a_cut_traceback_is_its_root(tmp_path, upstream):
    found = explain(tmp_path, [HEAD, upstream, *FRAMES[:5]])
    assert found and found[0].first.line == 2, [f.remedy.id for f in found]
    root = found[0].crash.exception if found[0].crash is not None else found[0].line
    assert upstream.split(": ", 1)[-1][:30] in root


def test_a_whole_traceback_is_not_read_as_cut(tmp_path):
    found = explain(tmp_path, [HEAD, *FRAMES, "ZeroDivisionError: division by zero"])
    assert found[0].crash is not None and found[0].crash.exception != CUT


@pytest.mark.parametrize("template, line", SOURCE)
@pytest.mark.parametrize("shape", ["bare-code-question", "bare-bullet-bold", "bare-title", "cjk-wrapper-title",
                                   "summary-paragraph"])
def test_an_engine_message_quoted_without_its_class_is_located_in_the_engines_source(tmp_path, template, line, shape):
    lines = explain_shapes.LINE_SHAPES[shape](explain_shapes.block(line))
    found = explain(tmp_path, lines)
    assert found, lines
    located = found[0].located or (found[0].root.located if found[0].root is not None else None)
    assert located is not None
    # the same template in any release's spacing, a release's shorter wording of it, or (a paragraph cut the line)
    # another release's wording that shares every fixed character the paste kept
    wanted, named = skeleton(template.removeprefix("source:")), skeleton(located.hit.template.text)
    assert wanted.startswith(named) or len(os.path.commonprefix([wanted, named])) >= MIN_PREFIX, (wanted, named)


@pytest.mark.parametrize("text", [
    "Why does `vllm serve` print `INFO: Started server process` and nothing else?",
    "- it prints **Loading safetensors checkpoint shards** for ten minutes",
    "# How do I set `--gpu-memory-utilization` for two models on one GPU?",
])
def test_prose_that_quotes_no_engine_message_stays_silent(tmp_path, text):
    assert explain(tmp_path, [text]) == []


def test_pieces_are_the_quoted_parts_and_a_headings_text_after_its_colon():
    assert pieces("# [Bug]: Server fails: the placement group has too few GPUs for this") == [
        "the placement group has too few GPUs for this"]
    assert pieces("it fails with `the placement group has too few GPUs` and **nothing else printed here**") == [
        "the placement group has too few GPUs", "nothing else printed here"]


@pytest.mark.parametrize("title", [
    "# [Bug]: vllm serve fails with \"Address already in use\" when a second instance starts",
    "## [Usage]: 启动第二个实例时报错，端口被占用",
    "# Engine crashed after upgrading to 0.11",
])
def test_an_issue_title_that_states_the_failure_is_the_root_of_its_cut_traceback(tmp_path, title):
    found = explain(tmp_path, [title, "", "```", *FRAMES[:5], "```"])
    assert found[0].first.line == 1 and found[0].crash.exception in title
    assert found[0].crash.frame.function == "determine_available_memory" and found[0].engine_bug is None


def test_a_title_that_states_no_failure_leaves_the_cut_traceback_rootless(tmp_path):
    found = explain(tmp_path, ["# How to serve Qwen3 on two GPUs with vLLM", "", "```", *FRAMES[:5], "```"])
    assert found[0].crash.exception == CUT and found[0].crash.frame.function == "determine_available_memory"
