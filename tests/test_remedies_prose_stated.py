"""A bug report whose only statement of the failure is in its words (an issue title, a sentence, a bullet, an
inline code span, CJK quotes), with no log line that names it, still gets a finding with that exception as its
root (remedies/prose.py). Prose that names an error class without a message, or a page about another program,
stays silent. The messages are the engines' and libraries' own (pyzmq's bind error, zmq/sugar/socket.py;
torch.utils.cpp_extension's "CUDA_HOME environment variable is not set")."""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources
from remedies.prose import inline_exception

CUT_TRACEBACK = ["```", "Traceback (most recent call last):",
                 '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 500, in run',
                 "```"]
NVCC = "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."


def explain(tmp_path: Path, lines: list[str]) -> list:
    path = tmp_path / "issue.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


def test_an_exception_stated_in_the_title_is_the_root_when_the_traceback_is_cut(tmp_path):
    found = explain(tmp_path, [f"# [Bug]: vllm serve fails: {NVCC}", "", *CUT_TRACEBACK])
    assert found and found[0].crash is not None
    assert found[0].crash.exception.startswith("OSError: CUDA_HOME environment variable is not set")


def test_an_exception_in_an_inline_code_span_of_a_question_is_read(tmp_path):
    found = explain(tmp_path, [f"Running vllm serve with -tp 2 prints `{NVCC}`, how to fix?"])
    assert found and found[0].crash is not None and found[0].crash.exception.startswith("OSError: CUDA_HOME")


def test_cjk_quotes_and_a_cjk_sentence_around_the_exception_are_read():
    assert inline_exception(f"vllm 启动报错「{NVCC}」", stated=True) == NVCC.rstrip(".")
    assert inline_exception(f"启动报错：{NVCC}", stated=True) == NVCC.rstrip(".")


def test_a_title_naming_a_known_message_names_its_entry(tmp_path):
    found = explain(tmp_path, ["# [Bug]: zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')",
                               "", "vllm serve Qwen/Qwen3.5-35B-A3B --port 8000", *CUT_TRACEBACK])
    assert found[0].remedy.id == "QD-R-VLLM-PORT-IN-USE"


def test_an_error_class_without_a_message_or_a_page_about_another_program_stays_silent(tmp_path):
    assert explain(tmp_path, ["With vllm I sometimes see a RuntimeError: on shutdown."]) == []
    assert explain(tmp_path, [f"My Flask app prints `{NVCC}` when I start it."]) == []
    assert inline_exception("vllm gives `ValueError: bad`", stated=True) is None  # too short to be a statement


MESSAGE = "--enable-prefix-mm-cache requires --encoder-only to be enabled"  # sglang/srt/server_args.py


def test_an_engine_message_quoted_in_inline_code_without_its_class_is_the_root(tmp_path):
    found = explain(tmp_path, [f"sglang refuses to start and only prints `{MESSAGE}`, what does it mean?"])
    assert found and found[0].crash is not None and MESSAGE in found[0].crash.exception
    assert found[0].located is not None


def test_a_command_in_inline_code_is_no_message(tmp_path):
    assert explain(tmp_path, ["How do I run `vllm serve Qwen/Qwen3.5-35B-A3B --max-model-len 32768` on 2 GPUs?"]) == []
