"""The fifth fault campaign's classes: a server that sends its reply's head one byte at a time, a bundle naming a
key twice, secret forms the redactor passed over, a module of the current folder shadowing the standard library.
Each is refused in one line with exit 2, cut at its bound, or hidden, and nothing the user had changes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.hostile_server import GZIP_BOMB, SLOW_HEAD, hostile

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "a100-8x-nvlink.json"


def _doctor(cwd: Path, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_STATE_DIR": str(cwd / "s")})


def test_a_head_sent_one_byte_at_a_time_ends_at_the_clients_deadline() -> None:
    """httpx bounds each read, not the head: a byte every 0.2 s would keep the sync client waiting for hours."""
    from doctor import boundedhttp

    async def get(url: str) -> None:
        async with boundedhttp.bounded_async_client(1.5, base_url=url) as client:
            await client.get("/metrics")

    def sync_get(url: str) -> None:
        with boundedhttp.bounded_client(1.5) as client:
            client.get(f"{url}/metrics")

    with ThreadPoolExecutor(1) as pool, hostile(other=SLOW_HEAD) as url:  # the server stops first
        started = time.monotonic()
        with pytest.raises(boundedhttp.ReplyTooSlow):
            pool.submit(sync_get, url).result(timeout=10)  # without the bound: a TimeoutError here
        assert time.monotonic() - started < 5
        with pytest.raises(boundedhttp.ReplyTooSlow):
            asyncio.run(get(url))


def test_the_sync_client_still_reads_a_whole_reply_and_reuses_its_connection() -> None:
    from doctor import boundedhttp

    with hostile(other=b'{"ok": true}') as url, boundedhttp.bounded_client(5.0) as client:
        assert [client.get(f"{url}/x").json() for _ in range(3)] == [{"ok": True}] * 3


def test_probe_of_a_server_whose_head_never_ends_fails_each_exercise_in_time(tmp_path: Path) -> None:
    with hostile(other=SLOW_HEAD) as url:
        done = _doctor(tmp_path, "probe", url, "--request-timeout", "1", "--burst", "1", "--format", "json")
    results = {r["check_id"]: r for r in json.loads(done.stdout)["results"]}
    assert done.returncode == 1 and "ReplyTooSlow" in results["QD-DEPLOY-CHAT"]["summary"], done.stderr


@pytest.mark.parametrize("command", [["check", "--from"], ["plan", "--facts"], ["profiles", "suggest", "--from"]])
def test_a_bundle_naming_a_key_twice_is_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    """A collector never writes a key twice; a bundle that does was edited, and which value counts is a guess."""
    text = FIXTURE.read_text()
    bundle = tmp_path / "bundle.json"
    bundle.write_text(text.replace('{', '{"schema_version": "x", ', 1) if '"schema_version"' in text else
                      text.replace('{', '{"host": {}, ', 1))
    before = bundle.read_bytes()
    done = _doctor(tmp_path, *command, str(bundle))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "appears twice" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert bundle.read_bytes() == before


@pytest.mark.parametrize("text, shown", [
    ("password\tTr0ub4dor-and-3", "password\t[REDACTED]"),
    ("  HF_TOKEN\t\thf_Zq8xWv3Lm9Np2Rt5Yb\tset", "  HF_TOKEN\t\t[REDACTED]\tset"),
    ("api_key\tq7x", "api_key\t[REDACTED]"),
    ("the token\tmoved on", "the token\tmoved on"),  # a tab inside prose is no table row
    ("CUDA error: out of memory password\tTr0ub4dor-and-3", "CUDA error: out of memory password\t[REDACTED]"),
    ("key\tvalue", "key\tvalue"),
])
def test_a_secret_named_column_then_a_tab_is_a_table_row_whose_value_is_hidden(text: str, shown: str) -> None:
    from doctor.redact import redact_text

    assert redact_text(text) == shown


def test_a_short_secret_is_hidden_wherever_it_stands_as_a_word_in_the_document() -> None:
    from doctor.redact import redact_document

    doc = {"env": {"HF_TOKEN": "q7x", "API_KEY": "zk9p", "PASSWORD": "1234"},
           "log": ["token q7x rejected", "auth with zk9p failed", "port 1234 of q7xa", "password: ab9"], "x": "saw ab9"}
    assert redact_document(doc)["log"] == ["token [REDACTED] rejected", "auth with [REDACTED] failed",
                                           "port 1234 of q7xa", "password: [REDACTED]"]
    assert redact_document(doc)["x"] == "saw [REDACTED]"


@pytest.mark.parametrize("module", ["secrets", "yaml", "click", "json", "httpx"])
def test_python_m_doctor_run_from_a_folder_holding_a_module_of_that_name_does_not_import_it(
        tmp_path: Path, module: str) -> None:
    (tmp_path / f"{module}.py").write_text("import sys\nsys.stderr.write('SHADOWED\\n')\nsys.exit(9)\n")
    done = subprocess.run([sys.executable, "-m", "doctor", "remedies", "list"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and "SHADOWED" not in done.stderr, done.stderr


def test_an_interpreter_qwen_doctor_runs_to_read_something_does_not_import_the_current_folders_modules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.boundedrun import run_bounded

    (tmp_path / "secrets.py").write_text("raise SystemExit('SHADOWED')\n")
    monkeypatch.chdir(tmp_path)
    done = run_bounded([sys.executable, "-c", "import secrets; print(secrets.token_hex(2))"], 60)
    assert done.returncode == 0 and len(done.stdout.strip()) == 4, done.stderr


def test_collect_redacts_every_fact_it_writes_not_only_the_environments(tmp_path: Path) -> None:
    """The hf probe records HF_ENDPOINT as given (with its password) and the URL it asked."""
    out = tmp_path / "bundle.json"
    done = subprocess.run([sys.executable, "-m", "doctor", "collect", "--timeout", "5", "--hf", "-o", str(out)],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "HF_ENDPOINT": "https://me:Tr0ub4dor-and-3-horses@127.0.0.1:9"})
    assert done.returncode == 0, done.stderr
    bundle = out.read_text()
    assert "3-horses" not in bundle and "https://me:[REDACTED]@127.0.0.1:9" in bundle


@pytest.mark.parametrize("profile", ["vllm-stable", "sglang-stable"])
def test_deploy_refuses_a_model_config_nested_too_deep_before_its_progress_line(tmp_path: Path, profile: str) -> None:
    """One line on stderr, as for any bad input: not the progress line and then the error."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ' + "[" * 100000 + "]" * 100000 + "}")
    done = _doctor(tmp_path, "deploy", "--profile", profile, "--dry-run", "--model", str(model))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nested deeper" in done.stderr, done.stderr


def test_a_cache_in_a_folder_others_may_write_is_neither_read_nor_written(tmp_path: Path) -> None:
    """The cache holds compiled code: one planted in a shared cache folder must not run."""
    import marshal

    private = tmp_path / "private"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_CACHE": str(private)}
    check = [sys.executable, "-m", "doctor", "check", "--from", str(FIXTURE), "--format", "json"]
    subprocess.run(check, capture_output=True, timeout=180, env=env, cwd=tmp_path)
    cached = sorted((private / "validators").glob("*.marshal"))
    assert cached and all(oct(p.parent.stat().st_mode)[-3:] == "700" for p in cached)
    shared = tmp_path / "shared"
    (shared / "validators").mkdir(parents=True)
    for folder in (shared, shared / "validators"):
        folder.chmod(0o1777)
    marker = tmp_path / "planted-code-ran"
    planted = marshal.dumps(compile(f"open({str(marker)!r}, 'w').close()", "planted", "exec"))
    for path in cached:
        (shared / "validators" / path.name).write_bytes(planted)
    done = subprocess.run(check, capture_output=True, text=True, timeout=180, cwd=tmp_path,
                          env={**env, "QWEN_DOCTOR_CACHE": str(shared)})
    assert done.returncode in (0, 1) and json.loads(done.stdout)["results"], done.stderr
    assert not marker.exists()
    assert sorted(p.name for p in (shared / "validators").iterdir()) == [p.name for p in cached]


SECRET = "Qm7vX2pL9kR4tW8z"
NAME_VALUE_FORMS = {
    "kubernetes env": f"env:\n- name: HF_TOKEN\n  value: {SECRET}\n- name: NCCL_DEBUG\n  value: INFO",
    "kubernetes env, quoted": f'      - name: "VLLM_API_KEY"\n        value: "{SECRET}"',
    "ECS / JSON env": f'"environment": [{{"name": "HF_TOKEN", "value": "{SECRET}"}}, {{"name": "X", "value": "1"}}]',
    "AWS parameters": f'{{"ParameterKey": "DbPassword",\n  "ParameterValue": "{SECRET}"}}',
    ".NET / NuGet attributes": f'<add key="ClearTextPassword" value="{SECRET}" />',
    "Maven settings.xml": f"<server><id>x</id><password>{SECRET}</password></server>",
}


@pytest.mark.parametrize("form", NAME_VALUE_FORMS)
def test_a_secret_given_as_a_name_value_pair_or_an_xml_element_is_hidden(form: str) -> None:
    from doctor.redact import redact_text

    out = redact_text(NAME_VALUE_FORMS[form])
    assert SECRET not in out and "[REDACTED]" in out, out
    assert "INFO" in out or "INFO" not in NAME_VALUE_FORMS[form]


def test_a_name_value_pair_naming_a_secret_is_hidden_in_a_document_and_wherever_else_its_value_stands() -> None:
    from doctor.redact import redact_document

    doc = {"env": [{"name": "HF_TOKEN", "value": SECRET}, {"name": "NCCL_DEBUG", "value": "INFO"}],
           "log": f"401 for token {SECRET}"}
    assert redact_document(doc) == {"env": [{"name": "HF_TOKEN", "value": "[REDACTED]"},
                                            {"name": "NCCL_DEBUG", "value": "INFO"}], "log": "401 for token [REDACTED]"}


def test_a_gzip_bomb_meets_the_byte_bound_by_what_it_inflates_to() -> None:
    """256 KiB on the wire, 256 MiB inflated: the 4 MiB bound counts the inflated bytes."""
    from doctor import boundedhttp

    async def get(url: str) -> None:
        async with boundedhttp.bounded_async_client(30, max_bytes=4 << 20, base_url=url) as client:
            await client.get("/metrics")

    with hostile(other=GZIP_BOMB) as url:
        with pytest.raises(boundedhttp.ReplyTooLarge), boundedhttp.bounded_client(30, max_bytes=4 << 20) as client:
            client.get(f"{url}/metrics")
        with pytest.raises(boundedhttp.ReplyTooLarge):
            asyncio.run(get(url))


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw deflate"])
def test_a_compressed_reply_within_the_bound_is_read_whole(encoding: str) -> None:
    import zlib

    import httpx

    from doctor import boundedhttp

    body = json.dumps({"data": [{"id": "m" * 1000}] * 200}).encode()
    packed = {"gzip": lambda b: zlib.compress(b, wbits=16 + zlib.MAX_WBITS), "deflate": zlib.compress,
              "raw deflate": lambda b: zlib.compress(b, wbits=-zlib.MAX_WBITS)}[encoding](body)

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "gzip, deflate"
        return httpx.Response(200, headers={"Content-Encoding": encoding.split()[-1]}, content=packed)

    transport = boundedhttp.BoundedTransport(5.0)
    transport.inner = httpx.MockTransport(answer)  # type: ignore[assignment]
    with httpx.Client(transport=transport, headers=boundedhttp._accepting(None)) as client:
        assert client.get("http://x/").content == body


def test_probe_of_a_gzip_bomb_is_one_failed_exercise_each_not_gigabytes(tmp_path: Path) -> None:
    with hostile(other=GZIP_BOMB) as url:
        done = _doctor(tmp_path, "probe", url, "--burst", "1", "--format", "json")
    results = {r["check_id"]: r for r in json.loads(done.stdout)["results"]}
    assert done.returncode == 1 and "ReplyTooLarge" in results["QD-DEPLOY-CHAT"]["summary"], done.stderr


@pytest.mark.parametrize("endpoint", ["http://[::1", "http://hub.example:99999", "http://hub.example:abc"])
def test_an_hf_endpoint_that_is_no_url_is_a_probe_error_not_a_crash(tmp_path: Path, endpoint: str) -> None:
    from doctor.net import hf

    assert hf.probe_endpoint(endpoint, "Qwen/Qwen3.5-35B-A3B", "main", None, 1.0)["error"].endswith(
        "is not an http(s) URL")
    done = subprocess.run([sys.executable, "-m", "doctor", "check", "--hf", "--only", "QD-NET"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_ENDPOINT": endpoint})
    assert done.returncode in (0, 1) and "internal error" not in done.stderr, done.stderr


def test_a_package_index_url_that_is_no_url_is_unreachable_naming_no_password() -> None:
    from doctor import pkgindex

    with pytest.raises(pkgindex.IndexUnreachable, match=r"^http://\[::1 did not answer \(InvalidURL\)$"):
        pkgindex._from_url("http://[::1", "vllm", 2.0)
    with pytest.raises(pkgindex.IndexUnreachable) as refused:
        pkgindex._from_url("http://me:Tr0ub4dor-and-3-horses@127.0.0.1:9/simple", "vllm", 2.0)
    assert "horses" not in str(refused.value) and "127.0.0.1:9" in str(refused.value)


@pytest.mark.parametrize("spoil", ["deep record", "record of another shape", "folder others may write"])
def test_a_rehearsal_folder_that_cannot_be_trusted_is_built_again_beside_it(tmp_path: Path, spoil: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.rehearse import checkpoint

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    first = checkpoint.build("bf16", tmp_path / "cache")
    marker = first.path / checkpoint.MARKER
    if spoil == "deep record":
        marker.write_text("[" * 100000 + "]" * 100000)
    elif spoil == "record of another shape":
        marker.write_text('{"tokenizer": 5}')
    else:
        first.path.chmod(0o777)
    again = checkpoint.build("bf16", tmp_path / "cache")
    assert not again.cached and again.path != first.path and again.path.parent == first.path.parent
    assert (again.path / "config.json").is_file() and checkpoint.build("bf16", tmp_path / "cache").path == again.path


@pytest.mark.parametrize("command", [["collect", "--timeout", "5"], ["plan", "--gpus", "1xH200", "--format", "json"],
                                     ["check", "--from", str(FIXTURE), "--format", "json"]])
def test_a_report_lost_to_a_full_disk_is_exit_2_not_a_success(tmp_path: Path, command: list[str]) -> None:
    """`collect > bundle.json` on a full disk: exit 0 would tell CI the bundle was written."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "doctor", *command], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=180, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and done.stderr.splitlines()[-1] == (
        "qwen-doctor: error: cannot write to stdout: No space left on device; what it held is incomplete"), done.stderr


def test_a_reader_that_stops_reading_keeps_the_commands_exit_code(tmp_path: Path) -> None:
    done = subprocess.run(f"{sys.executable} -m doctor plan --gpus 1xH200 | head -c 1 >/dev/null; "
                          "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True,
                          text=True, timeout=180, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "0", done.stderr


def test_a_log_named_with_a_newline_keeps_the_reports_title_on_one_line(tmp_path: Path) -> None:
    """A name could otherwise forge a line of the report (`x.log\\n[✓] all checks passed`)."""
    name = "server.log\n[✓] all checks passed"
    (tmp_path / name).write_text("RuntimeError: CUDA error: out of memory\n")
    done = _doctor(tmp_path, "explain", name)
    assert done.stdout.splitlines()[0].startswith("qwen-doctor explain · server.log\\n[✓] all checks passed"), done.stdout
    assert "\n[✓] all checks passed" not in done.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's symlink needs root")
def test_a_run_record_in_a_shared_state_folder_is_not_written_through_another_users_symlink(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.deploy import runs
    from doctor.errors import DoctorError

    shared = tmp_path / "state"
    (shared / "runs").mkdir(parents=True)
    for folder in (shared, shared / "runs"):
        folder.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    monkeypatch.setenv("QWEN_DOCTOR_STATE_DIR", str(shared))
    record = runs.RunRecord(pid=4_000_003, create_time=5.0, host="h", port=8000, profile="p", backend="vllm",
                            log="l", started_at="s")
    record.path.symlink_to(victim)
    os.lchown(record.path, 54321, 54321)
    with pytest.raises(DoctorError, match="owned by uid 54321"):
        runs.save(record)
    assert victim.read_text() == "precious\n"
    record.path.unlink()
    assert json.loads(runs.save(record).read_text())["pid"] == 4_000_003


PARSER_ANSWERS = {"deep": '"[" * 100000 + "]" * 100000', "another shape": '\'{"x": 1}\'', "a list": "'[1, 2]'",
                  "issues of another shape": '\'{"version": 1, "issues": [5]}\'',
                  "a key twice": '\'{"version": 1, "issues": [], "issues": []}\''}


@pytest.mark.parametrize("answer", PARSER_ANSWERS)
def test_an_engine_interpreter_answering_the_flag_probe_oddly_is_one_line(tmp_path: Path, answer: str) -> None:
    python = tmp_path / "python"
    python.write_text(f"#!{sys.executable}\nprint('@@QWEN_DOCTOR_PROBE@@' + {PARSER_ANSWERS[answer]})\n")
    python.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "doctor", "profiles", "show", "vllm-stable", "--render", "--validate",
                           "real"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_VLLM_PYTHON": str(python)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "internal error" not in done.stderr and str(python) in done.stderr, done.stderr


def test_a_recipe_value_nested_too_deep_is_refused_in_one_line_not_a_recursion_error() -> None:
    from doctor.recipes.emit import _value
    from doctor.safeio import InputError

    assert _value('{"method": "mtp", "num_speculative_tokens": 2}') == {"method": "mtp", "num_speculative_tokens": 2}
    with pytest.raises(InputError, match="nested deeper than"):
        _value('{"a":' * 5000 + "1" + "}" * 5000)
