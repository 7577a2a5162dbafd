"""A plan on a WSL2 GPU says which part of its KV cache the Windows host decides, and where to read it back."""

from __future__ import annotations

import pytest

from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.hardware import GIB

NVFP4 = "nvidia/Qwen3.6-35B-A3B-NVFP4"


def _plan(gpus: str, **flags):
    cfg = ServeConfig(max_model_len=65536, kv_cache_dtype="fp8", **flags)
    return plan(get_model(NVFP4), parse_gpus(gpus), cfg)


def _wsl_notes(p) -> list[str]:
    return [n for n in p.notes if "under WSL2" in n]


def test_a_wsl2_plan_names_the_host_s_share_its_measured_spread_and_the_line_to_read_back():
    from doctor.planner.coefficients import calibration

    spread = calibration()["classes"]["consumer Blackwell under WSL2"]["run_to_run_gib"]
    [note] = _wsl_notes(_plan("1xRTX5090-WSL", backend_version="0.20.0"))
    assert "not known before the boot" in note
    assert f"{spread:.2f} GiB" in note
    assert "qwen-doctor plan --from-log" in note and '"Available KV cache memory"' in note


def test_native_linux_plans_of_the_same_card_carry_no_wsl2_note():
    assert _wsl_notes(_plan("1xRTX5090", backend_version="0.20.0")) == []


def test_the_line_to_read_back_follows_the_engine_and_vllm_0_34_s_extensible_cache():
    [sglang] = _wsl_notes(_plan("1xRTX5090-WSL", backend="sglang"))
    assert "SGLang sizes its pools" in sglang and '"KV Cache is allocated"' in sglang
    [extensible] = _wsl_notes(_plan("1xRTX5090-WSL", backend_version="0.34.0"))
    assert '"Memory after warmup"' in extensible


def test_a_re_plan_from_a_log_does_not_ask_for_the_log_again():
    from doctor.planner.plan import Measured

    p = plan(get_model(NVFP4), parse_gpus("1xRTX5090-WSL"),
             ServeConfig(max_model_len=65536, kv_cache_dtype="fp8", backend_version="0.20.0"),
             Measured(weights_bytes=int(21.86 * GIB), overhead_bytes=int(4 * GIB)))
    assert _wsl_notes(p) == []


def test_a_class_band_is_never_narrower_than_the_engine_s_own_run_to_run_spread(monkeypatch):
    import doctor.planner.bands as bands

    # a class whose few boots happened to land close, though one configuration booted twice moved 0.5 GiB
    classes = {"consumer Blackwell under WSL2": {"boots": 5, "gap_gib": 0.05, "meets_target": True,
                                                 "run_to_run_gib": 0.5, "features": ["nvfp4 checkpoints"]}}
    monkeypatch.setattr(bands, "calibration", lambda: {"classes": classes, "terms": {}})
    p = _plan("1xRTX5090-WSL", backend_version="0.20.0")
    rel, why = bands.plan_band(p)
    cache = min(r.cache_bytes for r in p.ranks)
    assert rel == pytest.approx(0.5 * GIB / cache)
    assert "± 0.50 GiB" in why


def test_the_shipped_run_to_run_spread_is_the_widest_of_every_repeated_wsl2_configuration():
    import importlib.util
    from pathlib import Path

    from doctor.planner.accuracy import partial_residuals
    from doctor.planner.coefficients import calibration

    path = Path(__file__).resolve().parent.parent / "bench" / "plan_accuracy.py"
    spec = importlib.util.spec_from_file_location("plan_accuracy", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    entries = bench.load_entries()
    repeats = [(name, label, logged) for name, label, logged in
               bench.repeated_boots(entries, partial_residuals(entries)) if name.endswith("under WSL2")]
    # the Qwen3.6 pair of the published boots, and the pairs of two other models booted on the same WSL2 machine
    assert len(repeats) >= 3 and all(len(logged) >= 2 and None not in logged for _, _, logged in repeats)
    widest = max(max(logged) - min(logged) for _, _, logged in repeats)
    assert calibration()["classes"]["consumer Blackwell under WSL2"]["run_to_run_gib"] == pytest.approx(widest, abs=0.005)
