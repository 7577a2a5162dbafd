"""Engine flag names are spelled in one place: outside doctor/deployment (the settings table) and doctor/flags
(the flag schemas), no module under doctor/ writes a vLLM or SGLang option as a string literal; it reads the name
from the table (`option`, `field_names`, `spellings_of`). The command line's own modules (doctor/cli) and
doctor/command_options.py (qwen-doctor's options that share a name with an engine flag, such as `--port`) may,
and so may doctor/deploy/bench.py, which renders the command line of another program (`vllm bench serve`, a
client whose options `--model` / `--tokenizer` / `--served-model-name` are its own, vllm/benchmarks/serve.py).

Engine flags are every long option the vLLM and SGLang flag schemas list (all versions, aliases and `--no-` forms
included), except argparse's own `--help`. Docstrings are documentation and not read.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from pathlib import Path

import click
import pytest

from doctor import command_options
from doctor.cli.main import cli

DOCTOR = Path(__file__).resolve().parent.parent / "doctor"
SCHEMAS = DOCTOR / "flags" / "schemas"
ALLOWED = ("deployment/", "flags/", "cli/", "command_options.py", "deploy/bench.py")
OPTION = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9_-]*")


@lru_cache(maxsize=1)
def engine_flags() -> frozenset[str]:
    """Every long option of every vLLM and SGLang flag schema, with the schemas' aliases and `--no-` forms."""
    names: set[str] = set()
    helps: set[str] = set()
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text())
        for name, spec in schema["flags"].items():
            (helps if spec.get("action") == "help" else names).add(name)
            if spec.get("action") == "bool_optional":
                names.add("--no-" + name[2:])
        names.update(n for pair in schema["aliases"].items() for n in pair)
    return frozenset(n for n in names - helps if n.startswith("--"))


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def spelled_flags(source: str) -> list[tuple[int, str]]:
    """(line, option) for each engine flag a string literal (f-string parts included) of `source` spells."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [(node.lineno, found) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            for found in OPTION.findall(node.value) if found.replace("_", "-") in engine_flags()]


def test_the_schemas_give_the_engine_flags() -> None:
    flags = engine_flags()
    assert {"--max-model-len", "--context-length", "--tp-size", "--no-enable-prefix-caching"} <= flags
    assert "--help" not in flags and "--slo" not in flags


@pytest.mark.parametrize("source, found", [
    ('x = "--max-model-len"', ["--max-model-len"]),
    ('x = f"raise --mem-fraction-static to {v}"', ["--mem-fraction-static"]),
    ('x = ["--tp-size", "2"]', ["--tp-size"]),
    ('x = "--max_model_len 8"', ["--max_model_len"]),
    ('def f():\n    """Reads --max-model-len."""\n', []),
    ('x = "--slo ttft_p99_ms=200 or --burst 8"', []),
    ('x = "max-model-len-ish --max-model-lenx"', []),
])
def test_the_scan_finds_engine_flags_in_string_literals(source: str, found: list[str]) -> None:
    assert [name for _, name in spelled_flags(source)] == found


def test_no_module_outside_the_table_and_the_schemas_spells_an_engine_flag() -> None:
    spelled = [f"{path.relative_to(DOCTOR.parent)}:{line}: {name}"
               for path in sorted(DOCTOR.rglob("*.py"))
               if not path.relative_to(DOCTOR).as_posix().startswith(ALLOWED)
               for line, name in spelled_flags(path.read_text(encoding="utf-8"))]
    assert spelled == [], "read these from doctor.deployment.table:\n" + "\n".join(spelled)


def _cli_options(command: click.Command, ctx: click.Context | None = None) -> set[str]:
    ctx = ctx or click.Context(command)
    names = {name for param in command.params if isinstance(param, click.Option)
             for name in param.opts + param.secondary_opts}
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            names |= _cli_options(sub, click.Context(sub, parent=ctx))
    return names


def test_the_command_options_are_qwen_doctors_own() -> None:
    """command_options only holds our CLI's options, so it cannot become a back door for engine flags."""
    ours = [value for name, value in vars(command_options).items() if name.isupper()]
    assert ours and set(ours) <= _cli_options(cli)
