"""Every plan prints an error band with a figure: a class no logged boot covers (an 80 GB Hopper on vLLM's V2 runner,
TP > 1, SGLang on GPUs under 79 GiB, ...) says "not measured" and prints the bound its terms' own uncertainty gives, never a bare
"not measured"."""

from __future__ import annotations

import re

import pytest

from doctor.models import get_model
from doctor.planner import ServeConfig, plan
from doctor.planner.hardware import Hardware, get_gpu, known_gpus
from doctor.planner.render import band_text

FP8 = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
FIGURE = re.compile(r"^± (?:(\d+\.\d)%, ± )?(\d+\.\d\d) GiB of KV memory \(")


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
@pytest.mark.parametrize("tp", [1, 2, 8])
@pytest.mark.parametrize("gpu", known_gpus())
def test_every_gpu_class_backend_and_tp_prints_a_band_with_a_figure(gpu: str, tp: int, backend: str) -> None:
    cfg = ServeConfig(backend=backend, tp=tp)
    text = band_text(plan(FP8, Hardware(get_gpu(gpu), tp), cfg))
    figure = FIGURE.match(text)
    assert figure and float(figure[2]) > 0, text
    if "not measured" in text:
        assert "bound from the terms' uncertainty" in text, text


@pytest.mark.parametrize("gpu, tp, backend, unmeasured", [
    ("L40S", 1, "sglang", "GPUs under"),                # SGLang below the H100's 79 GiB
    ("H100", 2, "vllm", "the V2 model runner"),         # an 80 GB Hopper on vLLM 0.34: no Hopper boot ran V2
    ("H200", 2, "sglang", "TP > 1"),
])
def test_a_class_without_boots_of_a_feature_says_which_and_bounds_it(gpu: str, tp: int, backend: str,
                                                                     unmeasured: str) -> None:
    text = band_text(plan(FP8, Hardware(get_gpu(gpu), tp), ServeConfig(backend=backend, tp=tp)))
    assert "not measured" in text and unmeasured in text and FIGURE.match(text), text


def test_sglang_on_an_80_gb_hopper_is_measured_by_its_h100_boots() -> None:
    text = band_text(plan(FP8, Hardware(get_gpu("H100"), 1), ServeConfig(backend="sglang", backend_version="0.5.16")))
    assert "not measured" not in text and "logged SGLang boots" in text, text
