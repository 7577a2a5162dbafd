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
    "QD-R-NCCL-IB-PORT-ERROR": [
        "prefill-0:1234:5678 [0] NCCL INFO NET/IB : mlx5_3:1 Got async event : port error",
        "node-a:77:80 [2] transport/net_ib.cc:120 NCCL WARN NET/IB : mlx5_0:1 Got async event : local catastrophic error",
    ],
    "QD-R-SGLANG-MEMORY-SAVER-OOM": [
        "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/core.cpp func=allocate line=104",
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=104",
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
    for entry, line in (("QD-R-NCCL-WATCHDOG-TIMEOUT", WORDINGS["QD-R-NCCL-WATCHDOG-TIMEOUT"][1]),
                        ("QD-R-NCCL-IB-PORT-ERROR", WORDINGS["QD-R-NCCL-IB-PORT-ERROR"][0])):
        wrapper = "prefill-0.log:(EngineCore_DP0 pid=7) ERROR 11-20 10:05:00 [multiproc_executor.py:140] WorkerProc hit an exception."
        assert named(tmp_path, f"prefill-0.log:{line}\n{wrapper}\n")[:1] == [entry]


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
    "[torch_memory_saver.cpp] CUresult error: 1 (invalid argument) file=csrc/core.cpp func=free line=66",
    "node:1:2 [0] NCCL INFO NET/IB : mlx5_3:1 Got async event : port active",
])
def test_near_misses_stay_silent(tmp_path, line):
    """A healthy 404, a plain 'not found' sentence, a gateway error that is not about a model, another status, the
    monitor's start-up line, a CUresult other than 2 (out of memory) and a port coming up are not these causes."""
    assert named(tmp_path, line + "\n") == []


def findings(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain.explain_sources([log])


PROFILING_FRAMES = (
    'Traceback (most recent call last):\n'
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 283, in run_engine_core\n'
    '    engine_core = EngineCoreProc(*args, **kwargs)\n'
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/multimodal/profiling.py", line 110, in get_dummy_processor_inputs\n'
    '    token = hf_processor.{attr}\n'
)


@pytest.mark.parametrize(("prefix", "error"), [
    ("", "AttributeError: 'Qwen2VLProcessor' object has no attribute 'image_token'"),
    ("ERROR 03-10 12:00:01 core.py:291] ", "AttributeError: 'Qwen2_5_VLProcessor' object has no attribute 'video_token'"),
    ("(EngineCore_DP0 pid=7) ", "AttributeError: Qwen2TokenizerFast has no attribute all_special_tokens_extended"),
])
def test_a_transformers_object_missing_an_attribute_the_engine_reads_is_a_version_mismatch(tmp_path, prefix, error):
    """Raised in a vllm/ frame, but the object is transformers' (a processor or tokenizer of another release):
    the user pins transformers, so it is the dependency entry and no engine bug."""
    attr = error.rsplit(" ", 1)[-1].strip("'")
    text = "".join(prefix + line + "\n" for line in PROFILING_FRAMES.format(attr=attr).splitlines()) + prefix + error + "\n"
    first = findings(tmp_path, text)[0]
    assert (first.remedy.id, first.engine_bug) == ("QD-R-VLLM-DEPENDENCY-VERSION", None)


def test_the_transformers_5_tokenizer_error_in_an_issue_title_names_the_mismatch(tmp_path):
    text = ("# [Bug]: AttributeError: Qwen2Tokenizer has no attribute all_special_tokens_extended\n\n```\n"
            "ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
            "ray::EngineActor.__init__() (pid=1, ip=10.0.0.1, actor_id=ab, repr=<EngineActor object at 0x7f>)\n```\n")
    assert [f.remedy.id for f in findings(tmp_path, text)][:1] == ["QD-R-VLLM-DEPENDENCY-VERSION"]


def test_an_attribute_missing_on_the_engines_own_object_is_not_called_a_dependency_problem(tmp_path):
    text = "AttributeError: 'Scheduler' object has no attribute 'waiting_queue'\n"
    assert "QD-R-VLLM-DEPENDENCY-VERSION" not in [f.remedy.id for f in findings(tmp_path, text)]


LONG_LEN_WARNING = ("WARNING 11-02 10:00:00 [model.py:1700] User-specified max_model_len (131072) is greater than the "
                    "derived max_model_len (max_position_embeddings=40960 or model_max_len")
INDUCTOR_ASSERT = ("/tmp/torchinductor_root/ab/cab.py:40: unknown: block: [77,0,0], thread: [64,0,0] Assertion "
                   "`index out of bounds: 0 <= tmp12 < 40960` failed.\n"
                   "RuntimeError: CUDA error: device-side assert triggered\n")


@pytest.mark.parametrize("gap", [0, 20, 60])
def test_an_out_of_bounds_assert_after_the_long_max_model_len_warning_names_the_max_model_len(tmp_path, gap):
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN turns the start-up refusal into a warning (vllm/config/model.py
    _get_and_verify_max_len); a position past the derived limit then fails an Inductor kernel's bounds assert."""
    filler = "".join(f"INFO 11-02 10:01:{i % 60:02d} [loggers.py:1] Avg prompt throughput: 1.0 tokens/s\n" for i in range(gap))
    text = LONG_LEN_WARNING + "\n" + filler + INDUCTOR_ASSERT
    first = findings(tmp_path, text)[0]
    assert first.remedy.id == "QD-R-VLLM-MAX-MODEL-LEN-DERIVED"
    assert "--max-model-len 40960" in " ".join(step.text for step in first.steps)


def test_an_out_of_bounds_assert_without_the_warning_stays_the_device_assert(tmp_path):
    assert [f.remedy.id for f in findings(tmp_path, INDUCTOR_ASSERT)][:1] == ["QD-R-CUDA-DEVICE-ASSERT"]


ROUTER_WARN = ("2025-11-02T10:00:00.123456Z  WARN sglang_router_rs::core::worker: src/core/worker.rs:563: Health check "
               "failed for worker {url}: error sending request for url ({url}/health): {error}")


@pytest.mark.parametrize("shape", ["bare", "fenced", "compose"])
def test_a_rust_router_request_it_could_not_build_is_the_routers_bug_at_its_rust_line(tmp_path, shape):
    text = "Starting the sglang router with one worker.\n" + SHAPES[shape].format(
        line=ROUTER_WARN.format(url="grpc://10.0.0.5:30001", error="builder error"))
    first = findings(tmp_path, text)[0]
    assert first.engine_bug is not None
    assert "src/core/worker.rs, line 563" in first.why


def test_a_router_health_check_refused_by_a_worker_still_starting_is_no_bug(tmp_path):
    text = "sglang router\n" + ROUTER_WARN.format(url="http://10.0.0.5:30001", error="connection refused") + "\n"
    assert findings(tmp_path, text) == []


@pytest.mark.parametrize("record", [
    "[Router (Python)] 2025-01-10 10:00:00,123 - ERROR - Error starting router: argument 'worker_urls': 'NoneType' "
    "object cannot be converted to 'Sequence'",
    "TypeError: argument 'policy': 'int' object cannot be converted to 'PyString'",
])
def test_a_pyo3_conversion_error_of_the_engines_binding_is_an_engine_bug(tmp_path, record):
    text = "### Feature request\n```bash\n$ python -m sglang_router.launch_router --policy cache_aware\n" + record + "\n```\n"
    first = findings(tmp_path, text)[0]
    assert first.engine_bug is not None


def test_the_memory_savers_oom_quoted_in_prose_outranks_the_scheduler_wrapper_below_it(tmp_path):
    text = ("After the first step the rollout dies with `[torch_memory_saver.cpp] CUresult error  result=2 "
            "file=csrc/torch_memory_saver.cpp func=cu_mem_create line=104` and then:\n\n```\n"
            "(SGLangEngine pid=1234) [2025-06-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '(SGLangEngine pid=1234)   File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", '
            "line 2300, in run_scheduler_process\n(SGLangEngine pid=1234)     scheduler.event_loop_overlap()\n```\n")
    assert [f.remedy.id for f in findings(tmp_path, text)][:1] == ["QD-R-SGLANG-MEMORY-SAVER-OOM"]


PTXAS = "ptxas error   : Instruction 'cvt with .e2m1x2' not supported on .target 'sm_121'"


def test_ptxas_refusing_an_instruction_while_building_the_engine_is_the_engines_build_bug(tmp_path):
    text = ("Building vLLM from source on GB10 with TORCH_CUDA_ARCH_LIST=12.1a fails in the NVFP4 kernels: "
            f"{PTXAS} and the build stops.\n")
    first = findings(tmp_path, text)[0]
    assert first.engine_bug is not None and "sm_121" in first.why


def test_the_same_ptxas_line_on_a_page_that_names_no_engine_is_not_called_an_engine_bug(tmp_path):
    assert all(f.engine_bug is None for f in findings(tmp_path, PTXAS + "\n"))
