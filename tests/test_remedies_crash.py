"""Never silent on a crash: a log that dies of something no entry names still gets QD-R-UNKNOWN with its root."""

from __future__ import annotations

import io
import sys

import pytest

from remedies import explain_sources
from remedies.results import to_results

TRACEBACK = """\
INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.11.0
Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py", line 1920, in run_server
    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)
  File "/usr/lib/python3.12/site-packages/vllm/model_executor/models/registry.py", line 88, in resolve
    raise KeyError(name)
KeyError: 'Qwen3_5MoeMTP'
"""

CHAINED = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 231, in _store
    return TCPStore(host, port, world, start)
torch.distributed.DistNetworkError: The client socket has timed out after 600s while trying to connect to (10.0.0.1, 29501).

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2410, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)
RuntimeError: Initialization failed.
"""


def explain(tmp_path, text: str, name: str = "server.log"):
    log = tmp_path / name
    log.write_text(text)
    return explain_sources([log])


def test_a_traceback_no_entry_names_is_reported_with_its_exception_frame_and_component(tmp_path):
    (finding,) = explain(tmp_path, TRACEBACK)
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.remedy.severity == "error"
    assert finding.crash.exception == "KeyError: 'Qwen3_5MoeMTP'"
    assert finding.crash.frame.path.endswith("vllm/model_executor/models/registry.py")
    assert (finding.crash.frame.line, finding.crash.frame.function) == (88, "resolve")
    assert finding.remedy.component == "vllm" and finding.first.line == 7
    result = to_results([finding])[0]
    assert "KeyError: 'Qwen3_5MoeMTP'" in result.details[0] and "registry.py, line 88, in resolve" in result.details[0]


def test_a_chained_exception_is_one_event_whose_root_is_the_innermost_cause(tmp_path):
    (finding,) = explain(tmp_path, CHAINED)
    assert finding.count == 1
    assert finding.crash.exception.startswith("torch.distributed.DistNetworkError: The client socket has timed out")
    assert finding.crash.final == "RuntimeError: Initialization failed."
    assert finding.crash.component == "torch" and finding.crash.frame.function == "_store"


def test_traceback_lines_under_worker_prefixes_are_read_through_them(tmp_path):
    prefix = "(VllmWorker rank=1 pid=2445156) ERROR 05-10 16:00:15 [multiproc_executor.py:470] "
    text = "".join(prefix + line + "\n" for line in TRACEBACK.splitlines()[1:])
    (finding,) = explain(tmp_path, text)
    assert finding.crash.exception == "KeyError: 'Qwen3_5MoeMTP'" and finding.crash.frame.line == 88


def test_a_traceback_logged_as_a_warning_is_a_handled_error_not_a_crash(tmp_path):
    text = ("WARNING 12-03 10:00:00 [utils.py:3] Failed to import triton kernels, using the fallback\n"
            + TRACEBACK.split("\n", 1)[1]
            + "INFO 12-03 10:00:05 [api_server.py:9] Application startup complete.\n")
    assert explain(tmp_path, text) == []


@pytest.mark.parametrize("line, expected", [
    ("Segmentation fault (core dumped)", "Segmentation fault (core dumped)"),
    ("/bin/sh: line 1:  4242 Killed                  python -m sglang.launch_server --model x", "Killed"),
    ("vllm-1 exited with code 137", "vllm-1 exited with code 137"),
    ("ERROR 12-03 10:00:00 [core.py:700] EngineCore failed to start.", None),
    ("Fatal Python error: Aborted", "Fatal Python error: Aborted"),
])
def test_a_process_that_died_is_reported(tmp_path, line, expected):
    findings = explain(tmp_path, f"INFO 12-03 10:00:00 [a.py:1] serving\n{line}\n")
    assert findings and findings[0].remedy.severity == "error"
    if expected is not None:
        assert findings[0].remedy.id == "QD-R-UNKNOWN" and expected in findings[0].crash.exception


@pytest.mark.parametrize("line", [
    "vllm-1 exited with code 0",
    "INFO 12-03 10:00:00 [launcher.py:1] Shutting down: exit code 0",
    "WARNING 12-03 10:00:00 [config.py:1] ValueError: harmless fallback used",
])
def test_a_clean_exit_or_a_warning_is_not_a_crash(tmp_path, line):
    assert explain(tmp_path, f"INFO 12-03 10:00:00 [a.py:1] serving\n{line}\n") == []


def test_a_named_error_leaves_no_room_for_unknown_but_a_wrapper_alone_does(tmp_path):
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert [f.remedy.id for f in explain(tmp_path, TRACEBACK.replace("KeyError: 'Qwen3_5MoeMTP'", oom))] == \
        ["QD-R-TORCH-CUDA-OOM"]
    wrapper = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    ids = [f.remedy.id for f in explain(tmp_path, TRACEBACK + wrapper, "two.log")]
    assert ids == ["QD-R-UNKNOWN", "QD-R-VLLM-ENGINE-CORE-INIT-FAILED"]


def test_a_traceback_whose_root_an_entry_names_is_not_unknown(tmp_path):
    wrapper = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    text = TRACEBACK.replace("KeyError: 'Qwen3_5MoeMTP'", wrapper)
    assert [f.remedy.id for f in explain(tmp_path, text)] == ["QD-R-VLLM-ENGINE-CORE-INIT-FAILED"]


def test_the_nearest_known_warning_before_the_crash_is_named_as_its_precursor(tmp_path):
    warning = "[2026-07-21 20:23:46] KV cache pool is full. Retract requests. #retracted_reqs: 1\n"
    findings = explain(tmp_path, warning + TRACEBACK)
    unknown = next(f for f in findings if f.remedy.id == "QD-R-UNKNOWN")
    assert unknown.precursor.startswith("QD-R-SGLANG-KV-POOL-FULL") and unknown.precursor.endswith(":1")
    assert unknown.to_dict()["crash"]["precursor"] == unknown.precursor


def test_standard_input_is_scanned_for_crashes_in_its_single_pass(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(TRACEBACK.encode()))))
    (finding,) = explain_sources(["-"])
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.first.line == 7


def test_the_unknown_remedy_can_be_shown_like_any_entry():
    from remedies import load_catalogue

    unknown = load_catalogue().get("qd-r-unknown")
    assert unknown is not None and unknown.severity == "error" and unknown.fix
    assert unknown not in list(load_catalogue())
