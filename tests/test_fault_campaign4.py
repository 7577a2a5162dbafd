"""The fourth fault campaign's classes: bad input that used to change the user's files, hide their words, or
reach past what a reader expects. Each is refused in one line with exit 2, or read as it is, and nothing the user
had changes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.hostile_server import ENDLESS, TRICKLE, hostile

ROOT = Path(__file__).resolve().parents[1]
USER_REPORT = "PRECIOUS: the user's earlier report\n"


def _deploy(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", "vllm-stable", "--dry-run", *argv],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_STATE_DIR": str(tmp_path / "s")})


BAD_DEPLOY_INPUT = [
    (["--flag", "nosuch-flag=1"], "nosuch-flag"),
    (["--flag", "max-model-len=abc"], "invalid int value"),
    (["--set", "novalue"], "--set expects NAME=VALUE"),
    (["--flag", "reasoning-parser"], "--reasoning-parser needs a value"),
    (["--flag", "max-model-len=1.5"], "invalid int value: '1.5'"),  # vLLM's human_readable_int refuses it
]


@pytest.mark.parametrize("argv, words", BAD_DEPLOY_INPUT, ids=[" ".join(a) for a, _ in BAD_DEPLOY_INPUT])
@pytest.mark.parametrize("target", [["-o", "report.json"], ["--output", "report.html"], ["--report", "report.md"]])
def test_bad_deploy_input_leaves_the_users_report_file_as_it_was(tmp_path: Path, argv: list[str], words: str,
                                                                  target: list[str]) -> None:
    report = tmp_path / target[1]
    report.write_text(USER_REPORT)
    done = _deploy(tmp_path, *argv, *target)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert report.read_text() == USER_REPORT
    assert sorted(p.name for p in tmp_path.iterdir()) == [report.name]


SHORT_VALUE_THEN_A_WORD = {
    "password: 1\nretry": "password: [REDACTED]\nretry",
    "api_key=x\nnext step": "api_key=[REDACTED]\nnext step",
    "token: ab\ncd ef": "token: [REDACTED]\ncd ef",
    "passwd: abc\nRetry now": "passwd: [REDACTED]\nRetry now",
    "secret=12\n  then\nok": "secret=[REDACTED]\n  then\nok",
}


@pytest.mark.parametrize("text", SHORT_VALUE_THEN_A_WORD)
def test_a_short_secret_value_at_a_line_end_keeps_the_next_lines_word(text: str) -> None:
    from doctor.redact import redact_text

    assert redact_text(text) == SHORT_VALUE_THEN_A_WORD[text]


@pytest.mark.parametrize("head, tail", [("hf_Zx81kQ2mP9", "vB7nL3cR5tY0wE"), ("password: Zx81kQ", "2mP9vB7nL3"),
                                        ("Bearer sk-ant-api03-Zq8xWv3Lm9Np2Rt5Yb7Kc", "4Hd6Fj1Gs0Ae3B")])
def test_a_token_cut_by_a_line_width_is_still_hidden_whole(head: str, tail: str) -> None:
    from doctor.redact import redact_text

    out = redact_text(f"the key was {head}\n{tail} (rotated)")
    assert tail not in out and head.split()[-1] not in out and out.endswith("\n[REDACTED] (rotated)"), out


FOREVER = {"trickle": TRICKLE, "endless": ENDLESS}


@pytest.mark.parametrize("mode, error", [("trickle", "ReplyTooSlow"), ("endless", "ReplyTooLarge")])
def test_a_reply_that_never_ends_is_cut_by_the_clients_total_bounds(mode: str, error: str) -> None:
    """httpx's timeouts are per read: a byte every 0.2 s, or endless chunks, would keep a request alive forever."""
    from doctor import boundedhttp

    async def post(url: str) -> None:
        async with boundedhttp.bounded_async_client(1.5, max_bytes=4 << 20, base_url=url, trust_env=False) as client:
            await client.post("/v1/chat/completions", json={})

    with hostile(other=FOREVER[mode]) as url:
        with pytest.raises(getattr(boundedhttp, error)):
            asyncio.run(post(url))
        with pytest.raises(getattr(boundedhttp, error)), \
                boundedhttp.bounded_client(1.5, max_bytes=4 << 20, trust_env=False) as client:
            client.get(f"{url}/metrics")


@pytest.mark.parametrize("models", [b'{"data": 5}', b'{"data": [{"id": "m"}], "data": 5}', b"[1, 2]",
                                    b'{"data": [{"id": 7}, {"id": null}, "m"]}'])
def test_probe_of_a_model_list_of_another_shape_is_one_line_and_exit_2(models: bytes) -> None:
    with hostile(models=models) as url:
        done = subprocess.run([sys.executable, "-m", "doctor", "probe", url], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "/v1/models" in done.stderr and "internal error" not in done.stderr, done.stderr


def test_a_server_reply_naming_a_key_twice_is_refused_naming_the_key() -> None:
    from doctor.safeio import BadReply, reply_json

    with pytest.raises(BadReply, match='the key "usage" appears twice'):
        reply_json(b'{"choices": [], "usage": {"completion_tokens": 1}, "usage": []}')
    assert reply_json(b'{"a": {"usage": 1}, "usage": 2}') == {"a": {"usage": 1}, "usage": 2}


def test_probe_of_a_server_that_trickles_every_answer_ends_with_each_exercise_failed() -> None:
    with hostile(other=TRICKLE) as url:
        done = subprocess.run([sys.executable, "-m", "doctor", "probe", url, "--request-timeout", "1", "--burst", "1",
                               "--format", "json"], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    results = {r["check_id"]: r for r in json.loads(done.stdout)["results"]}
    assert done.returncode == 1 and "ReplyTooSlow" in results["QD-DEPLOY-CHAT"]["summary"], done.stderr


def _program(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_a_program_that_writes_without_end_is_killed_at_the_output_bound(tmp_path: Path) -> None:
    from doctor.boundedrun import OutputTooLarge, run_bounded

    with pytest.raises(OutputTooLarge, match="wrote more than 1 MiB"):
        run_bounded([str(_program(tmp_path, "spew", "exec yes xxxxxxxxxxxxxxxx"))], 60, max_bytes=1 << 20)
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(["sleep", "30"], 0.5)
    done = run_bounded(["sh", "-c", "cat; echo out; echo err >&2; exit 3"], 30)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")  # stdin is /dev/null, not ours


@pytest.mark.parametrize("body, words", [
    ("exec yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "wrote more than 16 MiB"),
    ("echo 'ModuleNotFoundError: No module named json' >&2; exit 1", "exited with code 1: ModuleNotFoundError"),
    ("echo '{\"packages\": {}, \"seconds\": 1, \"found\": []}'", "its answer has no 'complete'"),
])
def test_deploy_with_a_python_that_is_no_interpreter_is_one_line_and_exit_2(tmp_path: Path, body: str,
                                                                             words: str) -> None:
    done = _deploy(tmp_path, "--python", str(_program(tmp_path, "python", body)))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr


PASSWORD = "Tr0ub4dor-and-3-horses"
COMMAND_LINE_FORMS = {
    "netrc on one line": f"machine pypi.example.com login me password {PASSWORD}",
    "netrc a token a line": f"machine pypi.example.com\n  login me\n  password {PASSWORD}\n",
    "mysql -pPASSWORD": f"mysqldump -u root -p{PASSWORD} --all-databases > dump.sql",
    "sshpass -p": f"sshpass -p '{PASSWORD}' ssh root@node-2 nvidia-smi",
    "echo into --password-stdin": f"echo {PASSWORD} | docker login -u robot --password-stdin nvcr.io",
    "printf into --password-stdin": f"printf '%s' \"{PASSWORD}\" | podman login --password-stdin quay.io",
    "wandb login KEY": "wandb login --relogin 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c",
    "Digest auth-params": f'Authorization: Digest username="me", realm="r", response="{PASSWORD}"',
}


@pytest.mark.parametrize("form", sorted(COMMAND_LINE_FORMS))
def test_a_secret_in_a_tools_own_command_line_form_is_redacted_and_the_command_kept(form: str) -> None:
    from doctor.redact import REDACTED, redact_text

    text = COMMAND_LINE_FORMS[form]
    out = redact_text(text)
    secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" if "wandb" in text else PASSWORD
    assert secret not in out and secret[-10:] not in out and REDACTED in out, out
    assert out.split()[0] == text.split()[0] and out.count("\n") == text.count("\n"), out


@pytest.mark.parametrize("text, kept", [
    ("mysql -u root -p -h db", "mysql -u root -p -h db"),  # -p alone: the client prompts
    ("echo $REGISTRY_TOKEN | docker login --password-stdin", "echo $REGISTRY_TOKEN | docker login --password-stdin"),
    ("password required for login", "password required for login"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==, next", "Authorization: Basic [REDACTED], next"),
    ("Cookie: session=abc123def456\nINFO next line", "Cookie: [REDACTED]\nINFO next line"),
    ('Authorization: Digest username="u", response="6629fae4"\nINFO next', "Authorization: Digest [REDACTED]\nINFO next"),
])
def test_what_is_no_secret_around_those_forms_is_kept(text: str, kept: str) -> None:
    from doctor.redact import redact_text

    assert redact_text(text) == kept


@pytest.mark.parametrize("argv", [["profiles", "show", "{p}", "--render"], ["deploy", "--profile", "{p}", "--dry-run"],
                                  ["plan", "--gpus", "2xH200", "--profile", "{p}"], ["lint", "{p}"]])
def test_a_profile_naming_a_key_twice_is_refused_naming_both_lines(tmp_path: Path, argv: list[str]) -> None:
    """PyYAML keeps the last of two `port:` lines silently; YAML 1.2.2 (3.2.1.1) wants each key once."""
    stable = (ROOT / "profiles" / "vllm-stable.yaml").read_text()
    profile = tmp_path / "p.yaml"
    profile.write_text(stable.replace("port: 8000\n", "port: 8000\nport: 9000\n"))
    first = stable[:stable.index("port: 8000")].count("\n") + 1
    done = subprocess.run([sys.executable, "-m", "doctor", *[a.format(p=profile) for a in argv]], capture_output=True,
                          text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                       "QWEN_DOCTOR_STATE_DIR": str(tmp_path / "s")})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"the key 'port' appears twice in one mapping (first on line {first})" in done.stderr, done.stderr


def test_a_merge_key_and_the_keys_that_override_it_are_no_duplicates() -> None:
    from doctor.safeyaml import load_yaml

    assert load_yaml("a: &a {x: 1, y: 1}\nb:\n  <<: *a\n  x: 2\n", "m.yaml") == {"a": {"x": 1, "y": 1},
                                                                                 "b": {"x": 2, "y": 1}}


@pytest.mark.parametrize("command", [["check", "--from", str(ROOT / "tests/fixtures/h200.json")], ["collect"],
                                     ["plan", "--gpus", "1xH200"]])
def test_a_report_file_named_with_a_newline_is_reported_on_one_line_as_the_shell_reads_it(tmp_path: Path,
                                                                                          command: list[str]) -> None:
    target = tmp_path / "new\nline.json"
    done = subprocess.run([sys.executable, "-m", "doctor", *command, "-o", str(target)], capture_output=True,
                          text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1) and target.exists(), done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"wrote $'{tmp_path}/new\\x0aline.json' ("), done.stderr


@pytest.mark.parametrize("mode, words", [("endless", "the reply passed 64 MiB"), ("trickle", "not whole within 1.5 s")])
def test_a_package_index_page_that_never_ends_is_an_unreachable_index(mode: str, words: str) -> None:
    """`check --index` waited for such a page forever (the worker thread is joined at exit) and grew with it."""
    from doctor import pkgindex

    with hostile(other=FOREVER[mode]) as url:
        with pytest.raises(pkgindex.IndexUnreachable, match=words):
            pkgindex.versions("vllm", pkgindex.IndexConfig(f"{url}/simple"), 1.5)


def test_a_fifo_in_the_hf_cache_is_named_not_read(tmp_path: Path) -> None:
    """A FIFO where a shard or the checkpoint index should be blocked `check --hf` on its open()."""
    from doctor.net.hf_cache import _snapshot

    os.mkfifo(tmp_path / "model.safetensors")
    assert "it is a FIFO (named pipe), not a regular file" in _snapshot(tmp_path)["shards"][0]["error"]
    os.mkfifo(tmp_path / "model.safetensors.index.json")
    index = _snapshot(tmp_path)["index"]
    assert index["ok"] is False and "FIFO" in index["error"], index


def test_a_fifo_for_a_revision_ref_in_the_hf_cache_reads_as_no_ref(tmp_path: Path) -> None:
    from doctor.net.hf_cache import _commit

    (tmp_path / "refs").mkdir()
    os.mkfifo(tmp_path / "refs" / "main")
    (tmp_path / "snapshots" / "main").mkdir(parents=True)
    assert _commit(tmp_path, "main") == "main"
