"""c10d's "Failed to recv, got 0 bytes" / gloo's "Connection closed by peer" follow another process's exit: during
an intended shutdown they are context, after another process's crash that crash is the root.

Wordings from torch/csrc/distributed/c10d/Utils.hpp (recvBytes), TCPStore.cpp (recvValue failed) and
ProcessGroupNCCL.cpp (the heartbeat monitor's "Failed to check the "should dump" flag", logged at WARNING as it
gives up "assuming TCPStore has been torn down"), with torch's own C++ record prefix (c10/util/Logging.cpp).
"""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources
from remedies.normalise import normalise

RECV = "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?"
STORE_WARNING = (f"[rank1]:[W901 07:40:19.960117000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=86, "
                 f"addr=[localhost]:54074, remote=[localhost]:29500): {RECV}\n"
                 "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:682 (most recent "
                 "call first):\n"
                 "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7fb9 in libc10.so)\n"
                 "[rank1]:[W901 07:40:19.971184476 ProcessGroupNCCL.cpp:1826] [PG ID 0 PG GUID 0 Rank 1] Failed to "
                 "check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with "
                 f"error: {RECV}\n")
SITE = "/usr/local/lib/python3.12/dist-packages"
BARRIER = ("Traceback (most recent call last):\n"
           f'  File "{SITE}/vllm/distributed/parallel_state.py", line 1200, in destroy_model_parallel\n'
           "    torch.distributed.barrier()\n"
           f'  File "{SITE}/torch/distributed/distributed_c10d.py", line 4635, in barrier\n'
           "    work = group.barrier(opts=opts)\n"
           f"torch.distributed.DistNetworkError: {RECV}\n")


def explain_text(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(text, encoding="utf-8")
    return explain_sources([log])


def test_torchs_own_cpp_records_carry_their_level():
    assert normalise("[rank1]:[W901 07:40:19.960117000 TCPStore.cpp:125] [c10d] recvValue failed").level == "WARNING"
    assert normalise("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout").level == "ERROR"


def test_the_store_going_away_during_an_intended_shutdown_raises_no_alarm(tmp_path):
    log = ("INFO 09-01 07:40:18 [launcher.py:80] Shutting down FastAPI HTTP server.\n" + BARRIER
           + "INFO:     Shutting down\nINFO:     Application shutdown complete.\n")
    assert not [f for f in explain_text(tmp_path, log) if f.remedy.severity == "error"]


def test_the_store_going_away_in_a_teardown_function_raises_no_alarm_without_a_notice(tmp_path):
    teardown = BARRIER.replace("work = group.barrier(opts=opts)", "pg.shutdown()").replace(", in barrier", ", in shutdown")
    assert not [f for f in explain_text(tmp_path, teardown) if f.remedy.severity == "error"]


def test_the_store_going_away_while_serving_is_still_reported(tmp_path):
    log = "INFO 09-01 07:40:10 [core.py:90] Added request cmpl-1.\n" + BARRIER.replace("destroy_model_parallel", "execute_model")
    found = explain_text(tmp_path, log)
    assert found and found[0].remedy.severity == "error" and "Failed to recv" in found[0].crash.exception


def test_another_process_s_crash_is_the_root_not_the_store_warnings_after_it(tmp_path):
    log = ("[2025-09-01 07:40:10] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/nsa_backend.py", line 1633, in _forward_fa3\n'
           "    o = flash_attn_with_kvcache(\n"
           "RuntimeError: batch_size must be equal to batch_size_k\n" + STORE_WARNING)
    first = explain_text(tmp_path, log)[0]
    assert first.crash is not None and first.crash.exception == "RuntimeError: batch_size must be equal to batch_size_k"


def test_a_store_traceback_before_the_real_crash_does_not_hide_it(tmp_path):
    log = (BARRIER.replace("destroy_model_parallel", "execute_model")
           + "Traceback (most recent call last):\n"
           f'  File "{SITE}/vllm/v1/core/sched/scheduler.py", line 500, in schedule\n'
           "    assert num_new_tokens > 0\nAssertionError\n")
    first = explain_text(tmp_path, log)[0]
    assert first.crash is not None and first.crash.exception == "AssertionError: assert num_new_tokens > 0"
