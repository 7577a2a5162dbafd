"""README can no longer drift: every qwen-doctor command line it shows names a real command and real options,
and the ones that need no machine, model or server run and exit as documented."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from doctor.cli.main import cli

README = Path(__file__).resolve().parents[1] / "README.md"
_OPTION = re.compile(r"^(--?[A-Za-z][\w-]*)")


def _blocks(text: str) -> list[list[str]]:
    blocks, current, inside = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if inside:
                blocks.append(current)
            current, inside = [], not inside
            continue
        if inside:
            current.append(line)
    return blocks


def _is_group(command: str) -> bool:
    words = command.split()
    return len(words) > 1 and isinstance(cli.get_command(click.Context(cli), words[1]), click.Group)


def _cut(line: str) -> str:
    """The command without a trailing comment, pipe, redirect or `&&` outside [brackets]; for a command group
    (`profiles list | show P`) a `|` separates alternatives and stays."""
    depth = 0
    pipes = not _is_group(line)
    for i, ch in enumerate(line):
        depth += ch == "["
        depth -= ch == "]"
        if depth == 0 and i and line[i - 1] == " " and (ch in "#>" or (pipes and ch == "|" and line[i + 1:i + 2] == " ")
                                                       or line.startswith("&&", i)):
            return line[:i].rstrip()
    return line.rstrip()


def readme_commands() -> list[str]:
    """Every `qwen-doctor ...` command in README's code blocks, continuation lines of a synopsis joined."""
    commands = []
    for block in _blocks(README.read_text(encoding="utf-8")):
        for line in block:
            stripped = line.strip()
            at = stripped.find("qwen-doctor ")
            if at >= 0 and not stripped.startswith("#"):
                commands.append(_cut(stripped[at:]))
            elif commands and line.startswith((" ", "\t")) and stripped.startswith(("[", "--", "-")) and \
                    block.index(line) > 0:
                commands[-1] += " " + _cut(stripped)
    return commands


def _alternatives(command: str) -> list[tuple[list[str], str]]:
    """(subcommand path, the rest) for each alternative of `group a X | b Y`."""
    words = command.split(None, 2)
    name, rest = words[1], words[2] if len(words) > 2 else ""
    if isinstance(cli.get_command(click.Context(cli), name), click.Group):
        out = []
        for alt in re.split(r"\s\|\s(?![^\[]*\])", rest):
            head, _, tail = alt.strip().partition(" ")
            out.append(([name, head], tail))
        return out
    return [([name], rest)]


def _command(path: list[str]) -> click.Command:
    command: click.Command = cli
    ctx = click.Context(cli)
    for part in path:
        assert isinstance(command, click.Group), f"{' '.join(path)}: {part} is not a subcommand"
        found = command.get_command(ctx, part)
        assert found is not None, f"README shows `qwen-doctor {' '.join(path)}`, which does not exist"
        command = found
    return command


def _options(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}


COMMANDS = readme_commands()


def test_readme_shows_commands() -> None:
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_and_option_in_readme_exists(command: str) -> None:
    for path, rest in _alternatives(command):
        known = _options(_command(path))
        for token in re.split(r"[\s\[\]|]+", rest):
            match = _OPTION.match(token)
            if match and not re.match(r"^-\d", token):
                assert match.group(1) in known, f"README: `qwen-doctor {' '.join(path)}` has no option {match.group(1)}"


def _examples() -> list[str]:
    """Commands written to be typed (no [optional] synopsis brackets or placeholders)."""
    return [c for c in COMMANDS if "[" not in c and "..." not in c and not re.search(r"\b[A-Z]{1,2}\b", c)]


@pytest.mark.parametrize("command", _examples())
def test_every_readme_example_parses_and_its_help_works(command: str) -> None:
    argv = shlex.split(command)[1:]
    result = CliRunner().invoke(cli, argv + ["--help"])
    assert result.exit_code == 0, result.output


# Files README's examples name, stood in for by real project data so the examples run as written.
STAND_INS = {
    "server.log": Path(__file__).parent / "fixtures" / "h200-rehearsal" / "vllm-bf16-lm-only.log",
    "deployment-article.md": Path(__file__).parent / "data" / "lint" / "seed-article.txt",
    "gpu.json": Path(__file__).parent / "fixtures" / "h200.json",
    "bundle.json": Path(__file__).parent / "fixtures" / "h200.json",
    "env.txt": Path(__file__).parent / "fixtures" / "env-dumps" / "vllm-31700-h100-driver-550-torch-cu128.txt",
}


def _runnable(command: str) -> bool:
    words = command.split()
    if words[1] in ("plan", "lint", "remedies", "profiles", "explain"):
        return True
    return words[1] == "check" and "--from" in words


@pytest.mark.parametrize("command", [c for c in _examples() if _runnable(c)])
def test_readme_examples_that_need_no_machine_run(command: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    for name, source in STAND_INS.items():
        if name in argv:
            (tmp_path / name).write_bytes(source.read_bytes())
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1), result.output
