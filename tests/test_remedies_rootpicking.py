"""Root picking: a paste's own heading (`Error:` alone on its line) and a labelled command line (`Command: vllm
serve ...` in any language) are not exceptions, so the real exception below them is the root; a message-less
AssertionError takes the `assert` statement printed in the frame above it as its message."""

from __future__ import annotations

import pytest

from remedies.bareassert import with_statement
from remedies.crash import exception_line
from tests.pastes import SITE
from tests.pastes import explain_paste as explain

HEADS_EXCEPTION = "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3)."


@pytest.mark.parametrize("heading", ["Error:", "ERROR:", "Exception:", "Errors:", "Output:", "Error :"])
def test_a_bare_heading_is_not_an_exception_line(heading):
    assert not exception_line(heading)


@pytest.mark.parametrize("line", ["RuntimeError:", "shutil.Error:", "StopIteration", "AssertionError",
                                  "Error: the container exits", HEADS_EXCEPTION, "SystemExit: 1"])
def test_an_exception_line_python_can_print_stays_one(line):
    assert exception_line(line)


LABELS = ["Command", "Cmd", "Docker命令", "Launch command", "Befehl", "Commande", "Run", "Start script"]
COMMANDS = ["vllm serve Qwen/Qwen3.5-35B-A3B --tensor-parallel-size 2",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-35B-A3B --tp 2",
            "CUDA_VISIBLE_DEVICES=0,1 vllm serve /models/qwen --port 8000",
            "$ docker run --gpus all vllm/vllm-openai:latest --model Qwen/Qwen3-8B",
            "sudo docker compose up", "torchrun --nproc-per-node 2 serve.py"]


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_labelled_command_line_is_not_an_exception_line(label, command):
    if label.count(" ") and command.startswith("sudo docker compose"):
        command = "docker compose up"
    assert not exception_line(f"{label}: {command}")


def test_an_exception_whose_message_starts_with_a_program_name_stays_one():
    assert exception_line("RuntimeError: python process exited with code 1")
    assert exception_line("subprocess.CalledProcessError: docker run returned 125")


HEADS_WORDS = "Total number of attention heads (40) must be divisible by tensor parallel size (3)"


@pytest.mark.parametrize("heading", ["Error:", "**Error:**", "Exception:", "ERROR:"])
@pytest.mark.parametrize("gap", ["", "\n", "\nThe log:\n"])
def test_the_exception_below_an_error_heading_is_the_root_not_the_heading(tmp_path, heading, gap):
    text = (f"# vllm serve fails: {HEADS_WORDS}\nI start the server with three GPUs.\n{heading}\n{gap}"
            f"{HEADS_EXCEPTION}\n")
    found = explain(tmp_path, text)
    assert found[0].remedy.id == "QD-R-VLLM-HEADS-NOT-DIVISIBLE"
    assert found[0].root is not None and found[0].root.exception == HEADS_EXCEPTION


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("command", COMMANDS[:3])
def test_a_labelled_command_line_is_never_the_root(tmp_path, label, command):
    found = explain(tmp_path, f"{label}: {command}\n{HEADS_WORDS}\n")
    assert found[0].remedy.id == "QD-R-VLLM-HEADS-NOT-DIVISIBLE"
    assert found[0].root is not None and found[0].root.exception == HEADS_WORDS


STATEMENTS = ["assert config.model_type in ('qwen3_5_moe', 'qwen3_5')",
              "assert self.hf_text_config.num_attention_heads % tp == 0",
              "assert len(layer_types) == num_hidden_layers"]


@pytest.mark.parametrize("statement", STATEMENTS)
@pytest.mark.parametrize("prefix", ["", "ERROR 05-01 10:00:00 [core.py:100] ", "(EngineCore_DP0 pid=7) "])
def test_a_bare_assertion_carries_the_assert_statement_as_its_message(tmp_path, statement, prefix):
    text = "\n".join([f"{prefix}Traceback (most recent call last):",
                      f'{prefix}  File "{SITE}/vllm/transformers_utils/config.py", line 640, in get_config',
                      f"{prefix}    {statement}", f"{prefix}AssertionError", ""])
    found = explain(tmp_path, text)
    assert found and f"AssertionError: {statement}" in found[0].why


def test_with_statement_leaves_messages_and_other_statements_alone():
    assert with_statement("AssertionError", "assert x > 0") == "AssertionError: assert x > 0"
    assert with_statement("AssertionError: x must be positive", "assert x > 0, msg") == \
        "AssertionError: x must be positive"
    assert with_statement("AssertionError", "raise AssertionError") == "AssertionError"
    assert with_statement("KeyError", "assert x") == "KeyError"
