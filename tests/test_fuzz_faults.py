"""Fuzzers for the second fault campaign's classes (issue 23): provider secrets disguised by Unicode and split over
lines, deep nesting, gzip expansion, and every command under closed streams and narrow charsets; each case
through the real CLI, judged by the common contract (tests/support/fuzz.py)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doctor.redact import redact_document, redact_text
from tests.support.fuzz import assert_contract, fuzz_settings, invoke

FIXTURES = Path(__file__).parent / "fixtures"
# Provider forms (bodies built so no rule's allowlist or entropy floor lets them go).
BODY = "Zx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdF"
FORMS = [
    "nvapi-" + BODY + BODY, "ya29." + BODY, "GOCSPX-" + BODY[:28], "hf_" + BODY, "ghp_" + BODY + "abcd",
    "xoxb-1234567890123-1234567890123-" + BODY[:24], "AKIAZ7QW3RT5YU6IO8PL", "glpat-" + BODY[:20],
]
SEPARATORS = ["=", "\uff1d", ":", "\uff1a", " ", "\u00a0", "=\u200b", ": "]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


@st.composite
def disguised_secret(draw: st.DrawFn) -> tuple[str, str]:
    """(text, secret): a provider secret after a secret name, with Unicode tricks and line splits."""
    secret = draw(st.sampled_from(FORMS))
    name = draw(st.sampled_from(["token", "api_key", "HF_TOKEN", "--api-key", "Authorization: Bearer", "key", ""]))
    sep = draw(st.sampled_from(SEPARATORS))
    cut = draw(st.integers(min_value=4, max_value=len(secret) - 4))
    how = draw(st.sampled_from(["plain", "invisible", "wrapped", "continued", "next-line"]))
    head, tail = secret[:cut], secret[cut:]
    body = {"plain": secret, "invisible": head + draw(st.sampled_from(INVISIBLE)) + tail,
            "wrapped": head + "\n" + tail, "continued": head + "\\\n" + tail,
            "next-line": "\n    " + secret}[how]
    before = draw(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20))
    return f"{before} {name}{sep}{body} trailing words", secret


def _visible_parts(secret: str) -> list[str]:
    """Pieces of the secret long enough to be a leak on their own (a third of it, at least 8 characters)."""
    size = max(8, len(secret) // 3)
    return [secret[i:i + size] for i in range(0, len(secret) - size + 1, max(1, size // 2))]


@fuzz_settings(200)
@given(case=disguised_secret())
def test_disguised_and_split_provider_secrets_never_survive(case: tuple[str, str]) -> None:
    text, secret = case
    for out in (redact_text(text), json.dumps(redact_document({"log": [text], "msg": text}), ensure_ascii=False)):
        flat = out
        for ch in INVISIBLE:
            flat = flat.replace(ch, "")
        flat = flat.replace("\\\n", "").replace("\n", "").replace("\\n", "")
        assert not any(part in flat for part in _visible_parts(secret)), (text, out)


@fuzz_settings(30)
@given(depth=st.integers(min_value=65, max_value=20_000), kind=st.sampled_from("[{"))
def test_deep_nesting_is_one_line_everywhere(tmp_path_factory, depth: int, kind: str) -> None:
    inner = ("[" * depth + "]" * depth) if kind == "[" else ('{"a":' * depth + "1" + "}" * depth)
    folder = tmp_path_factory.mktemp("deep")
    (folder / "config.json").write_text(inner)
    notebook = folder / "n.ipynb"
    notebook.write_text('{"cells": [{"cell_type": "code", "source": [], "metadata": %s}]}' % inner)
    bundle = folder / "b.json"
    bundle.write_text(inner)
    for argv in (["lint", str(notebook)], ["check", "--from", str(bundle)],
                 ["plan", "--gpus", "1xH200", "--speculative-config", inner[:20_000]],
                 ["plan", "--gpus", "1xH200", "--model", str(folder)]):
        outcome = invoke(argv)
        assert_contract(outcome)
        assert outcome.code == 2, argv


@fuzz_settings(15)
@given(size_mib=st.integers(min_value=2, max_value=80), byte=st.binary(min_size=1, max_size=3),
       target=st.sampled_from(["bundle", "log"]))
def test_gzip_expansion_is_refused_in_bounded_time(tmp_path_factory, size_mib: int, byte: bytes, target: str) -> None:
    path = tmp_path_factory.mktemp("gz") / ("b.json.gz" if target == "bundle" else "s.log.gz")
    path.write_bytes(gzip.compress(byte * ((size_mib << 20) // len(byte)), 9))
    outcome = invoke(["check", "--from", str(path)] if target == "bundle" else ["explain", str(path)])
    assert_contract(outcome)
    if target == "bundle":
        assert outcome.code == 2


# Every command once, as a user would run it, with no network and nothing long-running.
COMMANDS = [
    ["check", "--from", str(FIXTURES / "h200.json")],
    ["collect", "--help"],
    ["plan", "--gpus", "1xH200"],
    ["explain", "-"],
    ["deploy", "--status"],
    ["profiles", "list"],
    ["lint", str(FIXTURES.parent / "data" / "lint" / "article.py")],
    ["remedies", "list"],
    ["probe", "--help"],
]
STREAM_STATES = [(0,), (1,), (2,), (0, 1, 2)]


def _run(argv: list[str], closed: tuple[int, ...] = (), env: dict[str, str] | None = None) -> int:
    return subprocess.run([sys.executable, "-m", "doctor", *argv], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
                          env={**os.environ, **(env or {})},
                          preexec_fn=(lambda: [os.close(fd) for fd in closed]) if closed else None).returncode


@pytest.mark.parametrize("argv", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_every_command_keeps_its_exit_code_with_stdin_stdout_and_stderr_closed(argv: list[str], tmp_path) -> None:
    env = {"QWEN_DOCTOR_STATE_DIR": str(tmp_path)}
    expected = _run(argv, env=env)
    assert expected in (0, 1, 2)
    for closed in STREAM_STATES:
        assert _run(argv, closed, env) == expected, closed


@fuzz_settings(12)
@given(argv=st.sampled_from(COMMANDS), encoding=st.sampled_from(["ascii", "latin-1", "cp1252", "utf-16", "koi8-r"]))
def test_every_command_runs_in_any_output_charset(argv: list[str], encoding: str) -> None:
    done = subprocess.run([sys.executable, "-m", "doctor", *argv], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120, env={**os.environ, "PYTHONIOENCODING": encoding})
    assert done.returncode in (0, 1, 2)
    assert b"UnicodeEncodeError" not in done.stderr and b"internal error" not in done.stderr


@fuzz_settings(150)
@given(case=disguised_secret(), before=st.integers(min_value=0, max_value=3))
def test_a_secret_split_over_the_lines_of_an_excerpt_never_survives(case: tuple[str, str], before: int) -> None:
    """Explain's excerpt is a list of lines (context, the matched line, context): the same disguised and split
    secrets as above, cut into those lines, are hidden as in one text."""
    from doctor.redact import redact_lines

    text, secret = case
    lines = ["INFO context"] * before + text.split("\n") + ["INFO after"]
    flat = "".join(redact_lines(lines)).replace("\\", "")
    for ch in INVISIBLE:
        flat = flat.replace(ch, "")
    assert not any(part in flat for part in _visible_parts(secret)), (lines, flat)


@fuzz_settings(60)
@given(depth=st.integers(min_value=65, max_value=100_000), kind=st.sampled_from("[{"),
       wrap=st.sampled_from(['{"data": %s}', '{"choices": [{"message": {"content": %s}}]}', "%s"]))
def test_a_servers_deep_reply_is_a_value_error_never_a_recursion_error(depth: int, kind: str, wrap: str) -> None:
    """What probe and every exercise read from a server: deep JSON is a ValueError naming the bound (an
    exercise fails with it), never RecursionError (an internal error)."""
    from doctor.safeio import BadReply, reply_json

    with pytest.raises(BadReply, match="nested deeper"):
        reply_json(wrap % _nested(kind, depth))


def _nested(kind: str, depth: int) -> str:
    opener, closer = ('{"k": ', "}") if kind == "{" else ("[", "]")
    return opener * depth + "1" + closer * depth


@fuzz_settings(20)
@given(magic=st.sampled_from([b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18", b"PK\x03\x04",
                              b"7z\xbc\xaf\x27\x1c", b"BZh91AY&SY"]),
       tail=st.binary(max_size=600), target=st.sampled_from(["explain", "lint", "bundle", "from-log", "profile"]))
def test_any_compressed_or_archived_input_is_one_line_exit_2(tmp_path_factory, magic: bytes, tail: bytes,
                                                              target: str) -> None:
    path = tmp_path_factory.mktemp("packed") / "input.bin"
    path.write_bytes(magic + tail)
    argv = {"explain": ["explain", str(path)], "lint": ["lint", str(path)], "bundle": ["check", "--from", str(path)],
            "from-log": ["plan", "--from-log", str(path)],
            "profile": ["deploy", "--profile", str(path), "--dry-run"]}[target]
    outcome = invoke(argv)
    assert_contract(outcome)
    assert outcome.code == 2 and "only gzip is read directly" in outcome.stderr, (argv, outcome.stderr)
