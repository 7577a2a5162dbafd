"""Every printed wording of a cause names its entry, in the shapes people paste it.

Wordings come from the printing code: torch's ProcessGroupNCCL heartbeat monitor (torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp), argparse's "unrecognized arguments" as typed by hand, an API gateway's and Dify's
(models/openai_api_compatible validate_credentials) forms of the 404 for a model the server does not serve, CUDA's
error 222 text, AIBrix's HTTPRoute status check (pkg/plugins/gateway/gateway.go), uvicorn's access log of a '//'
path, and vLLM's xgrammar schema check (v1/structured_output/backend_xgrammar.py). Each wording is rendered into
the shapes of a paste: bare, in a fence under a heading, quoted inline in prose, a Markdown H1 title, wrapped in
backticks / bold / full-width quotes, with grep's `file.log:` prefix, or behind container / rank prefixes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain

SHAPES = {
    "bare": "{line}\n",
    "fenced": "### Describe the bug\n\n```text\n{line}\n```\n",
    "prose": "After a while the server stops; the log says {line} and nothing else.\n",
    "title": "# {line}\n\n### Self Checks\n- [x] I have searched existing issues.\n",
    "backticks": "The pod prints `{line}` and restarts.\n",
    "bold": "**{line}**\n",
    "cjk_quotes": "2. 运行后报错“{line}”\n",
    "compose": "vllm-1  | {line}\n",
}

WORDINGS = {
    "QD-R-NCCL-WATCHDOG-TIMEOUT": [
        "[rank1]:[E1204 10:11:12.123456789 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
        "Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=2",
        "[rank0]:[E1204 10:11:12.123456789 ProcessGroupNCCL.cpp:1418] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "ProcessGroupNCCL's watchdog got stuck for 600 seconds without making progress in monitoring enqueued "
        "collectives.",
        "[rank3]:[F1204 10:19:12.223456789 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
        "Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang.",
    ],
    "QD-R-VLLM-UNRECOGNIZED-ARG": [
        "vllm: error:unrecognized arguments:--enable-reasoni",
        "vllm: error: unrecognized arguments:--tool-call-parser hermes",
        "api_server.py: error: unrecognized arguments: --max-num-seq 8",
    ],
    "QD-R-SGLANG-LAUNCH-ARG": [
        "launch_server.py: error:unrecognized arguments:--reasoning-parse",
    ],
    "QD-R-VLLM-MODEL-NOT-SERVED": [
        '{"error":{"code":404,"message":"model qwen3-coder-plus not found","status":"NOT_FOUND"}}',
        "Credentials validation failed with status code 404",
    ],
    "QD-R-CUDA-PTX-UNSUPPORTED-TOOLCHAIN": [
        "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
        "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was "
        "compiled with an unsupported toolchain.",
    ],
    "QD-R-HOST-HTTPROUTE-UNRESOLVED": [
        '{"error":{"code":503,"message":"httproute: aibrix-system/qwen3-32b-router, route\'s object references are '
        'not resolved: BackendNotFound."}}',
        "httproute: aibrix-system/llama-8b-router, route is not accepted: NotAllowedByListeners.",
    ],
    "QD-R-VLLM-CLIENT-BASE-URL-SLASH": [
        'INFO:     172.18.0.3:40122 - "GET /v1//models HTTP/1.1" 404 Not Found',
        'INFO:     10.1.2.3:5512 - "POST //v1/chat/completions HTTP/1.1" 404 Not Found',
    ],
    "QD-R-VLLM-SCHEMA-UNSUPPORTED-BY-BACKEND": [
        "ValueError: The provided JSON schema contains features not supported by xgrammar.",
        "vllm.exceptions.VLLMValidationError: Failed to transform json schema into a grammar: Unsupported keyword "
        "propertyNames",
    ],
}

CASES = [(entry, wording, shape) for entry, wordings in WORDINGS.items() for wording in wordings for shape in SHAPES]


def named(tmp_path: Path, text: str) -> list[str]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return [finding.remedy.id for finding in explain.explain_sources([log])]


@pytest.mark.parametrize(("entry", "wording", "shape"), CASES, ids=[f"{e}-{i % 8}-{s}" for i, (e, _, s) in enumerate(CASES)])
def test_each_wording_names_its_entry_first_in_every_paste_shape(tmp_path, entry, wording, shape):
    assert named(tmp_path, SHAPES[shape].format(line=wording))[:1] == [entry]


def test_grep_prefixed_lines_name_the_entry(tmp_path):
    line = WORDINGS["QD-R-NCCL-WATCHDOG-TIMEOUT"][1]
    assert named(tmp_path, f"prefill-0.log:{line}\nprefill-0.log:ERROR 12-04 10:19:13 [core.py:1] dead\n")[:1] == [
        "QD-R-NCCL-WATCHDOG-TIMEOUT"]


def test_escaped_json_hard_wrapped_mid_token_names_the_unserved_model(tmp_path):
    """A terminal client prints the gateway's body as escaped JSON and the paste breaks it anywhere."""
    body = r'⚠ unexpected status 400 Bad Request: {\"error\":{\"code\":404,\"message\":\"model qwen3-coder-plus not found\",\"status\":\"NOT_FOUND\"}}'
    for width in (48, 61, 77):
        text = "\n".join(body[i:i + width] for i in range(0, len(body), width)) + "\n"
        assert named(tmp_path, text)[:1] == ["QD-R-VLLM-MODEL-NOT-SERVED"], width


@pytest.mark.parametrize("line", [
    'INFO:     172.18.0.3:40122 - "GET /v1/models HTTP/1.1" 200 OK',
    'INFO:     172.18.0.3:40122 - "GET /favicon.ico HTTP/1.1" 404 Not Found',
    "The model answered: the file was not found in the archive.",
    '{"error":{"code":404,"message":"route not found"}}',
    "Credentials validation failed with status code 401",
    "[rank0]:[W1204 10:11:12.1 ProcessGroupNCCL.cpp:1000] [PG ID 0 PG GUID 0 Rank 0] using heartbeat timeout 480 s",
])
def test_near_misses_stay_silent(tmp_path, line):
    """A healthy 404, a plain 'not found' sentence, a gateway error that is not about a model, another status and the
    monitor's start-up line are not these causes."""
    assert named(tmp_path, line + "\n") == []
