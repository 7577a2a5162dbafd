"""What a framework or serving wrapper around the engine did is named as the wrapper's, not the engine's or the
network's.

- verl's own vLLM executor (verl/workers/rollout/vllm_rollout/vllm_async_server.py, verl 0.4.0 - 0.5.x) asserts
  that it found DP x TP rollout actors; finding none is a verl <-> vLLM version mismatch, not an engine bug, in
  every shape the assert is pasted (its source line above, in prose, in a fence, under vLLM's frames).
- KServe's Hugging Face runtime (python/huggingfaceserver/huggingfaceserver/__main__.py) looks a --model_id up on
  the Hub even with the model mounted: a Hub error raised under its frames names the runtime's lookup first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain

MISMATCH = "QD-R-VLLM-INTEGRATION-MISMATCH"
ASSERTS = [
    "AssertionError: instance_id: 6d2b3e0a-1c2f-4e1b-9f0e-7d2c3b4a5e6f:Xq1Zr9:1:0 has 0 actors, but vllm_dp_size: 1 "
    "* vllm_tp_size: 2 = 2 is expected.",
    "AssertionError: instance_id: verl_ns:a1B2c3:4:3 has 0 actors, but vllm_dp_size: 4 * vllm_tp_size: 1 = 4 is "
    "expected.",
    "AssertionError: instance_id: ns:wg:2:1 has 3 actors, but vllm_dp_size: 2 * vllm_tp_size: 4 = 8 is expected.",
]
SHAPES = {
    "source_line": "Following the README I ran the GRPO example:\n"
                   "    assert len(actor_names) == vllm_dp_size * vllm_tp_size, (\n{line}\n",
    "fenced": "### Error\n```\n{line}\n```\n",
    "prose": "The trainer stops with `{line}` right after the rollout starts.\n",
    "frames": "Traceback (most recent call last):\n"
              '  File "/usr/local/lib/python3.10/dist-packages/vllm/v1/executor/abstract.py", line 54, in __init__\n'
              "    self._init_executor()\n"
              '  File "/workspace/verl/verl/workers/rollout/vllm_rollout/vllm_async_server.py", line 61, in _init_executor\n'
              "    assert len(actor_names) == vllm_dp_size * vllm_tp_size, (\n{line}\n",
}


def findings(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain.explain_sources([log])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("line", ASSERTS)
def test_verls_actor_count_assert_is_a_framework_vllm_mismatch_not_an_engine_bug(tmp_path, line, shape):
    first = findings(tmp_path, SHAPES[shape].format(line=line))[0]
    assert first.remedy.id == MISMATCH
    assert first.engine_bug is None


HUB_ERRORS = [
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
    "cached files.",
    "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub "
    "and we cannot find the requested files in the local cache. Please check your connection and try again or "
    "make sure your Internet connection is on.",
]
WRAPPER_PATHS = ["/huggingfaceserver/huggingfaceserver/__main__.py",
                 "/kserve-workspace/prod_venv/lib/python3.12/site-packages/huggingfaceserver/__main__.py"]


def hub_traceback(caller: str, error: str) -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "{caller}", line 142, in load_model\n'
            "    model_config = AutoConfig.from_pretrained(\n"
            '  File "/opt/venv/lib/python3.12/site-packages/transformers/utils/hub.py", line 446, in cached_files\n'
            "    raise OSError(\n"
            f"{error}\n")


@pytest.mark.parametrize("caller", WRAPPER_PATHS)
@pytest.mark.parametrize("error", HUB_ERRORS)
def test_a_hub_lookup_made_by_kserves_runtime_is_the_runtimes_lookup(tmp_path, caller, error):
    first = findings(tmp_path, hub_traceback(caller, error))[0]
    assert first.remedy.id.startswith("QD-R-HF-")
    assert first.engine_bug is not None and first.engine_bug.engine == "KServe huggingfaceserver"
    assert "load_model" in first.engine_bug.raised_at
    assert first.fix[0].text.startswith("Drop --model_id")


@pytest.mark.parametrize("error", HUB_ERRORS)
def test_a_hub_lookup_made_by_the_engine_stays_a_network_problem(tmp_path, error):
    caller = "/usr/local/lib/python3.12/dist-packages/vllm/transformers_utils/config.py"
    first = findings(tmp_path, hub_traceback(caller, error))[0]
    assert first.remedy.id.startswith("QD-R-HF-")
    assert first.engine_bug is None
