#!/bin/sh
# A launch script written from the article's idioms.
export HF_ENDPOINT=https://hf-mirror.com
vllm serve Qwen/Qwen3.5-35B-A3B \
  --tensor-parallel-size 8 \
  --dtype fp8 \
  --max-requests 1000 \
  --enable-chunk-prefill
python -m sglang.launch_server --model-path Qwen/Qwen3.5-35B-A3B --radix-size 32768 --mem_fraction 0.85 \
  --quantization fp8_e4m3
