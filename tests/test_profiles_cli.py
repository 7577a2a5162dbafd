"""`qwen-doctor profiles` through the real entry point: exit codes and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.cli.main import main
from tests.conftest import FIXTURES


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


def test_list_shows_every_profile(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "profiles", "list")
    assert code == 0 and "vllm-a100-8x" in out and "cpu-tiny" in out


def test_show_render_prints_env_and_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "profiles", "show", "cpu-tiny", "--render", "--set", "model_dir=/m")
    assert code == 0, err
    assert "export VLLM_CPU_KVCACHE_SPACE=1" in out and "  --model /m \\" in out


def test_malformed_profile_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nbackend: vllm\n")
    code, _, err = run(capsys, "profiles", "show", str(bad))
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(bad) in err and "Traceback" not in err


def test_check_against_a_bundle(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "profiles", "check", "vllm-fp8", "--from", str(FIXTURES / "a100-8x-nvlink.json"))
    assert code == 1 and "needs >= 8.9" in out
    assert out.splitlines()[0].startswith("profile vllm-fp8 (vllm) on bundle ") and "not met" in out.splitlines()[0]


def test_render_is_judged_against_the_chosen_backend_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "profiles", "show", "sglang-interactive", "--render", "--backend-version", "0.5.12")
    assert code == 1 and "--mamba-radix-cache-strategy" in err and "outside the profile's range" in err
    code, _, err = run(capsys, "profiles", "show", "sglang-interactive", "--render", "--backend-version", "0.5.23")
    assert code == 0 and "schema sglang 0.5.23: ok" in err
