"""Redaction: what counts as a secret, what stays readable, and the hosts option."""

from __future__ import annotations

import copy

import pytest

from doctor.redact import REDACTED, is_secret_name, redact_argv, redact_document, redact_env, redact_text


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
                                  "WANDB_API_KEY", "DB_PASSWORD", "MY_SECRET", "api_key", "Authorization", "token",
                                  "spark.hadoop.fs.s3a.access.key", "spark.authenticate.secret", "spark.ssl.keyPassword"])
def test_secret_names(name: str):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "HF_HOME", "CUDA_VISIBLE_DEVICES", "NCCL_DEBUG",
                                  "max_num_batched_tokens", "kv_cache_tokens", "HF_TOKEN_PATH", "spark.authenticate"])
def test_ordinary_names(name: str):
    assert not is_secret_name(name)


@pytest.mark.parametrize("line, secret", [
    ("HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345 python x.py", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"),
    ("downloading with hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"),
    ("curl -H 'Authorization: Bearer abc.def-ghi_123' http://x", "abc.def-ghi_123"),
    ('{"authorization": "Basic dXNlcjpwYXNz"}', "dXNlcjpwYXNz"),
    ("headers={'Authorization': 'Bearer tok3nValue99'}", "tok3nValue99"),
    ("vllm serve Qwen/Qwen3.5-35B-A3B --api-key s3cretKey99 --port 8000", "s3cretKey99"),
    ("vllm serve m --api-key=s3cretKey99", "s3cretKey99"),
    ("sglang.launch_server --hf-token 'abcHfToken1'", "abcHfToken1"),
    ('export OPENAI_API_KEY="sk-proj-abcdefghijklmnopqrstuv"', "sk-proj-abcdefghijklmnopqrstuv"),
    ("EngineArgs(api_key='zzTopSecret1', model='m')", "zzTopSecret1"),
    ("pip install --index-url https://user:Pa55w0rd@pypi.corp/simple x", "Pa55w0rd"),
])
def test_secrets_inside_log_lines_and_command_lines(line: str, secret: str):
    out = redact_text(line)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize("line", [
    "vllm serve Qwen/Qwen3.5-35B-A3B --max-num-batched-tokens 8192 --tokenizer Qwen/Qwen3.5-35B-A3B",
    "INFO 12-02 15:55:03 [gpu_worker.py:1] GPU KV cache size: 1,234,567 tokens",
    "max_tokens=512 max_num_batched_tokens=8192 skip_tokenizer_init=False",
    "TOKENIZERS_PARALLELISM=false",
    "usage: {'prompt_tokens': 12, 'completion_tokens': 30}",
])
def test_ordinary_lines_are_unchanged(line: str):
    assert redact_text(line) == line


def test_env_values_by_name():
    env = {"HF_TOKEN": "whatever-value", "HF_HOME": "/data/hf", "NCCL_DEBUG": "INFO", "EMPTY_TOKEN": ""}
    assert redact_env(env) == {"HF_TOKEN": REDACTED, "HF_HOME": "/data/hf", "NCCL_DEBUG": "INFO", "EMPTY_TOKEN": ""}


def test_argv_values_after_secret_flags():
    argv = ["serve", "m", "--api-key", "k3yvalue", "--hf-token", "tokvalue1", "--password=pw123456", "--port", "80"]
    assert redact_argv(argv) == ["serve", "m", "--api-key", REDACTED, "--hf-token", REDACTED,
                                 f"--password={REDACTED}", "--port", "80"]


def test_document_pass_hides_a_secret_everywhere_once_seen_under_a_secret_name():
    doc = {"env": {"HF_TOKEN": "plainValue42"}, "log": ["retrying with plainValue42 in 3 s"],
           "argv": ["--api-key", "otherValue7", "--port", "8000"], "note": "otherValue7 rejected"}
    out = redact_document(doc)
    assert "plainValue42" not in str(out) and "otherValue7" not in str(out)
    assert out["argv"] == ["--api-key", REDACTED, "--port", "8000"]
    assert out["log"] == [f"retrying with {REDACTED} in 3 s"]


def test_document_pass_keeps_numbers_and_leaves_the_input_alone():
    doc = {"metrics": {"first_token": 0.3, "kv_cache_tokens": 1000}, "env": {"HF_TOKEN": "plainValue42"}}
    before = copy.deepcopy(doc)
    out = redact_document(doc)
    assert doc == before
    assert out["metrics"] == {"first_token": 0.3, "kv_cache_tokens": 1000}


def test_redacting_twice_changes_nothing_more():
    doc = {"log": ["Authorization: Bearer abcdefgh12", "--api-key k3yvalue"], "env": {"X_TOKEN": "v"}}
    once = redact_document(doc)
    assert redact_document(once) == once


def test_hosts_become_stable_pseudonyms_but_loopback_and_versions_stay():
    doc = {"hostname": "gpu-node-17", "head_address": "10.0.0.5:6379",
           "log": ["gpu-node-17.corp.example.net:29500 connected to 10.0.0.5",
                   "bind 0.0.0.0:8000, health http://127.0.0.1:8000/health, peer http://gpu-node-17:8000",
                   "driver 580.159.04 pci 00000000:00:06.0 at 15:55:03 via fe80::1ff:fe23:4567:890a",
                   "see https://github.com/vllm-project/vllm/issues/1465"]}
    out = redact_document(doc, hosts=True)
    assert out["hostname"] == "[HOST-1]" and out["head_address"] == "[IP-1]:6379"
    assert out["log"][0] == "[HOST-1]:29500 connected to [IP-1]"
    assert out["log"][1] == "bind 0.0.0.0:8000, health http://127.0.0.1:8000/health, peer http://[HOST-1]:8000"
    assert out["log"][2] == "driver 580.159.04 pci 00000000:00:06.0 at 15:55:03 via [IP-2]"
    assert out["log"][3] == doc["log"][3], "public sources stay clickable"


def test_hosts_are_kept_without_the_option():
    doc = {"hostname": "gpu-node-17", "log": ["peer 10.0.0.5"]}
    assert redact_document(doc) == doc


@pytest.mark.parametrize("name", ["h200", "a100-8x-nvlink", "pcie-4x-l40s-docker"])
def test_a_recorded_bundle_loses_nothing_but_its_hostname(name: str):
    from tests.conftest import fixture_data

    data = fixture_data(name)
    assert redact_document(data) == data
    hidden = redact_document(data, hosts=True)
    assert hidden["packages"] == data["packages"], "four-part versions (cudnn 9.19.0.56) are not IP addresses"
    assert hidden["hostname"] == hidden["host"]["hostname"] == "[HOST-1]"
    assert {**hidden, "hostname": "vm", "host": {**hidden["host"], "hostname": "vm"}} == data


def test_a_short_secret_value_is_replaced_where_it_stands_not_at_every_place_its_letters_occur():
    text = "db:\n  password: a\n  comment: a mapping with a value\n"
    assert redact_text(text) == "db:\n  password: [REDACTED]\n  comment: a mapping with a value\n"


def test_a_secret_of_full_length_is_still_replaced_wherever_else_it_appears():
    text = "DB_PASSWORD: hunter22 then hunter22 again\nline2 hunter22\n"
    assert "hunter22" not in redact_text(text)


@pytest.mark.parametrize("path", ["../../etc/passwd", "/run/secrets/api_key", "C:\\\\creds\\\\token"])
def test_a_file_path_ending_in_a_secret_like_name_is_a_path_not_a_key(path: str):
    line = f"qwen-doctor: error: {path}: a profile must be a YAML mapping, got str\n"
    assert redact_text(line) == line
