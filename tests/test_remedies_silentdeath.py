"""A log that stops during a startup phase, or carries a kill's mark, names the kill and the phase; a healthy boot
pasted up to any of its lines stays silent (remedies/silentdeath.py states the rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.silentdeath import KILLED_ID, Reading, stop_of

HEALTHY = Path(__file__).parent / "data" / "healthy"

# What each phase prints while it runs, as the engines print it (vLLM 0.32, SGLang 0.5.23, older wordings)
RUNNING = {
    "loading the weights": [
        "INFO 05-01 10:00:10 [gpu_model_runner.py:1800] Starting to load model Qwen/Qwen3-30B-A3B...",
        "Loading safetensors checkpoint shards:  12% Completed | 2/16 [00:04<00:28,  2.01s/it]",
        "[2025-05-01 10:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "Loading pt checkpoint shards:  50% Completed | 1/2 [00:03<00:03,  3.00s/it]",
    ],
    "streaming the weights (Run:ai Model Streamer)": [
        "[RunAI Streamer] CPU Buffer size: 16.0 GiB for files: ['model-00001-of-00016.safetensors']",
        "Loading safetensors using Runai Model Streamer:   6% Completed | 1/16 [00:05<01:15,  5.01s/it]",
    ],
    "compiling the model (torch.compile)": [
        "INFO 05-01 10:00:55 [backends.py:541] Dynamo bytecode transform time: 8.10 s",
        "INFO 05-01 10:00:55 [backends.py:530] Using cache directory: /var/cache/vllm/torch_compile_cache/ab/"
        "rank_0_0/backbone for vLLM's torch.compile",
    ],
    "capturing CUDA graphs": [
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  40%|####      | 27/67 [00:05<00:07,  5.20it/s]",
        "[2025-05-01 10:01:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.1 GB",
        "Capturing batches (bs=128 avail_mem=20.05 GB):  25%|##5       | 9/36 [00:02<00:06,  4.1it/s]",
    ],
}
# What ends each phase (a later line means the phase finished)
ENDS = {
    "loading the weights": "INFO 05-01 10:00:46 [gpu_model_runner.py:1892] Model loading took 56.9 GiB and 33.2 seconds",
    "streaming the weights (Run:ai Model Streamer)":
        "[RunAI Streamer] Overall time to stream 34.3 GiB of all files to cpu: 28.52s, 1.2 GiB/s",
    "compiling the model (torch.compile)": "INFO 05-01 10:01:20 [monitor.py:34] torch.compile takes 20.47 s in total",
    "capturing CUDA graphs": "INFO 05-01 10:02:00 [gpu_model_runner.py:2500] Graph capturing finished in 12 secs, took 0.56 GiB",
}
MARKS = [
    "Killed",
    "vllm-1 exited with code 137",
    "Process exited with code -9",
    "ERROR 05-01 10:00:20 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting down executor.",
    "*** SIGTERM received at time=1714557612 on cpu 3 ***",
    "[2025-05-01 10:00:20] Child process unexpectedly failed with exitcode=-9. pid=4321",
    "Back-off restarting failed container vllm in pod vllm-0 (CrashLoopBackOff)",
]
SAID = [
    "The pod just restarts here, no error at all.",
    "After this line the container exits without any error.",
    "日志到这里就停了，进程直接退出，没有任何报错。",
]
HEAD = "INFO 05-01 10:00:00 [api_server.py:1052] vLLM API server version 0.10.1"
CASES = [(phase, line) for phase, lines in RUNNING.items() for line in lines]
# every phase line with a kill mark, every kill mark with a phase line (each pairing, without all of them)
MARKED = sorted({(*CASES[i % len(CASES)], MARKS[i % len(MARKS)]) for i in range(max(len(CASES), len(MARKS)))}
                | {(*CASES[(i * 3) % len(CASES)], MARKS[i]) for i in range(len(MARKS))})
SAID_CASES = [(*CASES[i], SAID[i % len(SAID)]) for i in range(len(CASES))]


def explain(tmp_path: Path, lines: list[str]):
    path = tmp_path / "paste.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


@pytest.mark.parametrize("phase, running, mark", MARKED)
def test_a_kill_mark_after_a_running_phase_names_the_kill_and_the_phase(tmp_path, phase, running, mark):
    found = explain(tmp_path, [HEAD, running, mark])
    assert found and found[0].remedy.id in (KILLED_ID, "QD-R-HOST-OOM-KILLER"), found[0].remedy.id
    assert f"stops while {phase}" in found[0].remedy.why


@pytest.mark.parametrize("phase, running, said", SAID_CASES)
def test_a_log_that_stops_in_a_phase_with_the_reporters_words_names_the_phase(tmp_path, phase, running, said):
    found = explain(tmp_path, [said, "", "```", HEAD, running, "```"])
    assert [f.remedy.id for f in found] == [KILLED_ID]
    assert f"stops while {phase}" in found[0].remedy.why and found[0].first.line == 5


@pytest.mark.parametrize("phase", sorted(RUNNING))
def test_a_paste_of_nothing_but_an_unfinished_phase_is_where_the_log_stopped(tmp_path, phase):
    """What the reporter pasted is only the phase's lines (the streamer's buffers, a bar short of 100%)."""
    lines = ["```", *RUNNING[phase], "```"]
    found = explain(tmp_path, lines)
    assert [f.remedy.id for f in found] == [KILLED_ID] and f"stops while {phase}" in found[0].remedy.why
    assert explain(tmp_path, ["```", *RUNNING[phase], ENDS[phase], "```"]) == []


@pytest.mark.parametrize("phase, running", CASES)
def test_a_log_that_merely_stops_in_a_phase_is_no_death(tmp_path, phase, running):
    """A boot pasted up to a line (a question about a warning) stops mid-phase too: without evidence, silence."""
    assert explain(tmp_path, [HEAD, running]) == []


@pytest.mark.parametrize("phase, running", CASES)
@pytest.mark.parametrize("said", SAID[:2])
def test_a_phase_that_ended_is_not_where_the_log_stopped(phase, running, said):
    assert stop_of([said, HEAD, running, ENDS[phase]]) is None


@pytest.mark.parametrize("mark", ["*** SIGTERM received at time=1714557612 on cpu 3 ***",
                                  "vllm-1 exited with code 137"])
def test_a_stop_asked_for_before_the_kill_is_no_death(mark):
    ready = "INFO:     Application startup complete."
    stopping = "INFO 05-01 10:09:00 [launcher.py:80] Shutting down FastAPI HTTP server."
    assert stop_of([HEAD, ready, stopping, mark]) is None
    assert stop_of([HEAD, ready, "*** SIGTERM received at time=1714557612 on cpu 3 ***"]) is None


def test_a_pod_evicted_for_memory_is_the_kill_entry(tmp_path):
    found = explain(tmp_path, ["$ kubectl describe pod vllm-0", "Status:         Failed", "Reason:         Evicted",
                               "Message:        The node was low on resource: memory."])
    assert found[0].remedy.id == KILLED_ID


def test_the_oom_killer_entry_is_told_the_phase_too(tmp_path):
    found = explain(tmp_path, [HEAD, RUNNING["loading the weights"][1], "Killed"])
    assert found[0].remedy.id == "QD-R-HOST-OOM-KILLER" and "stops while loading the weights" in found[0].remedy.why


@pytest.mark.parametrize("log", sorted(p.name for p in HEALTHY.glob("*.log")))
def test_a_healthy_log_cut_at_any_line_is_no_death(log):
    """Except where the cut leaves nothing but one unfinished phase's lines: that paste is the stopped log's shape."""
    reading, stopped = Reading(), []
    for number, line in enumerate((HEALTHY / log).read_text(encoding="utf-8", errors="replace").split("\n"), 1):
        reading.read(line)
        stopped += [number] if reading.stop() is not None and not reading.only_phase() else []
    assert stopped == []


@pytest.mark.parametrize("said", ["The pod is in a crash loop, the only log line is:",
                                  "It keeps restarting and this is all the log shows:"])
def test_a_restart_loop_told_in_prose_is_a_kill(tmp_path, said):
    debug = "DEBUG 05-01 10:00:00 [__init__.py:30] No plugins for group vllm.platform_plugins found."
    assert [f.remedy.id for f in explain(tmp_path, [said, "", "```", debug, "```"])] == [KILLED_ID]


def test_a_container_that_exits_after_the_banner_names_the_start(tmp_path):
    banner = [HEAD, "INFO 05-01 10:00:00 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-30B-A3B'}"]
    found = explain(tmp_path, ["The container exits right after this, no error:", "", "```", *banner, "```"])
    assert found[0].remedy.id == KILLED_ID and "stops while starting the engine" in found[0].remedy.why
    assert explain(tmp_path, ["```", *banner, "```"]) == []  # a boot banner alone is no death
