"""Ctrl-C at any moment of the `qwen-doctor` console script, from the first instant of the process to its end
(issue 23, item 4): from the first statement of our first module on, the ending is exit 130 and one line.

Before that statement only the interpreter runs (its C start-up, the io module, site and .pth files); what a caller sees there is the interpreter's (tests/support/sigint.py names it), and this test
accepts it only when no frame of our code is in the traceback. So it cannot fail on a slow machine, where
those windows merely grow: what it judges is where each signal landed, not when it was sent.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.sigint import handled, handler_line, traceback_in_our_code, window

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("qwen-doctor")
COMMANDS = [["check", "--from", str(ROOT / "tests/fixtures/h200.json")],
            ["lint", str(ROOT / "tests/data/lint/serve.sh")],
            ["profiles", "list"]]
pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="the qwen-doctor console script is not installed")


def _interrupted(args: list[str], delay: float) -> tuple[int, str]:
    proc = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode("utf-8", "replace")


def test_the_command_s_first_statement_imports_the_module_whose_first_statement_installs_the_handler() -> None:
    import ast

    body = ast.parse(SCRIPT.read_text()).body
    code = [node for node in body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    assert ast.unparse(code[0]) == "import qwen_doctor_start", "reinstall: pip install -e ."
    source = (ROOT / "qwen_doctor_start.py").read_text()
    before = source.splitlines()[:handler_line(source)]
    assert [line for line in before if line.startswith(("import", "from"))] == ["import _signal", "import os"]
    from doctor.cli.interrupt import EXIT_INTERRUPTED, LINE

    assert f'b"{LINE}\\n"' in source and f"os._exit({EXIT_INTERRUPTED})" in source


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_sigint_at_random_moments_from_spawn_to_the_end_never_shows_a_traceback_of_our_code(args) -> None:
    started = time.monotonic()
    subprocess.run([str(SCRIPT), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    whole = time.monotonic() - started
    first = handler_line((ROOT / "qwen_doctor_start.py").read_text())
    pick = random.Random(23)
    endings = []
    for index in range(8):
        delay = pick.uniform(0, whole if index % 2 else min(whole, 0.08))  # half of them in the start-up
        code, err = _interrupted(args, delay)
        endings.append((round(delay * 1000), code, window(code, err)))
        assert not traceback_in_our_code(err, first), err
        assert window(code, err) != "other", (delay, code, err)
        if "qwen-doctor: interrupted" in err:
            assert handled(code, err), (code, err)
    assert any(where == "handled" for _, _, where in endings), endings
