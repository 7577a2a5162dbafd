"""`plan --from-log` with an SGLang boot log: the ServerArgs dump and the weight-load lines are read, the logged
boot is reproduced from its own figures, and other flags are planned on that measured base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from doctor.cli.main import cli
from doctor.models import get_model
from doctor.planner.config import ServeConfig
from doctor.planner.errors import PlanInputError
from doctor.planner.replan import sglang_logged_config, sglang_replan
from doctor.planner.sglang_bootlog import parse_sglang_boot_log, read_sglang_boot_log

REHEARSAL = Path(__file__).parent / "fixtures" / "h200-rehearsal"
BOOTS = [("sglang-bf16-vision", "Qwen/Qwen3.5-35B-A3B"), ("sglang-fp8-vision", "Qwen/Qwen3.5-35B-A3B-FP8")]


def test_the_server_args_and_memory_lines_are_read() -> None:
    boot = read_sglang_boot_log(str(REHEARSAL / "sglang-bf16-vision.log"))
    assert (boot.mem_fraction_static, boot.context_length, boot.tp, boot.pp) == (0.8, 262144, 1, 1)
    assert (boot.kv_cache_dtype, boot.max_running_requests, boot.radix_cache) == ("auto", None, True)
    assert (boot.avail_before_gib, boot.weights_gib) == (139.07, 65.49)
    assert (boot.kv_tokens, boot.mamba_slots, boot.running) == (1261250, 361, 72)
    assert (boot.mamba_ssm_dtype, boot.mamba_radix_strategy, boot.overlap_schedule, boot.page_size) == \
        (None, "extra_buffer", True, 1)


@pytest.mark.parametrize(("name", "model"), BOOTS)
def test_the_logged_boot_is_reproduced_from_its_own_figures(name: str, model: str) -> None:
    boot = read_sglang_boot_log(str(REHEARSAL / f"{name}.log"))
    logged = sglang_logged_config(boot, ServeConfig(backend_version="0.5.16"))
    rank = sglang_replan(get_model(model), boot, logged, logged).ranks[0]
    assert abs(rank.kv_tokens / boot.kv_tokens - 1) < 0.001
    assert (rank.mamba_slots, rank.max_running_requests) == (boot.mamba_slots, boot.running)


def test_other_flags_are_planned_on_the_measured_base() -> None:
    boot = read_sglang_boot_log(str(REHEARSAL / "sglang-bf16-vision.log"))
    logged = sglang_logged_config(boot, ServeConfig(backend_version="0.5.16"))
    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    same = sglang_replan(spec, boot, logged, logged).kv_tokens
    fp8_kv = sglang_replan(spec, boot, logged, logged.with_(kv_cache_dtype="fp8_e4m3")).kv_tokens
    more = sglang_replan(spec, boot, logged, logged.with_(mem_fraction_static=0.85)).kv_tokens
    assert 1.9 < fp8_kv / same < 2.1          # the KV cell halves; the mamba share of the pool stays
    assert more > same


def test_a_log_without_the_weight_load_is_not_an_sglang_boot(tmp_path: Path) -> None:
    assert parse_sglang_boot_log("[2026-12-03 06:03:07] server_args=ServerArgs(mem_fraction_static=0.8)\n") is None
    log = tmp_path / "cut.log"
    log.write_text("[2026-12-03 06:03:07] server_args=ServerArgs(mem_fraction_static=0.8, tp_size=1)\n")
    with pytest.raises(PlanInputError, match="Load weight end"):
        read_sglang_boot_log(str(log))


def test_the_cli_reads_an_sglang_log_and_says_the_figures_are_measured(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = CliRunner().invoke(cli, ["plan", "--from-log", str(REHEARSAL / "sglang-bf16-vision.log"),
                                      "--backend-version", "0.5.16", "--context-length", "131072", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "with sglang 0.5.16" in result.output and "overhead (measured)" in result.output
    assert "131,072" in result.output
    assert json.loads(out.read_text())["schema"] == "qwen-doctor.report"
