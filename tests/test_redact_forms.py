"""Redaction of the forms users paste: flags, headers, URL parameters, assignments, URLs, token shapes, PEM keys,
cut tokens; with --redact-hosts, hosts inside env lists and free text; control characters shown as escapes."""

from __future__ import annotations

import pytest

from doctor.redact import REDACTED, is_secret_flag, is_secret_name, redact_argv, redact_document, redact_text
from doctor.textsafe import visible

S = "Pl4ntedS3cretValue"  # alphanumeric: any leak is found by a plain substring search

FORMS = [
    f"vllm serve m --api_key {S} --port 8000",
    f"vllm serve m --api_key={S}",
    f"vllm serve m --api-key {S}",
    f"vllm serve m --api-key={S}",
    f"vllm serve m --api-key '{S} with space'",
    f"vllm serve m --api-key{' ' * 20}{S}",
    f"password:{' ' * 20}{S}",
    f"Authorization: Bearer{' ' * 20}{S}",
    f"sglang --admin-api-key {S}",
    f"vllm serve m --ssl-keyfile-password {S}",
    f"curl -H 'X-Api-Key: {S}' http://svc/v1",
    f"X-Auth-Token: {S}",
    f"x-goog-api-key:{S}",
    f"Private-Token: {S}",
    f"Authorization: Bearer {S}",
    f"authorization: Basic {S}",
    f"Proxy-Authorization: Digest {S}",
    f'{{"Authorization": "Bearer {S}"}}',
    f"Cookie: session={S}; theme=dark",
    f"Set-Cookie: sid={S}; Path=/; HttpOnly",
    f'curl -H "Cookie: a=1; sid={S}" http://svc',
    f"GET /v1/models?api-key={S}&limit=2",
    f"GET /v1/models?api_key={S}",
    f"https://svc/x?token={S}&x=1",
    f"https://svc/x?foo=1&access_token={S}",
    f"https://maps.svc/api?key={S}",
    f"gcloud ... key={S}",
    f"aws_secret_access_key = {S}",
    f"AWS_SECRET_ACCESS_KEY={S}",
    f"private_key={S}",
    f"password: {S}",
    f"PASSWORD={S}",
    f"client_secret: {S}",
    f'{{"client_secret": "{S}"}}',
    f"EngineArgs(api_key='{S}', model='m')",
    f"config = {{'apiKey': '{S}'}}",
    f"export HF_TOKEN={S}",
    f"spark.hadoop.fs.s3a.secret.key={S}",
    f"redis://:{S}@cache:6379/0",
    f"https://user:{S}@mirror.corp/simple",
    f"postgresql://admin:{S}@db.corp:5432/app",
    f"amqp://u:{S}@@weird@rabbit/",
    f"token hf_{S}0123456789 used",
    f"key sk-proj-{S}0123456789",
    f"key sk-ant-api03-{S}0123",
    f"clone with ghp_{S}0123456789AB",
    f"github_pat_11AAAA_{S}0123456789",
    "aws AKIAIOSFODNN7EXAMPLE found",
    "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQbDRudGVkUzNjcmV0VmFsdWUifQ.Pl4ntedS3cretValue_sig",
    f"-----BEGIN RSA PRIVATE KEY-----\nMIIE{S}\nAAAA\n-----END RSA PRIVATE KEY-----",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Blbn{S}\\n-----END OPENSSH PRIVATE KEY-----",
    f"-----BEGIN PRIVATE KEY----- MIIE{S}",
    f'{{"type": "service_account", "private_key_id": "{S}", "client_email": "a@b.iam.gserviceaccount.com"}}',
    f"private_key_id: {S}",
    f"/root/.cache/huggingface/token:{S}",
    f"/home/me/.config/svc/api_key: {S}",
    f"./secrets/hf_token:3:{S}",
    f"git clone https://{S}0123@github.com/org/repo.git",
    f"https://{S}0123:x-oauth-basic@github.com/org/repo",
    f"pip install --index-url https://me:p%40{S}%21@pypi.corp/simple x",
]


@pytest.mark.parametrize("line", FORMS)
def test_every_pasted_form_loses_its_secret(line: str):
    out = redact_text(line)
    assert S not in out and "Pl4nted" not in out and "AKIAIOSFODNN7EXAMPLE" not in out, out
    assert REDACTED in out


@pytest.mark.parametrize("line", FORMS)
def test_redacting_twice_changes_nothing_more(line: str):
    once = redact_text(line)
    assert redact_text(once) == once


@pytest.mark.parametrize("line", [
    "vllm serve Qwen/Qwen3.5-35B-A3B --max-model-len 4096 --max-num-batched-tokens 8192 --allow-credentials",
    "INFO GPU KV cache size: 1,234,567 tokens; key_cache shape [2, 16]; token count: 12",
    "usage: {'prompt_tokens': 12, 'completion_tokens': 30, 'total_tokens': 42}",
    '{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": null}',
    "KeyError: 'model.layers.0.mlp.experts' (token: 5)",
    "export HF_TOKEN=$HF_TOKEN; --api-key ${VLLM_API_KEY}",
    "pip install hf_transfer && export TZ=Asia/Shanghai",
    "Bearer tokens are checked by the proxy",
    "http://user@host:8000/health and http://127.0.0.1:8000",
    "HF_TOKEN_PATH=/root/.cache/huggingface/token TOKENIZERS_PARALLELISM=false",
    "--enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3",
    "for whl in sorted(src.glob('*.whl'), key=lambda p: -p.stat().st_size):",
    "cat: /etc/passwd: No such file or directory",
    "open /root/.cache/huggingface/token: permission denied",
    "git clone https://git@github.com/org/repo and https://first.last@gitlab.corp/x",
])
def test_ordinary_text_is_left_alone(line: str):
    assert redact_text(line) == line


@pytest.mark.parametrize("name", ["X-Api-Key", "api-key", "apiKey", "accessToken", "client_secret", "private_key",
                                  "aws_secret_access_key", "DB_PASS", "Set-Cookie", "X-Amz-Signature", "passphrase"])
def test_secret_names_in_every_spelling(name: str):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["eos_token", "pad_token", "vision_start_token", "max_tokens", "key_cache", "PWD",
                                  "tokenizer", "NCCL_IB_PKEY"])
def test_names_that_only_sound_secret(name: str):
    assert not is_secret_name(name)


def test_flags_in_both_spellings_and_switches():
    assert is_secret_flag("--api_key") and is_secret_flag("--api-key") and is_secret_flag("-token")
    assert not is_secret_flag("--allow-credentials") and not is_secret_flag("--max-num-batched-tokens")
    assert redact_argv(["--api_key", S, "--allow-credentials", "--port", "1"]) == \
        ["--api_key", REDACTED, "--allow-credentials", "--port", "1"]


def test_a_token_cut_by_the_line_length_limit_loses_its_prefix_too():
    assert redact_text("401 from hub with hf_Ab3 …") == f"401 from hub with {REDACTED} …"
    assert redact_text("node error: bad key sk-proj-7Qx") == f"node error: bad key {REDACTED}"
    doc = {"env": {"HF_TOKEN": "myOwnTokenValue99"}, "log": ["retry with myOwnT …"]}
    assert redact_document(doc)["log"] == [f"retry with {REDACTED} …"]


def test_a_private_key_split_over_log_lines_is_hidden_line_by_line():
    doc = {"lines": ["cat key.pem", "-----BEGIN EC PRIVATE KEY-----", f"MHcC{S}", "AwEHoUQDQgAE",
                     "-----END EC PRIVATE KEY-----", "next step"]}
    out = redact_document(doc)["lines"]
    assert S not in str(out) and "AwEHoUQDQgAE" not in str(out)
    assert out[0] == "cat key.pem" and out[-1] == "next step" and out[-2].endswith("-----END EC PRIVATE KEY-----")


def test_a_secret_found_in_text_is_hidden_wherever_else_it_appears():
    doc = {"command": f"vllm serve m --api-key {S}", "log": [f"client sent {S} twice"]}
    assert S not in str(redact_document(doc))


def test_hosts_inside_env_lists_urls_and_text():
    doc = {"hostname": "gpu-node-17",
           "env": {"NCCL_IB_HCA": "=gpu-node-17:mlx5_0,mlx5_1", "NCCL_SOCKET_IFNAME": "ib0,roce.fabric-a.corp",
                   "MASTER_ADDR": "trainer-head", "GLOO_SOCKET_IFNAME": "eth0", "NO_PROXY": "localhost,.corp.lan",
                   "RAY_ADDRESS": "ray-head-3:6379", "HF_ENDPOINT": "https://mirror-7/hf"},
           "log": ["dial trainer-head:29500 and ray-head-3 failed; peer db01.prod.internal 10.9.8.7",
                   "see https://github.com/vllm-project/vllm/issues/1 from http://gpu7:8000/v1 and mirror-7"]}
    out = redact_document(doc, hosts=True)
    text = str(out)
    for host in ("gpu-node-17", "roce.fabric-a", "trainer-head", "ray-head-3", "db01", "10.9.8.7", "gpu7",
                 "mirror-7", "corp.lan"):
        assert host not in text, host
    assert out["env"]["NCCL_IB_HCA"] == "=[HOST-1]:mlx5_0,mlx5_1"
    assert out["env"]["GLOO_SOCKET_IFNAME"] == "eth0" and "localhost" in out["env"]["NO_PROXY"]
    assert "https://github.com/vllm-project/vllm/issues/1" in text
    assert redact_document(out, hosts=True) == out


def test_hosts_keep_files_modules_and_versions():
    line = "File vllm/v1/engine/core.py line 12 in model.safetensors torch.cuda.is_available 2.9.1 eth0.100 .py"
    assert redact_document({"log": [line]}, hosts=True)["log"] == [line]


@pytest.mark.parametrize("raw, shown", [
    ("colour \x1b[31mred\x1b[0m", "colour red"),
    ("NUL \x00 BEL \x07 ESC \x1b alone", "NUL \\x00 BEL \\x07 ESC \\x1b alone"),
    ("title \x1b]0;pwned\x07 done", "title  done"),
    ("back\rspace\x08 del\x7f c1\x9b2J", "back\\x0dspace\\x08 del\\x7f c1"),
    ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
    ("bidi \u202e txt", "bidi \\u202e txt"),
    ("marks \u200e\u200f\u061c end", "marks \\u200e\\u200f\\u061c end"),
    ("one\u2028line\u2029only", "one\\u2028line\\u2029only"),
])
def test_control_characters_are_stripped_when_colour_and_escaped_otherwise(raw: str, shown: str):
    assert visible(raw) == shown


def test_many_distinct_secrets_are_each_hidden_wherever_they_reappear():
    tokens = [f"tok{i:04d}Value" for i in range(500)]
    doc = {"log": [f"again {t}!" for t in tokens] + [f"Authorization: Bearer {t}" for t in tokens]}
    out = str(redact_document(doc))
    assert [t for t in tokens if t in out] == []
