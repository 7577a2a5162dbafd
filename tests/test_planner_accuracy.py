"""The planner against every fully described logged boot, and the band it prints (calibration.yaml)."""

from __future__ import annotations

from pathlib import Path

import yaml

from doctor.planner.accuracy import band, calibration, residuals
from doctor.planner.hardware import GIB

DATA = Path(__file__).parent / "data" / "published_kv"
ENTRIES = [e for p in sorted(DATA.glob("*.yaml")) for e in yaml.safe_load(p.read_text())["entries"]]


def test_h200_truth_is_met_within_two_percent():
    rows = {r.id: r for r in residuals(ENTRIES)}
    for boot in ("h200-vllm-0.26-bf16", "h200-vllm-0.26-fp8"):
        assert abs(rows[boot].tokens_error) <= 0.02
        assert abs(rows[boot].weights_error) <= 0.01


def test_the_shipped_band_covers_every_residual():
    rows = residuals(ENTRIES)
    cal = calibration()
    assert cal["boots"] == len(rows)
    assert max(abs(r.tokens_error) for r in rows) <= cal["kv_tokens_max_abs_error"]
    assert max(abs(r.weights_error) for r in rows if r.weights_error is not None) <= cal["weights_max_abs_error"]


def test_a_plan_outside_the_calibrated_boots_says_its_error_is_not_measured():
    inside, _ = band(140 * GIB, 1, "0.26.0", "fp8")
    assert inside == calibration()["kv_tokens_max_abs_error"]
    outside, why = band(24 * GIB, 2, "0.22.0", "gptq")
    assert outside is None
    assert "GPUs under 70 GiB" in why and "TP > 1" in why and "vLLM 0.22.0" in why and "not measured" in why
