"""The result id and title each exercise reports under (QD-DEPLOY-*), for deploy and probe alike."""

from __future__ import annotations

EXERCISE_IDS = {"models": "QD-DEPLOY-MODELS", "chat": "QD-DEPLOY-CHAT", "stream": "QD-DEPLOY-STREAM",
                "structured": "QD-DEPLOY-JSON", "reasoning": "QD-DEPLOY-REASONING",
                "thinking_off": "QD-DEPLOY-THINKING-OFF", "tools": "QD-DEPLOY-TOOLS",
                "tools_stream": "QD-DEPLOY-TOOLS-STREAM", "image": "QD-DEPLOY-IMAGE",
                "prefix_cache": "QD-DEPLOY-PREFIX-CACHE", "speculative": "QD-DEPLOY-SPEC-DECODE",
                "warmup": "QD-DEPLOY-WARMUP", "burst": "QD-DEPLOY-BURST", "sweep": "QD-DEPLOY-SWEEP", "bench": "QD-DEPLOY-BENCH"}
EXERCISE_TITLES = {"models": "Model listed by /v1/models", "chat": "Chat completion",
                   "stream": "Streamed chat completion", "structured": "JSON-schema structured output",
                   "reasoning": "Reasoning parser separates thinking",
                   "thinking_off": "Answer with thinking off", "tools": "Tool call (thinking on)",
                   "tools_stream": "Streamed tool call (thinking on)", "image": "Image input",
                   "prefix_cache": "Prefix cache hits a repeated prompt",
                   "speculative": "Speculative decoding acceptance",
                   "warmup": "Cold cost of the first full-width batch", "burst": "Concurrency burst (warm)",
                   "sweep": "Concurrency sweep", "bench": "vllm bench serve against the server"}
# Exercises whose failure matters less than a broken chat or burst.
MEDIUM = frozenset({"reasoning", "image", "prefix_cache", "speculative", "warmup", "sweep", "bench"})
