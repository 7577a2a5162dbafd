"""A pasted log is read through the layers it arrives in: interleaved workers, gutters, tables, HTML, JSON
records, newest-first exports and IPython tracebacks (remedies/layers.py, remedies/ranks.py,
remedies/inferred.py). Messages are the catalogue's samples (printed by the engines' source) and the mined
raise sites; nothing here is copied from a held-out log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.crash import Frame
from remedies.inferred import INFERRED, inferred
from remedies.exports import peel_newest_first
from remedies.layers import peel_gutter, unwrap
from remedies.loader import load_catalogue
from remedies.ranks import gather, worker

VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
BF16 = "QD-R-VLLM-BF16-CAPABILITY"


def sample(remedy_id: str) -> str:
    """The entry's first sample: a message as its engine prints it."""
    return load_catalogue().get(remedy_id).samples[0]


def explain(tmp_path: Path, text: str, name: str = "paste.log") -> list:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return explain_sources([path])


def assert_named(found: list, remedy_id: str, function: str = "_check_if_gpu_supports_dtype") -> None:
    """The entry is named first, with its root exception raised in `function` as the traceback printed it."""
    assert found[0].remedy.id == remedy_id
    root = found[0].root
    assert root is not None and root.frame is not None and not root.below
    assert root.frame.function == function


def bf16_traceback() -> list[str]:
    """vLLM's bf16 check as a traceback (vllm/platforms/cuda.py check_if_supports_dtype raises it)."""
    return ["Traceback (most recent call last):",
            f'  File "{VLLM}/worker/worker.py", line 140, in init_device',
            "    _check_if_gpu_supports_dtype(self.model_config.dtype)",
            f'  File "{VLLM}/worker/worker.py", line 478, in _check_if_gpu_supports_dtype',
            "    raise ValueError(",
            sample(BF16)]


# --- interleaved workers -------------------------------------------------------------------------------------

RAY_FRAMES = [
    "ERROR 12-03 10:00:01 [worker_base.py:620] Traceback (most recent call last):",
    f'ERROR 12-03 10:00:01 [worker_base.py:620]   File "{VLLM}/worker/worker_base.py", line 612, in execute_method',
    "ERROR 12-03 10:00:01 [worker_base.py:620]     return run_method(target, method, args, kwargs)",
    f'ERROR 12-03 10:00:01 [worker_base.py:620]   File "{VLLM}/executor/ray_utils.py", line 312, in initialize_ray_cluster',
    'ERROR 12-03 10:00:01 [worker_base.py:620]     raise ValueError("Current node has no GPU available. "',
]


def interleave(prefixes: list[str], lines: list[str], lag: int = 2) -> list[str]:
    """Each worker prints the same lines, the next worker `lag` lines behind the one before it: their lines
    alternate, so every traceback header after the first falls among another worker's frames."""
    queues = [[f"{prefix}{line}" for line in lines] for prefix in prefixes]
    out: list[str] = []
    for step in range(len(lines) + lag * len(prefixes)):
        for index, queue in enumerate(queues):
            at = step - index * lag
            if 0 <= at < len(queue):
                out.append(queue[at])
    return out


@pytest.mark.parametrize("prefixes", [
    ["(RayWorkerWrapper pid=811, ip=10.0.0.3) ", "(RayWorkerWrapper pid=812, ip=10.0.0.2) "],
    ["(VllmWorker TP0 pid=71) ", "(VllmWorker TP1 pid=72) "],
    ["[rank0]: ", "[rank1]: "],
    ["[default0]:", "[default1]:"],
    ["[1,0]<stderr>:", "[1,1]<stderr>:"],
], ids=["ray", "vllm-tp", "torchrun-rank", "torchrun-default", "mpirun"])
def test_interleaved_workers_whose_exception_line_is_missing_name_the_mined_raise_as_inferred(tmp_path, prefixes):
    found = explain(tmp_path, "\n".join(interleave(prefixes, RAY_FRAMES)) + "\n")
    assert found[0].remedy.id == "QD-R-RAY-NO-GPU-ON-DRIVER"
    root = found[0].root
    assert root is not None and root.inferred
    assert root.exception.startswith("ValueError: Current node has no {} available.")
    assert root.frame is not None and root.frame.function == "initialize_ray_cluster"
    assert INFERRED in found[0].why


def test_the_worker_that_prints_its_exception_names_the_root_when_another_worker_is_cut(tmp_path):
    """Rank 1 starts first and its paste ends mid-stack (in a collective); rank 0 raises the bf16 check.
    Read as one run of lines the frames of both would be mixed and rank 1's header would cut rank 0's."""
    cut = ["Traceback (most recent call last):",
           f'  File "{VLLM}/worker/worker.py", line 140, in init_device',
           "    init_worker_distributed_environment(self.parallel_config, self.rank)",
           f'  File "{VLLM}/distributed/parallel_state.py", line 1020, in init_distributed_environment',
           "    torch.distributed.barrier()"]
    rank1 = [f"[rank1]: {line}" for line in cut]
    rank0 = [f"[rank0]: {line}" for line in bf16_traceback()]
    mixed = [rank1[0], rank1[1], rank0[0], rank1[2], rank0[1], rank0[2], rank0[3], rank0[4], rank1[3], rank1[4],
             rank0[5]]
    assert_named(explain(tmp_path, "\n".join(mixed) + "\n"), BF16)


def test_a_wrapper_that_prints_its_exception_leaves_the_root_to_the_workers_cut_traceback(tmp_path):
    """vLLM's EngineCore reports that a worker failed (multiproc_executor.py wait_for_ready re-raises); the
    workers' own tracebacks, cut, are the root."""
    workers = interleave(["(VllmWorker TP0 pid=71) ", "(VllmWorker TP1 pid=72) "], RAY_FRAMES)
    core = [f"(EngineCore_DP0 pid=60) ERROR 12-03 10:00:02 [core.py:700] {line}" for line in [
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        f'  File "{VLLM}/v1/executor/multiproc_executor.py", line 500, in wait_for_ready',
        "    raise e from None",
        "Exception: WorkerProc initialization failed due to an exception in a background process. "
        "See stack trace for root cause."]]
    found = explain(tmp_path, "\n".join(workers[:6] + core[:3] + workers[6:] + core[3:]) + "\n")
    assert found[0].remedy.id == "QD-R-RAY-NO-GPU-ON-DRIVER"
    assert found[0].root.inferred and found[0].root.frame.function == "initialize_ray_cluster"


def test_each_workers_lines_are_gathered_into_one_block_the_one_printing_its_exception_first():
    frames = bf16_traceback()
    first = [f"[rank0]: {line}" for line in frames[:-1]]
    second = [f"[rank1]: {line}" for line in frames]
    lines = list(enumerate([x for pair in zip(first, second) for x in pair] + second[len(first):], 1))
    gathered = [text for _, text in gather(lines)]
    assert gathered == second + first


def test_workers_that_do_not_interleave_tracebacks_are_left_in_order():
    lines = list(enumerate(["[rank0]: INFO starting", "[rank1]: INFO starting",
                            *[f"[rank1]: {line}" for line in bf16_traceback()], "[rank0]: INFO still serving"], 1))
    assert gather(lines) is None


def test_a_workers_key_is_read_from_its_nested_prefixes():
    assert worker("vllm-1  | (VllmWorker TP1 pid=72) ERROR x") == "VllmWorker TP1 pid=72 vllm-1"
    assert worker("[2026-12-03 10:00:00 DP0 TP3] Scheduler hit an exception") == "DP0 TP3"
    assert worker("INFO 12-03 10:00:00 [core.py:12] no worker prefix") is None


def test_interleaved_workers_reported_at_their_own_lines(tmp_path):
    prefixes = ["(VllmWorker TP0 pid=71) ", "(VllmWorker TP1 pid=72) "]
    text = "INFO 12-03 09:59:59 [api_server.py:1] starting\n" + "\n".join(interleave(prefixes, RAY_FRAMES)) + "\n"
    found = explain(tmp_path, text)
    raw = text.split("\n")[found[0].first.line - 1]
    assert "ray_utils.py" in raw and raw.startswith("(VllmWorker TP0 pid=71)")


# --- the exception inferred from its raise site ----------------------------------------------------------------

def test_a_raise_statement_names_its_class_and_the_one_message_mined_at_that_site():
    frame = Frame(f"{VLLM}/executor/ray_utils.py", 312, "initialize_ray_cluster")
    named = inferred(frame, 'raise ValueError("Current node has no GPU available. "')
    assert named is not None and named.startswith("ValueError: Current node has no {} available.")


def test_a_raise_whose_site_raises_several_messages_names_only_its_class():
    frame = Frame(f"{VLLM}/executor/ray_utils.py", 300, "initialize_ray_cluster")
    assert inferred(frame, "raise ValueError(") == "ValueError"


def test_a_bare_assert_is_an_assertion_error_with_its_test():
    frame = Frame(f"{VLLM}/v1/core/sched/scheduler.py", 10, "not_a_mined_function")
    assert inferred(frame, "assert num_new_tokens > 0") == "AssertionError (assert num_new_tokens > 0)"


def test_a_statement_that_raises_nothing_infers_nothing():
    frame = Frame(f"{VLLM}/executor/ray_utils.py", 312, "initialize_ray_cluster")
    assert inferred(frame, "return run_method(target, method, args, kwargs)") is None


def test_an_exception_line_cut_short_is_completed_from_the_raise_site_its_frame_printed(tmp_path):
    """Several mined messages start "tensor model parallel gr..."; the frame and its statement pick one."""
    text = "\n".join([
        "Traceback (most recent call last):",
        f'  File "{VLLM}/distributed/parallel_state.py", line 1100, in initialize_model_parallel',
        '    assert _TP is None, ("tensor model parallel group is already initialized")',
        "AssertionError: tensor model parallel gr"]) + "\n"
    found = explain(tmp_path, text)
    assert found[0].located is not None
    assert found[0].located.hit.template.text == "tensor model parallel group is already initialized"


def test_a_cut_traceback_of_statements_without_frames_is_no_crash(tmp_path):
    text = "ERROR 12-03 10:00:01 [core.py:1] Traceback (most recent call last):\n    raise ValueError(\n"
    assert not [f for f in explain(tmp_path, text) if f.remedy.severity == "error"]


def test_a_paste_cut_in_the_middle_of_a_stack_is_the_generic_crash_at_its_deepest_frame(tmp_path):
    """Changed on purpose (issue 21): a traceback cut before its exception line is still a located crash
    (remedies/cuttrace.py), without an engine-bug verdict."""
    text = "\n".join(RAY_FRAMES[:3]) + "\n"
    found = [f for f in explain(tmp_path, text) if f.remedy.severity == "error"]
    assert [f.remedy.id for f in found] == ["QD-R-UNKNOWN"] and found[0].crash.kind == "cut"
    assert found[0].crash.frame is not None and found[0].engine_bug is None


# --- gutters ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gutter", ["{n}   ", "{n:>3} | ", "L{n}: ", "{n}:", "{n}\t"],
                         ids=["viewer", "bar", "L-colon", "colon", "tab"])
def test_a_gutter_of_consecutive_numbers_is_stripped(tmp_path, gutter):
    text = "\n".join(gutter.format(n=55 + i) + line for i, line in enumerate(bf16_traceback())) + "\n"
    found = explain(tmp_path, text)
    assert_named(found, BF16)
    assert found[0].first.line == len(bf16_traceback())


def test_numbers_that_are_part_of_the_messages_are_kept():
    lines = list(enumerate(["2 GPUs found", "8 workers started", "3 retries left"], 1))
    assert peel_gutter(lines) is None
    lines = list(enumerate(["55   x", "57   y", "58   z"], 1))
    assert peel_gutter(lines) is None


def test_a_gutter_run_keeps_one_column():
    lines = list(enumerate(["9 | a", "10 | b", "  11 | c"], 1))
    assert peel_gutter(lines) is None
    lines = list(enumerate([" 9 | a", "10 | b", "11 | c"], 1))
    assert [text for _, text in peel_gutter(lines)] == ["a", "b", "c"]


# --- Markdown tables, HTML -------------------------------------------------------------------------------------

def test_an_error_inside_a_markdown_table_cell_is_read(tmp_path):
    cell = "<br>".join(line.replace("|", "\\|") for line in bf16_traceback())
    text = f"| step | error |\n|---|---|\n| start server | {cell} |\n"
    assert_named(explain(tmp_path, text), BF16)


def test_html_entities_tags_and_invisible_characters_are_peeled(tmp_path):
    message = sample("QD-R-VLLM-QUANT-METHOD-UNKNOWN").replace("'", "&#39;").replace("[", "\u200b[")
    text = ("<details><summary>log</summary>\n<pre>\n" + "\n".join(bf16_traceback()[:-1])
            + f"\n{message}\n</pre>\n</details>\n")
    found = explain(tmp_path, text)
    assert_named(found, "QD-R-VLLM-QUANT-METHOD-UNKNOWN")
    assert found[0].root.exception == sample("QD-R-VLLM-QUANT-METHOD-UNKNOWN")


def test_quoted_html_escapes_read_as_the_characters_they_stand_for():
    view = unwrap("&gt; ValueError: &quot;x&quot; &amp; y\r\n")
    assert view is not None and view.lines == ('> ValueError: "x" & y',)


# --- JSON records ----------------------------------------------------------------------------------------------

def test_json_log_records_are_read_as_their_logger_printed_them(tmp_path):
    """python-json-logger (vLLM's VLLM_LOGGING_CONFIG_PATH recipe): `message`, `levelname`, and the formatted
    traceback in `exc_info`."""
    frames = bf16_traceback()
    records = [
        {"asctime": "2026-12-03 10:00:00", "levelname": "INFO", "message": "Initializing an LLM engine"},
        {"asctime": "2026-12-03 10:00:01", "levelname": "ERROR", "message": "Engine failed to start",
         "exc_info": "\n".join(frames)},
    ]
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    found = explain(tmp_path, text)
    assert_named(found, BF16)
    assert found[0].first.line == 2


def test_docker_json_file_lines_are_read_as_the_container_printed_them(tmp_path):
    text = "".join(json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-12-03T10:00:00Z"}) + "\n"
                   for line in bf16_traceback())
    assert_named(explain(tmp_path, text), BF16)


def test_a_json_payload_that_is_no_log_record_is_read_as_it_is():
    assert unwrap('{"object": "error", "message": "The model `x` does not exist.", "code": 404}\n') is None


# --- newest-first exports, IPython -----------------------------------------------------------------------------

def test_a_newest_first_export_is_put_back_in_the_order_it_was_written(tmp_path):
    lines = [f"2026-12-03T10:00:{i:02d}.000Z\t{line}" for i, line in enumerate(bf16_traceback())]
    text = "\n".join(reversed(lines)) + "\n"
    assert_named(explain(tmp_path, text), BF16)
    assert [t for _, t in peel_newest_first(list(enumerate(reversed(lines), 1)))] == lines


def test_an_export_written_oldest_first_is_left_alone():
    lines = list(enumerate([f"2026-12-03T10:00:{i:02d}Z x" for i in range(6)], 1))
    assert peel_newest_first(lines) is None


def test_an_ipython_traceback_reads_as_pythons(tmp_path):
    text = "\n".join([
        "---------------------------------------------------------------------------",
        "ValueError                                Traceback (most recent call last)",
        "Cell In[3], line 1",
        "----> 1 llm = LLM(model='Qwen/Qwen3.5-35B-A3B', dtype='bfloat16')",
        "",
        f"File {VLLM}/worker/worker.py:478, in _check_if_gpu_supports_dtype(torch_dtype)",
        "    476 if torch_dtype == torch.bfloat16:",
        "    477     compute_capability = current_platform.get_device_capability()",
        "--> 478     raise ValueError(",
        "",
        sample(BF16),
    ]) + "\n"
    assert_named(explain(tmp_path, text), BF16)


def test_an_older_ipython_traceback_takes_its_line_numbers_from_the_marked_lines(tmp_path):
    """IPython 7 and before name a frame `path in func(args)` and number only the `-->` line."""
    text = "\n".join([
        "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
        "\x1b[0;31mValueError\x1b[0m                                Traceback (most recent call last)",
        "<ipython-input-3-5f1e2a> in <module>",
        "----> 1 llm = LLM(model='Qwen/Qwen3.5-35B-A3B', dtype='bfloat16')",
        "",
        f"{VLLM}/worker/worker.py in _check_if_gpu_supports_dtype(torch_dtype)",
        "    477         compute_capability = current_platform.get_device_capability()",
        "--> 478         raise ValueError(",
        "    479             \"Bfloat16 is only supported on GPUs with compute capability \"",
        "",
        sample(BF16),
    ]) + "\n"
    assert_named(explain(tmp_path, text), BF16)


def test_a_plain_log_has_no_layers():
    assert unwrap("\n".join(bf16_traceback()) + "\n") is None


def test_a_csv_export_newest_first_is_read_in_order_from_its_message_column(tmp_path):
    """CloudWatch's CSV download: epoch milliseconds, then the message quoted, quotes inside it doubled."""
    rows = [f'{1733360000000 + i * 1000},"{line.replace(chr(34), chr(34) * 2)}"' for i, line in enumerate(bf16_traceback())]
    assert_named(explain(tmp_path, "\n".join(reversed(rows)) + "\n"), BF16)


def test_a_logcli_export_keeps_the_indentation_after_its_label_set(tmp_path):
    rows = [f'2026-12-03T10:00:{i:02d}Z {{app="vllm", pod="vllm-0"}} {line}' for i, line in enumerate(bf16_traceback())]
    assert_named(explain(tmp_path, "\n".join(rows) + "\n"), BF16)


def test_a_loggers_own_timestamps_are_no_export_column():
    lines = [f"2026-12-03 10:00:0{i},123\tINFO worker.py:1841 -- Connected to Ray cluster." for i in range(6)]
    assert unwrap("\n".join(lines) + "\n") is None


def test_an_excerpt_piped_to_standard_input_is_unwrapped_like_a_file():
    cell = "<br>".join(bf16_traceback())
    paste = f"| step | error |\n|---|---|\n| start server | {cell} |\n".encode()
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "doctor", "explain", "-", "--format", "json"], input=paste,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(root)}, cwd=root, timeout=120)
    found = json.loads(done.stdout)["sections"]["remedies"][0]
    assert found["id"] == BF16
    assert found["first_line"] == {"source": "-", "line": 3}
    assert found["root"]["raised_at"].endswith("in _check_if_gpu_supports_dtype")


def test_sterns_pod_and_container_prefix_is_peeled(tmp_path):
    lines = [f"vllm-7d9f8c6b5-x2k4p vllm {line}" for line in bf16_traceback()]
    assert_named(explain(tmp_path, "\n".join(lines) + "\n"), BF16)


def test_prose_is_no_pod_prefix():
    lines = ["Starting the server now", "the model loads in a minute", "then it serves requests", "ok", "done"]
    assert unwrap("\n".join(lines) + "\n") is None


def test_a_traceback_escaped_into_a_json_string_is_read_line_by_line(tmp_path):
    """A server's error body quoting the traceback (`json.dumps` of `traceback.format_exc()`), pasted as is."""
    text = json.dumps({"detail": "\n".join(bf16_traceback()) + "\n"}) + "\n"
    assert_named(explain(tmp_path, text), BF16)


def test_an_escaped_traceback_cut_before_its_exception_names_the_inferred_raise(tmp_path):
    lines = [line.split("] ", 1)[1] for line in RAY_FRAMES]
    text = repr("\n".join(lines) + "\n") + "\n"
    found = explain(tmp_path, text)
    assert found[0].remedy.id == "QD-R-RAY-NO-GPU-ON-DRIVER" and found[0].root.inferred
