"""`qwen-doctor check` and `collect` as a user and a CI job see them: output, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]


def qd(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=full_env,
                          cwd=cwd or ROOT, timeout=60)


def test_h200_bundle_reproduces_its_verdicts_in_json():
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--format", "json")
    report = json.loads(done.stdout)
    verdicts = {(r["check_id"], r["subject"]): r["status"] for r in report["results"]}
    assert verdicts[("QD-DRV-001", None)] == "ok"
    assert verdicts[("QD-DRV-002", None)] == "ok"
    assert verdicts[("QD-GPU-004", None)] == "ok"
    assert verdicts[("QD-HOST-003", None)] == "fail"
    assert report["facts_summary"]["gpus"] == "1 x NVIDIA H200"
    assert done.returncode == 1


def test_text_output_groups_checks_with_fix_under_failures():
    done = qd("check", "--from", str(FIXTURES / "pcie-4x-l40s-docker.json"))
    out = done.stdout
    assert "[✗] host" in out and "[!] topology" in out or "[✗] topology" in out
    shm = out.index("QD-HOST-001")
    assert "→ docker run --ipc=host" in out[shm:]
    assert out.rstrip().splitlines()[-1].startswith("Issues in ")


def test_only_a_passing_family_exits_zero_and_fail_on_warn_exits_one():
    ok = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "QD-DRV")
    assert ok.returncode == 0, ok.stdout
    warn = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "QD-HOST-002", "--fail-on", "warn")
    assert warn.returncode == 1
    tolerant = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "QD-HOST-002")
    assert tolerant.returncode == 0


def test_skip_removes_checks():
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--skip", "QD-HOST", "--skip", "QD-VER",
              "--format", "json")
    ids = {r["check_id"] for r in json.loads(done.stdout)["results"]}
    assert not any(i.startswith(("QD-HOST", "QD-VER")) for i in ids)
    assert done.returncode == 0


def test_list_shows_every_check_with_description():
    done = qd("check", "--list")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert any(l.startswith("QD-DRV-001") and "NVIDIA driver loaded" in l for l in lines)
    assert len({l.split()[0] for l in lines}) == len(lines) >= 20


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00", b"{}", b'{"schema": "qwen-doctor.facts"'])
def test_corrupt_bundle_is_one_line_and_exit_2(tmp_path: Path, content: bytes):
    bad = tmp_path / "bundle.json"
    bad.write_bytes(content)
    done = qd("check", "--from", str(bad))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("qwen-doctor: error:")
    assert "Traceback" not in done.stderr
    assert bad.read_bytes() == content


def test_missing_bundle_and_unknown_check_and_bad_option_exit_2(tmp_path: Path):
    assert qd("check", "--from", str(tmp_path / "nope.json")).returncode == 2
    unknown = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "QD-NOPE")
    assert unknown.returncode == 2 and "no check matches 'QD-NOPE'" in unknown.stderr
    assert qd("check", "--backend", "tgi").returncode == 2
    assert qd("frobnicate").returncode == 2


def test_live_check_on_this_gpu_less_machine_runs_host_checks_for_real():
    done = qd("check", "--format", "json")
    report = json.loads(done.stdout)
    by_id = {r["check_id"]: r for r in report["results"]}
    assert by_id["QD-DRV-001"]["status"] == "fail"
    assert by_id["QD-GPU-002"]["status"] == "skip"
    assert by_id["QD-HOST-001"]["status"] in ("ok", "warn", "fail")
    assert by_id["QD-HOST-001"]["evidence"]["shm_bytes"] > 0
    assert done.returncode == 1


def test_collect_writes_a_bundle_that_check_reads(tmp_path: Path):
    out = tmp_path / "bundle.json"
    done = qd("collect", "-o", str(out), env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123"})
    assert done.returncode == 0, done.stderr
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in out.read_text()
    assert json.loads(out.read_text())["env"]["HF_TOKEN"] == "[REDACTED]"
    assert qd("check", "--from", str(out), "--format", "json").returncode in (0, 1)


def test_collect_into_missing_directory_is_exit_2(tmp_path: Path):
    done = qd("collect", "-o", str(tmp_path / "no" / "such" / "b.json"))
    assert done.returncode == 2 and "does not exist" in done.stderr


PLUGIN = '''
from doctor.registry import check
from doctor.results import ok, fail

@check("ACME-GPU-001", "ACME fleet tag present", category="acme", severity="low")
def acme_tag(ctx):
    """The ACME fleet label is set on the machine."""
    return ok("tag present") if ctx.facts.env.get("NCCL_DEBUG") else fail("no tag", fix=["set the tag"])
'''


def _install_plugin(tmp_path: Path, body: str, value: str = "acme_checks") -> Path:
    (tmp_path / "acme_checks.py").write_text(body)
    dist = tmp_path / "acme_checks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-checks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[qwen_doctor.checks]\nacme = {value}\n")
    return tmp_path


def test_third_party_check_registers_through_the_entry_point_group(tmp_path: Path):
    site = _install_plugin(tmp_path, PLUGIN)
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    listed = qd("check", "--list", env=env)
    assert "ACME-GPU-001" in listed.stdout and "plugin acme" in listed.stdout
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "ACME", "--format", "json", env=env)
    assert [r["status"] for r in json.loads(done.stdout)["results"]] == ["fail"]
    assert "ACME-GPU-001" not in qd("check", "--list", "--no-plugins", env=env).stdout
    assert "ACME-GPU-001" not in qd("check", "--list", env={**env, "QWEN_DOCTOR_DISABLE_PLUGIN_AUTOLOAD": "1"}).stdout


def test_broken_plugin_is_an_error_result_not_a_crash(tmp_path: Path):
    site = _install_plugin(tmp_path, "raise ImportError('acme needs libfoo')\n")
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--format", "json", env=env)
    plugin = [r for r in json.loads(done.stdout)["results"] if r["category"] == "plugins"]
    assert plugin[0]["status"] == "error" and "libfoo" in plugin[0]["summary"]
    assert done.returncode == 1


def test_crashing_check_becomes_an_error_result(tmp_path: Path):
    body = PLUGIN.split("    return ")[0] + "    return ok(str(1 / 0))\n"
    site = _install_plugin(tmp_path, body)
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "ACME", "--format", "json", env=env)
    result = json.loads(done.stdout)["results"][0]
    assert result["status"] == "error" and "ZeroDivisionError" in result["summary"]


def test_profile_sets_backend_and_parallel_sizes_for_the_checks():
    done = qd("check", "--from", str(FIXTURES / "a100-8x-nvlink.json"), "--profile", "vllm-a100-8x",
              "--only", "QD-GPU-001", "--only", "QD-PROF-001", "--only", "QD-PLAN", "--format", "json")
    report = json.loads(done.stdout)
    assert report["command"].startswith("check --profile vllm-a100-8x")
    statuses = {r["check_id"]: r["status"] for r in report["results"]}
    assert statuses == {"QD-GPU-001": "ok", "QD-PROF-001": "ok", "QD-PLAN-001": "ok", "QD-PLAN-002": "ok"}
    assert done.returncode == 0


def test_profile_needing_more_gpus_than_the_machine_has_fails():
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--profile", "vllm-stable", "--only", "QD-GPU-001")
    assert done.returncode == 1 and "needs 2 GPUs" in done.stdout


def test_profile_and_contradicting_backend_or_unknown_profile_exit_2():
    both = qd("check", "--from", str(FIXTURES / "h200.json"), "--profile", "vllm-stable", "--backend", "sglang")
    assert both.returncode == 2 and "contradicts" in both.stderr
    assert qd("check", "--from", str(FIXTURES / "h200.json"), "--profile", "no-such-profile").returncode == 2


def test_log_option_adds_matched_remedies_as_results(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text("INFO starting\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--only", "QD-DRV", "--log", str(log), "--format", "json")
    results = json.loads(done.stdout)["results"]
    matched = [r for r in results if r["check_id"].startswith("QD-R-")]
    assert matched and matched[0]["status"] == "fail"
    assert done.returncode == 1


def test_unreadable_log_is_exit_2_before_anything_runs(tmp_path: Path):
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--log", str(tmp_path / "absent.log"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
