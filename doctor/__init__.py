"""qwen-doctor: diagnostics for serving Qwen3.5-35B-A3B with vLLM and SGLang on NVIDIA GPUs."""

__version__ = "0.1.0"
