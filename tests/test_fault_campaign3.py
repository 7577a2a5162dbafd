"""The third fault campaign's classes (issue 23): inputs that parse but hold what their reader did not expect.
Each is refused in one line with exit 2 (never an internal error), and nothing the user had changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.terminal import on_terminal
from tests.test_cli_check import qd
from tests.test_output_safety import assert_refused, snapshot

ROOT = Path(__file__).resolve().parents[1]
USER_REPORT = "PRECIOUS: the user's earlier report\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "h200.json", tmp_path / "b.json")
    (tmp_path / "report.json").write_text(USER_REPORT)
    stable = (ROOT / "profiles" / "vllm-stable.yaml").read_text()
    # A valued engine option written as a switch: YAML `true` renders a bare `--reasoning-parser`.
    (tmp_path / "bare.yaml").write_text(stable.replace("reasoning-parser: qwen3", "reasoning-parser: true"))
    multinode = (ROOT / "profiles" / "sglang-multinode.yaml").read_text()
    (tmp_path / "bare-multinode.yaml").write_text(multinode.replace('dist-init-addr: "{head_address}:20000"',
                                                                    "dist-init-addr: true"))
    return tmp_path


VALUED_AS_SWITCH = [
    (["deploy", "--profile", "bare.yaml", "--dry-run"], "--reasoning-parser needs a value"),
    (["profiles", "show", "bare.yaml", "--render"], "--reasoning-parser needs a value"),
    (["profiles", "show", "bare-multinode.yaml", "--render"], "--dist-init-addr needs a value"),
    (["deploy", "--profile", "bare-multinode.yaml", "--dry-run"], "--dist-init-addr needs a value"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--flag", "reasoning-parser"],
     "--reasoning-parser needs a value"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--flag", "served-model-name"],
     "--served-model-name needs a value"),
]


@pytest.mark.parametrize("argv, words", VALUED_AS_SWITCH, ids=[" ".join(a) for a, _ in VALUED_AS_SWITCH])
def test_a_valued_engine_option_given_as_a_switch_is_a_bad_profile(work: Path, argv: list[str], words: str):
    before = snapshot(work)
    assert_refused(qd(*argv, cwd=work), words)
    assert snapshot(work) == before


def _record(runs: Path, name: str, **fields: object) -> Path:
    runs.mkdir(parents=True, exist_ok=True)
    record = {"pid": 4_000_001, "create_time": 5.0, "host": "127.0.0.1", "port": 8000, "profile": "p",
              "backend": "vllm", "log": "l", "started_at": "s", **fields}
    path = runs / name
    path.write_text(json.dumps(record))
    return path


def test_a_stale_record_is_removed_whatever_its_file_is_named(tmp_path: Path):
    """A record copied or renamed by hand is still the record --stop says it removed."""
    renamed = _record(tmp_path / "runs", "copied-by-hand.json")
    done = qd("deploy", "--stop", "all", env={"QWEN_DOCTOR_STATE_DIR": str(tmp_path)})
    assert done.returncode == 0 and "4000001: already gone (stale record removed)" in done.stderr, done.stderr
    assert not renamed.exists()


def test_deploy_status_shows_a_records_control_characters_escaped_even_on_a_terminal(tmp_path: Path):
    """click strips ANSI only from a pipe: on a terminal, a hand-edited record must not repaint the screen."""
    _record(tmp_path / "runs", "r.json", host="h\x1b[2J", profile="p\x9b31m", log="l\u202e")
    code, shown = _on_a_terminal("deploy", "--status", env={"QWEN_DOCTOR_STATE_DIR": str(tmp_path)})
    assert code == 0 and "4000001  stale  h:8000" in shown, shown
    assert not set(shown) & {"\x1b", "\x9b", "\u202e"}, shown


def _on_a_terminal(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The exit code of the CLI run with stdout on a pseudo-terminal, and what the terminal received."""
    done = on_terminal([sys.executable, "-m", "doctor", *argv],
                       {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})})
    return done.returncode, done.stdout.decode("utf-8", "replace")


EVIL = "X\x1b[2JY\x1b]0;owned\x07Z\x9b1m"


def test_a_rendered_command_shows_a_control_character_as_an_ansi_c_escape(tmp_path: Path):
    profile = tmp_path / "p.yaml"
    profile.write_text((ROOT / "profiles" / "vllm-stable.yaml").read_text() + f"env:\n  FOO: {json.dumps(EVIL)}\n")
    for argv in (["profiles", "show", str(profile), "--render"], ["deploy", "--profile", str(profile), "--dry-run"],
                 ["profiles", "show", "vllm-stable", "--set", f"model={EVIL}", "--render"]):
        code, shown = _on_a_terminal(*argv)
        assert code in (0, 1) and not set(shown) & {"\x1b", "\x07", "\x9b"}, (argv, shown)
        if argv[0] == "profiles":
            assert "$'X\\x1b[2JY\\x1b]0;owned\\x07Z\\x9b1m'" in shown, (argv, shown)


def test_plan_shows_a_bundles_gpu_name_escaped_on_a_terminal(tmp_path: Path):
    bundle = json.loads((FIXTURES / "h200.json").read_text())
    bundle["nvml"]["gpus"][0]["name"] = "NVIDIA H200" + EVIL
    (tmp_path / "b.json").write_text(json.dumps(bundle))
    code, shown = _on_a_terminal("plan", "--facts", str(tmp_path / "b.json"))
    assert code in (0, 1) and "H200X" in shown and not set(shown) & {"\x1b", "\x07", "\x9b"}, shown


DUMPS = sorted((FIXTURES / "env-dumps").glob("*.txt"))


@pytest.mark.parametrize("dump", DUMPS[:8], ids=[d.stem for d in DUMPS[:8]])
def test_a_collect_env_dump_with_cr_only_line_ends_reads_as_the_same_facts(dump: Path):
    from doctor.facts.envdump import parse

    text = dump.read_text(encoding="utf-8")
    assert parse(text.replace("\n", "\r"), "d") == parse(text, "d") == parse(text.replace("\n", "\r\n"), "d")


def test_a_reports_command_line_quotes_a_control_character_so_it_pastes_back():
    from types import SimpleNamespace

    from doctor.report.view import command_line

    line = command_line(SimpleNamespace(argv=["plan", "--model", "a\x1bb c"], command="plan"))
    assert line == "qwen-doctor plan --model $'a\\x1bb c'"
    assert command_line(SimpleNamespace(argv=["plan", "--model", "a b"], command="plan")) == "qwen-doctor plan --model 'a b'"


def test_a_deploy_flag_the_engine_does_not_have_is_one_line_on_stderr_and_exit_2(tmp_path: Path) -> None:
    """The progress line comes after the overrides are known to read: bad input leaves only its error."""
    done = subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", "vllm-stable", "--dry-run",
                           "--flag", "nosuch-flag=1"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_STATE_DIR": str(tmp_path / "s")})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nosuch-flag" in done.stderr, done.stderr
