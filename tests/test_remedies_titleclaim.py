"""An issue report's title that states a failure is the report's claim when its body names none; a tutorial's or a
README's heading is no claim (remedies/titleclaim.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.titleclaim import TITLE_KIND

TITLES = [
    "# [Bug]: Qwen3.5 MoE fails with KeyError on load with FP8 experts",
    "# [Bug]: DeepGEMM failures kill engine init on H20",
    "## [Usage]: sglang.srt.managers error when starting with --enable-dp-attention",
    "# 启动 Qwen3 时报错，容器直接退出",
    "# Engine hangs after CUDA graph capture with expert parallel",
]
BODIES = [
    ["### Your current environment", "<details>", "<summary>env</summary>", "", "    PyTorch version: 2.9.0",
     "    CUDA used to build PyTorch: 12.8", "", "</details>"],
    ["### How to reproduce", "```bash", "docker run --gpus all vllm/vllm-openai:latest --model Qwen/Qwen3-8B", "```"],
    ["### Describe the bug", "```python", "from vllm import LLM", "llm = LLM(model='Qwen/Qwen3-8B')", "```"],
]


def explain(tmp_path: Path, lines: list[str]):
    path = tmp_path / "paste.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


@pytest.mark.parametrize("title", TITLES)
@pytest.mark.parametrize("body", range(len(BODIES)))
def test_an_issue_title_that_states_a_failure_is_the_finding_when_the_body_names_none(tmp_path, title, body):
    found = explain(tmp_path, [title, "", *BODIES[body]])
    assert len(found) == 1 and found[0].first.line == 1
    assert found[0].crash is not None and found[0].crash.kind == TITLE_KIND and found[0].crash.exception in title
    if "hangs" in title and "vllm" in " ".join(BODIES[body]):  # a hang on an engine's page: remedies/bugclaims.py
        assert found[0].engine_bug is not None and found[0].engine_bug.claim.kind == "hang"
    else:
        assert found[0].engine_bug is None  # the reporter's words judge no engine code


@pytest.mark.parametrize("lines", [
    ["# How to deploy Qwen3 with vLLM on Kubernetes", "", "### Environment", "pip install vllm"],
    ["# Fixing 'address already in use' when two servers start", "", "Run the second one with --port 8001."],
    ["# [Bug]: vLLM 0.11 on 2x H100", "", "### Your current environment", "    PyTorch version: 2.9.0"],
])
def test_a_heading_that_is_no_failure_report_stays_silent(tmp_path, lines):
    assert explain(tmp_path, lines) == []


def test_a_title_claim_gives_way_to_an_error_the_body_names(tmp_path):
    found = explain(tmp_path, [TITLES[0], "", "```", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                               "2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.", "```"])
    assert found[0].remedy.id == "QD-R-TORCH-CUDA-OOM"
