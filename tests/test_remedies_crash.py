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
torch.distributed.DistNetworkError: Connection reset by peer

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
    assert finding.crash.exception == "torch.distributed.DistNetworkError: Connection reset by peer"
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
    ("ERROR 12-03 10:00:00 [core.py:700] EngineCore failed to start.", None),
    ("Fatal Python error: Aborted", "Fatal Python error: Aborted"),
])
def test_a_process_that_died_is_reported(tmp_path, line, expected):
    findings = explain(tmp_path, f"INFO 12-03 10:00:00 [a.py:1] serving\n{line}\n")
    assert findings and findings[0].remedy.severity == "error"
    if expected is not None:
        assert findings[0].remedy.id == "QD-R-UNKNOWN" and expected in findings[0].crash.exception


@pytest.mark.parametrize("line", [
    "/bin/sh: line 1:  4242 Killed                  python -m sglang.launch_server --model x",
    "vllm-1 exited with code 137",
])
def test_a_process_killed_from_outside_is_told_as_a_kill(tmp_path, line):
    """A SIGKILL's mark is the watcher's, not the process's: the kill entry, with how to find the killer."""
    findings = explain(tmp_path, f"INFO 12-03 10:00:00 [a.py:1] serving\n{line}\n")
    assert findings[0].remedy.id == "QD-R-HOST-PROCESS-KILLED" and findings[0].line == line


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


# SGLang 0.5.16 on an H200 (tests/fixtures/h200-rehearsal/sglang-rope-keyerror.log, abridged): the multimodal
# processor import probe logs torchcodec's tracebacks under "Ignore import error when loading ..." (a
# logger.warning whose format prints no level) and the server carries on; the scheduler's traceback ends the log.
PROBE = """\
[2026-12-03 06:01:11] Ignore import error when loading sglang.srt.multimodal.processors.mimo_audio: Could not load libtorchcodec. Likely causes:
        The following exceptions were raised as we tried to load libtorchcodec:

[start of libtorchcodec loading traceback]
FFmpeg version 8:
Traceback (most recent call last):
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/_ops.py", line 1503, in load_library
    ctypes.CDLL(path)
  File "/usr/lib/python3.12/ctypes/__init__.py", line 379, in __init__
    self._handle = _dlopen(self._name, mode)
OSError: libavutil.so.60: cannot open shared object file: No such file or directory

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/tmp/site/torchcodec/_internally_replaced_utils.py", line 93, in load_torchcodec_shared_libraries
    torch.ops.load_library(core_library_path)
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/_ops.py", line 1505, in load_library
    raise OSError(f"Could not load this library: {path}") from e
OSError: Could not load this library: /tmp/site/torchcodec/libtorchcodec_core8.so

FFmpeg version 7:
Traceback (most recent call last):
  File "/usr/lib/python3.12/ctypes/__init__.py", line 379, in __init__
    self._handle = _dlopen(self._name, mode)
OSError: libavutil.so.59: cannot open shared object file: No such file or directory
[end of libtorchcodec loading traceback].
[2026-12-03 06:01:46] Init torch distributed begin.
[2026-12-03 06:01:46] Init torch distributed ends. elapsed=0.21 s, mem usage=0.09 GB
[2026-12-03 06:01:47] Load weight begin. avail mem=139.07 GB
"""
SCHEDULER = """\
[2026-12-03 06:01:47] Scheduler hit an exception: Traceback (most recent call last):
  File "/tmp/site/sglang/srt/managers/scheduler.py", line 4623, in run_scheduler_process
    scheduler = Scheduler(
  File "/tmp/site/sglang/srt/models/qwen3_5.py", line 1924, in get_frobnicator
    return self.frobnicators[name]
KeyError: 'frobnicator'

[2026-12-03 06:01:47] Received sigquit from a child process. It usually means the child failed.
[2026-12-03 06:01:47] kill_process_tree called: parent_pid=1488, include_parent=True, pid=1488
"""


def test_tracebacks_a_server_logged_and_carried_on_after_are_not_the_crash_the_one_that_ends_the_log_is(tmp_path):
    unknown = next(f for f in explain(tmp_path, PROBE + SCHEDULER) if f.remedy.id == "QD-R-UNKNOWN")
    assert unknown.crash.exception == "KeyError: 'frobnicator'"
    assert unknown.crash.frame.function == "get_frobnicator" and unknown.crash.component == "sglang"
    assert unknown.count == 1 and "libavutil" not in unknown.why


def test_a_log_whose_only_tracebacks_the_server_carried_on_after_has_no_crash(tmp_path):
    serving = "[2026-12-03 06:02:10] The server is fired up and ready to roll!\n"
    assert explain(tmp_path, PROBE + serving) == []


def test_a_record_that_ends_with_the_traceback_header_starts_the_traceback(tmp_path):
    unknown = next(f for f in explain(tmp_path, SCHEDULER) if f.remedy.id == "QD-R-UNKNOWN")
    assert (unknown.crash.kind, unknown.crash.frame.line) == ("traceback", 1924)


def test_shutdown_notices_after_a_crash_are_not_a_server_carrying_on(tmp_path):
    uvicorn = ("INFO:     Shutting down\nINFO:     Waiting for application shutdown.\n"
               "INFO:     Application shutdown complete.\nINFO:     Finished server process [1]\n")
    (finding,) = explain(tmp_path, TRACEBACK + uvicorn)
    assert finding.remedy.id == "QD-R-UNKNOWN" and finding.crash.exception == "KeyError: 'Qwen3_5MoeMTP'"


def test_a_root_cause_printed_right_before_its_wrapper_stays_the_root(tmp_path):
    wrapper = TRACEBACK.replace("KeyError: 'Qwen3_5MoeMTP'", "RuntimeError: Worker failed with error 'frob'")
    unknown = explain(tmp_path, TRACEBACK + "ERROR 12-03 10:00:01 [core.py:7] EngineCore failed to start.\n" + wrapper)[0]
    assert unknown.crash.exception == "KeyError: 'Qwen3_5MoeMTP'"
    assert unknown.crash.final == "RuntimeError: Worker failed with error 'frob'"


def test_an_exception_asyncio_never_retrieved_is_the_root_of_the_cut_traceback_after_it(tmp_path):
    """asyncio names an unawaited exception inside a repr (`<Future finished exception=X('msg')>`); the traceback
    printed after it is often cut before its last line. The exception is the root, raised inside the engine."""
    from remedies import explain_sources

    log = tmp_path / "rpc.log"
    log.write_text(
        "INFO 08-29 19:33:37 server.py:222] vLLM ZMQ RPC Server was interrupted.\n"
        "Future exception was never retrieved\n"
        "future: <Future finished exception=AssertionError('expected running sequences')>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/engine/async_llm_engine.py", line 113, in generator\n'
        "    raise result\n")
    (finding,) = explain_sources([log])
    assert finding.crash.exception == "AssertionError: expected running sequences"
    assert finding.engine_bug is not None and finding.engine_bug.engine == "vllm"


def test_a_task_that_finished_cleanly_is_not_a_crash():
    from remedies.crash import unretrieved

    assert unretrieved("<Task finished name='Task-1' coro=<main() done> result=None>") is None
    assert unretrieved("future: <Task finished name='Task-3' coro=<serve() done, defined at x.py:1> "
                       "exception=RuntimeError(\"Engine loop has died\")>") == "RuntimeError: Engine loop has died"
