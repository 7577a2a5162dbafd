"""Bridge to the backend's real argument parser, run in a subprocess so that the CLI never imports vllm/sglang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from doctor.boundedrun import OutputTooLarge, run_bounded
from doctor.errors import DoctorError
from doctor.flags.issues import FlagIssue, ValidationReport
from doctor.safeio import BadReply, reply_json

PROBE = Path(__file__).resolve().parent / "_probe.py"
PYTHON_ENV = {"vllm": "QWEN_DOCTOR_VLLM_PYTHON", "sglang": "QWEN_DOCTOR_SGLANG_PYTHON"}
MODULE = {"vllm": "vllm", "sglang": "sglang"}
MARKER = "@@QWEN_DOCTOR_PROBE@@"


class BridgeError(DoctorError):
    """The backend's python could not build its parser (broken install, timeout)."""


def python_hint(backend: str) -> str:
    """How to name the backend's interpreter, saying what is wrong with the variable when it is set."""
    name = PYTHON_ENV[backend]
    configured = os.environ.get(name)
    if configured:
        return f"{name}={configured} is not an interpreter here; point it at one that has {backend}"
    return f"set {name}"


def find_backend_python(backend: str) -> str | None:
    """Python that can import the backend: $QWEN_DOCTOR_<BACKEND>_PYTHON, else this interpreter if it has it."""
    configured = os.environ.get(PYTHON_ENV[backend])
    if configured:
        return configured if (os.path.exists(configured) or shutil.which(configured)) else None
    import importlib.util

    return sys.executable if importlib.util.find_spec(MODULE[backend]) is not None else None


def _run(python: str, argv: list[str], timeout: float) -> dict:
    env = dict(os.environ, VLLM_NO_USAGE_STATS="1", VLLM_LOGGING_LEVEL="ERROR", TOKENIZERS_PARALLELISM="false")
    try:
        proc = run_bounded([python, str(PROBE), *argv], timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        raise BridgeError(f"{python}: parser did not answer within {timeout:.0f} s") from exc
    except OutputTooLarge as exc:
        raise BridgeError(f"{python}: {exc}") from exc
    except OSError as exc:
        raise BridgeError(f"{python}: cannot run: {exc}") from exc
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            try:  # bounded as any reply we did not write (depth, numbers, a key named twice)
                return reply_json(line[len(MARKER):], f"{python}'s parser answer")
            except BadReply as exc:
                raise BridgeError(str(exc)) from None
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise BridgeError(f"{python}: could not build the {argv[1]} parser: {tail}")


def real_parse(backend: str, args: list[str], python: str | None = None, timeout: float = 180) -> ValidationReport | None:
    """Parse `args` with the installed backend's own parser; None when no python with the backend is found."""
    python = python or find_backend_python(backend)
    if python is None:
        return None
    return _report(backend, _run(python, ["parse", backend, json.dumps(args)], timeout), python)


def real_parse_many(backend: str, arg_lists: list[list[str]], python: str | None = None,
                    timeout: float = 300) -> list[ValidationReport] | None:
    """real_parse for several command lines in one subprocess (the parser import is the slow part)."""
    python = python or find_backend_python(backend)
    if python is None:
        return None
    outs = _run(python, ["parse-many", backend, json.dumps(arg_lists)], timeout)
    if not isinstance(outs, list):
        raise BridgeError(f"{python}: its parser answered in another shape (not a list)")
    return [_report(backend, out, python) for out in outs]


def _report(backend: str, out: Any, python: str) -> ValidationReport:
    """One parse answer as a report; BridgeError for an answer of another shape (an interpreter that is not
    the probe's, or another version of it)."""
    try:
        issues = [FlagIssue(str(i["kind"]), str(i["flag"]), str(i["message"])) for i in out["issues"]]
        return ValidationReport(backend, str(out["version"]), f"real {backend} {out['version']} parser", issues)
    except (KeyError, TypeError, IndexError) as exc:
        raise BridgeError(f"{python}: its parser answered in another shape ({type(exc).__name__}: "
                          f"{str(exc)[:80]})") from None


def real_schema(backend: str, python: str | None = None, timeout: float = 180) -> dict:
    """The installed backend's options in flag-schema JSON form (used to check the static extractor)."""
    python = python or find_backend_python(backend)
    if python is None:
        raise BridgeError(f"no python with {backend} installed (set {PYTHON_ENV[backend]})")
    return _run(python, ["dump", backend], timeout)
