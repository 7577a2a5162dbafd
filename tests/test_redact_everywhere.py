"""Secrets of every kind planted in env facts, profile flags, log lines, the deploy command and fleet facts: none
reaches any output format, the terminal or stderr, with and without --redact-hosts; control bytes from logs
arrive escaped; ordinary words survive."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from doctor.report.outputs import FORMATS, render
from tests.report_sample import full_report, planted_facts

SECRETS = {
    "flag": "PlntFlagUnderscore11", "flag_eq": "PlntFlagEquals22", "header": "PlntApiKeyHeader33",
    "query": "PlntQueryParam44", "lower": "PlntLowerAws55", "private": "PlntPrivateKey66", "yaml": "PlntYamlPass77",
    "client": "PlntClientSecret88", "url_nouser": "PlntRedisPass99", "url_user": "PlntUrlPass00",
    "cookie": "PlntCookie1a", "bearer": "PlntBearerTok2b", "basic": "UGxudEJhc2ljM2M",
    "hf": "hf_PlntHfToken4dAbCdEfGhIjKlMn", "openai": "sk-proj-PlntOpenAi5eAbCdEfGhIj",
    "github": "ghp_PlntGithub6fAbCdEfGhIjKlMnOpQr", "pat": "github_pat_11PlntPat7g_AbCdEfGhIjKl",
    "aws": "AKIAPLNTAWSKEY8H9J0K", "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQbG50Snd0In0.PlntJwtSig9h",
    "pem": "MIIEPlntPemBody0iXyZ", "cut": "hf_PlntCutZz",
}
HOSTS = {"node": "gpu-node-41", "fqdn": "trainer-head.corp.internal", "ip": "10.77.66.55", "hca": "ib-fabric-9"}
KEEP = ["--max-model-len 4096", "Qwen/Qwen3.5-35B-A3B", "key_cache", "token count", "max_num_batched_tokens"]
S = SECRETS
ESC_LINE = "raw \x1b[31mred\x1b[0m NUL\x00 BEL\x07 ESC\x1b]0;title\x07 end"
LOG_LINES = [
    f"vllm serve Qwen/Qwen3.5-35B-A3B --max-model-len 4096 --api_key {S['flag']} --port 8000",
    f"curl -H 'X-Api-Key: {S['header']}' 'http://{HOSTS['fqdn']}:8000/v1/models?api-key={S['query']}'",
    f"aws_secret_access_key = {S['lower']}  private_key={S['private']}  password: {S['yaml']}",
    f"client_secret: {S['client']} redis://:{S['url_nouser']}@{HOSTS['fqdn']}:6379",
    f"pip --index-url https://bot:{S['url_user']}@{HOSTS['fqdn']}/simple  Cookie: sid={S['cookie']}",
    f"Authorization: Bearer {S['bearer']} Authorization: Basic {S['basic']}",
    f"tokens {S['hf']} {S['openai']} {S['github']} {S['pat']} {S['aws']} {S['jwt']}",
    "-----BEGIN RSA PRIVATE KEY-----", S["pem"], "-----END RSA PRIVATE KEY-----",
    f"key_cache ready, token count 12, max_num_batched_tokens=8192, peer {HOSTS['ip']} on {HOSTS['node']}",
    f"auth failed for {S['cut'][:9]} …", ESC_LINE,
]


def planted_report(hosts: bool):
    report = full_report()
    facts = planted_facts()
    facts["hostname"] = facts["host"]["hostname"] = HOSTS["node"]
    facts["env"].update({"VLLM_EXTRA_ARGS": f"--api-key={S['flag_eq']}", "NCCL_IB_HCA": f"={HOSTS['hca']}.corp.lan:1",
                         "MASTER_ADDR": HOSTS["fqdn"], "HF_ENDPOINT": f"https://u:{S['url_user']}@{HOSTS['fqdn']}"})
    report.facts = facts
    report.facts_summary["hostname"] = HOSTS["node"]
    report.argv = ["deploy", "--profile", "p", "--api_key", S["flag"], f"--api-key={S['flag_eq']}"]
    report.sections["deployment"]["command"] = " ".join(LOG_LINES[:2])
    report.sections["deployment"]["argv"] = report.argv
    report.sections["deployment"]["log_excerpt"] = LOG_LINES
    report.sections["fleet"] = {"engine": "ray", "target": HOSTS["fqdn"], "status": "ok",
                                "columns": [HOSTS["node"], HOSTS["ip"]],
                                "rows": [{"name": "HF_ENDPOINT", "values": [f"redis://:{S['url_nouser']}@x", "-"]},
                                         {"name": "status", "values": [f"error: {S['cut']}", "ok"]}]}
    report.results[0].details += LOG_LINES
    return report.redacted(hosts=hosts)


def leaks(text: str, hosts: bool, host_names: tuple[str, ...] = tuple(HOSTS.values())) -> list[str]:
    found = [name for name, value in SECRETS.items() if value in text or value[:12] in text]
    return found + ([h for h in host_names if h in text] if hosts else [])


@pytest.mark.parametrize("hosts", [False, True], ids=["secrets", "hosts"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_no_planted_secret_or_host_in_any_format(fmt: str, hosts: bool):
    out = render(planted_report(hosts), fmt, verbose=True)
    assert leaks(out, hosts) == []
    assert all(word in out for word in KEEP), [w for w in KEEP if w not in out]
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    shown = "NUL\\x00 BEL\\x07"
    assert (json.dumps(shown)[1:-1] if fmt == "json" else shown) in out, "control bytes are shown, not dropped"
    if fmt == "junit":
        ET.fromstring(out)
    if fmt == "json":
        json.loads(out)


def qd(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, timeout=120,
                          input=stdin)


@pytest.mark.parametrize("hosts", [False, True], ids=["secrets", "hosts"])
def test_explain_terminal_files_and_stderr_hold_no_secret_and_no_raw_control_byte(tmp_path: Path, hosts: bool):
    log = tmp_path / "server.log"
    log.write_text("\n".join(LOG_LINES + ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
                                          f" on {HOSTS['node']} " + LOG_LINES[0]]) + "\n")
    outs = [tmp_path / f"r.{ext}" for ext in ("html", "xml", "md", "json")]
    done = qd("explain", "--context", "20", str(log), *(["--redact-hosts"] if hosts else []),
              *(a for o in outs for a in ("-o", str(o))))
    assert done.returncode in (0, 1), done.stderr
    # A log alone names no host: a one-label name (gpu-node-41) in free text cannot be told from a word;
    # dotted names, URL hosts and addresses can.
    for text in [done.stdout, done.stderr] + [o.read_text() for o in outs]:
        assert leaks(text, hosts, (HOSTS["fqdn"], HOSTS["ip"], HOSTS["hca"])) == []
        assert "\x1b]" not in text and "\x00" not in text and "\x07" not in text
    ET.parse(outs[1])


@pytest.mark.parametrize("hosts", [False, True], ids=["secrets", "hosts"])
def test_check_from_a_planted_bundle_leaks_nothing_on_stdout_stderr_or_files(tmp_path: Path, hosts: bool):
    facts = planted_facts()
    facts["hostname"] = facts["host"]["hostname"] = HOSTS["node"]
    facts["env"].update({"VLLM_EXTRA_ARGS": f"--api_key {S['flag']}", "NCCL_IB_HCA": f"={HOSTS['hca']}.corp.lan",
                         "MASTER_ADDR": HOSTS["fqdn"], "HF_ENDPOINT": f"redis://:{S['url_nouser']}@{HOSTS['ip']}"})
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps(facts))
    outs = [tmp_path / f"r.{ext}" for ext in ("html", "xml", "md", "json", "txt")]
    done = qd("check", "--from", str(bundle), *(["--redact-hosts"] if hosts else []),
              *(a for o in outs for a in ("-o", str(o))))
    assert done.returncode in (0, 1), done.stderr
    for text in [done.stdout, done.stderr] + [o.read_text() for o in outs]:
        assert leaks(text, hosts) == []


@pytest.mark.parametrize("hosts", [False, True], ids=["secrets", "hosts"])
def test_errors_on_stderr_are_redacted(hosts: bool):
    model = f"https://bot:{S['url_user']}@{HOSTS['fqdn']}/Qwen?token={S['query']}"
    done = qd("plan", "--gpus", "1xH200", "--model", model, *(["--redact-hosts"] if hosts else []))
    assert done.returncode == 2 and done.stderr.startswith("qwen-doctor: error:")
    assert leaks(done.stderr, hosts) == [] and "[REDACTED]" in done.stderr
    assert (HOSTS["fqdn"] in done.stderr) is not hosts


@pytest.mark.parametrize("hosts", [False, True], ids=["secrets", "hosts"])
def test_deploy_progress_report_and_files_hold_no_secret_from_the_profile(tmp_path: Path, hosts: bool):
    from doctor.deploy.ports import free_port
    from tests.support.deploy_helpers import python_shim

    profile = tmp_path / "planted.yaml"
    profile.write_text(json.dumps({
        "name": "planted", "description": "cpu-tiny with secrets in its flags and env", "backend": "vllm",
        "backend_version": ">=0.17.0", "model": str(tmp_path), "launcher": "vllm-api-server",
        "sources": ["https://docs.vllm.ai/en/latest/cli/serve.html"],
        "hardware": {"gpu_count": 0, "min_gpu_memory_gib": 0, "min_compute_capability": "0.0", "nvlink": "no",
                     "device": "cpu"},
        "host": "127.0.0.1", "port": 8000,
        "env": {"HF_TOKEN": S["hf"], "VLLM_CPU_KVCACHE_SPACE": "1", "MASTER_ADDR": HOSTS["fqdn"],
                "HF_ENDPOINT": f"https://bot:{S['url_user']}@{HOSTS['fqdn']}/hf"},
        "flags": {"served-model-name": "tiny", "max-model-len": 256, "api-key": S["flag"]}}))
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "doctor", "deploy", "--profile", str(profile), "--python", str(python_shim(tmp_path)),
         "--port", str(free_port()), "--log", str(tmp_path / "server.log"), "--burst", "2", "--force",
         "-o", str(report), "-o", str(tmp_path / "r.html"), *(["--redact-hosts"] if hosts else [])],
        capture_output=True, text=True, timeout=180, env={**__import__("os").environ, "FAKE_SERVER_MODE": "ok"})
    assert "starting:" in done.stderr, done.stderr
    for text in (done.stdout, done.stderr, report.read_text(), (tmp_path / "r.html").read_text()):
        assert leaks(text, hosts, (HOSTS["fqdn"],)) == []
    assert "--max-model-len 256" in done.stderr
