"""The planner against real, published vLLM KV-cache lines (tests/data/published_kv/, cited per entry)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from doctor.models import get_model
from doctor.planner import ServeConfig
from doctor.planner.hardware import GIB
from doctor.planner.vllm_kv import vllm_capacity, vllm_layout

DATA = Path(__file__).parent / "data" / "published_kv" / "vllm.yaml"
ENTRIES = yaml.safe_load(DATA.read_text())["entries"]

AVAILABLE = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")


def find(pattern: re.Pattern, lines: list[str]) -> re.Match:
    return next(m for line in lines if (m := pattern.search(line)))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_kv_tokens_from_logged_available_memory(entry):
    assert entry["source"].startswith("https://github.com/")
    spec = get_model(entry["model"])
    cfg = ServeConfig(**entry["flags"])
    available_gib = float(find(AVAILABLE, entry["log"]).group(1))
    logged_tokens = int(find(TOKENS, entry["log"]).group(1).replace(",", ""))
    logged_concurrency = float(find(CONCURRENCY, entry["log"]).group(2))
    layout = vllm_layout(spec, cfg, len(spec.full_attention_layers), len(spec.linear_attention_layers))

    # The log rounds the budget to 0.01 GiB: the true value lies within +-0.005 GiB of it.
    low = vllm_capacity(layout, int((available_gib - 0.005) * GIB), cfg.max_model_len, cfg)
    high = vllm_capacity(layout, int((available_gib + 0.005) * GIB), cfg.max_model_len, cfg)
    mid = vllm_capacity(layout, int(available_gib * GIB), cfg.max_model_len, cfg)
    assert low.tokens <= logged_tokens <= high.tokens
    assert abs(mid.tokens - logged_tokens) <= 0.03 * logged_tokens
    assert round(mid.max_concurrency, 2) == logged_concurrency


def test_derivation_of_the_first_published_line():
    # fp8 KV: 2 x 2 heads x 256 x 1 B = 1024 B/token/layer; mamba page 2,146,304 B -> block 2096 tokens
    # (16 * cdiv(2146304, 16 * 1024)); 4 groups of 10 layers -> 2096 * 1024 * 10 B per block;
    # 6.01 GiB // 21,463,040 B = 300 blocks; a 131,072-token request needs cdiv(131072, 2096) = 63
    # attention blocks + 3 mamba groups x 2 blocks (prefix caching "align") = 69;
    # 300 / 69 = 4.3478x -> int(4.3478 x 131072) = 569,878 tokens, as logged.
    assert int(6.01 * GIB) // (2096 * 1024 * 10) == 300
    assert int(300 / (63 + 6) * 131072) == 569_878
