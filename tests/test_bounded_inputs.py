"""Deep, huge or expanding inputs are one line and exit 2, in bounded time (issue 23, item 3)."""

from __future__ import annotations

import difflib
import gzip
import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.safeio import GZIP_MAX_RATIO, JSON_MAX_DEPTH, InputError, gunzip, nested_deeper, parse_json
from doctor.name_index import MAX_SUGGESTED_WORDS, NameIndex

DEEP = "[" * 5000 + "]" * 5000


def qd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def assert_one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len([ln for ln in lines if "error" in ln]) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "internal error" not in done.stderr
    for word in words:
        assert word in done.stderr


def test_the_depth_scan_counts_only_brackets_outside_strings() -> None:
    assert nested_deeper("[" * (JSON_MAX_DEPTH + 1) + "]" * (JSON_MAX_DEPTH + 1))
    assert not nested_deeper("[" * JSON_MAX_DEPTH + "]" * JSON_MAX_DEPTH)
    assert not nested_deeper('["' + "[" * 500 + '"]')
    assert not nested_deeper('["\\"' + "[" * 500 + '"]')
    with pytest.raises(InputError, match="nested deeper"):
        parse_json(DEEP, "x")


def test_a_deep_notebook_is_refused_by_lint(tmp_path: Path) -> None:
    nb = tmp_path / "deep.ipynb"
    nb.write_text('{"cells": [{"cell_type": "code", "source": ["vllm serve m"], "metadata": %s}]}' % DEEP)
    assert_one_line(qd("lint", str(nb)), "deep.ipynb", "nested deeper")


def test_a_deep_speculative_config_is_refused_by_plan() -> None:
    assert_one_line(qd("plan", "--gpus", "1xH200", "--speculative-config", "[" * 3000 + "]" * 3000),
                    "--speculative-config", "nested deeper")


def test_a_deep_model_config_is_refused_by_deploy(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"a": %s}' % DEEP)
    assert_one_line(qd("deploy", "--profile", "cpu-tiny", "--model", str(model), "--dry-run"), "nested deeper")


def test_a_deep_or_fifo_run_record_is_one_line_not_a_crash_or_a_hang(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "1-2.json").write_text(DEEP)
    env = {"QWEN_DOCTOR_STATE_DIR": str(tmp_path)}
    assert_one_line(qd("deploy", "--status", env=env), "1-2.json", "nested deeper")
    (runs / "1-2.json").unlink()
    os.mkfifo(runs / "3-4.json")
    assert_one_line(qd("deploy", "--status", env=env), "3-4.json", "FIFO")


def test_a_gzip_bomb_bundle_is_refused_before_it_expands(tmp_path: Path) -> None:
    bomb = tmp_path / "b.json.gz"
    bomb.write_bytes(gzip.compress(b'{"schema": "qwen-doctor-facts", "pad": "' + b"a" * (60 << 20) + b'"}', 9))
    assert bomb.stat().st_size < 100_000
    assert_one_line(qd("check", "--from", str(bomb)), f"more than {GZIP_MAX_RATIO} times")


def test_a_gzip_bomb_log_is_refused(tmp_path: Path) -> None:
    bomb = tmp_path / "server.log.gz"
    bomb.write_bytes(gzip.compress(b"INFO x\n" * (40 << 20), 9))
    assert_one_line(qd("explain", str(bomb)), "server.log.gz", f"more than {GZIP_MAX_RATIO} times")


def test_ordinary_gzip_is_read_whole() -> None:
    text = "".join(f"line {i} {random.Random(i).random()}\n" for i in range(50_000)).encode()
    assert gunzip(gzip.compress(text), "log", "x", 64 << 20) == text


def test_the_suggestion_index_answers_as_difflib_does() -> None:
    from doctor.flags import load_schema

    names = load_schema("vllm", None).option_strings()
    pick = random.Random(7)
    words = ["--" + "".join(pick.choice(string.ascii_lowercase + "-") for _ in range(pick.randint(3, 25)))
             for _ in range(120)]
    for name in names[:120]:
        chars = list(name)
        chars[pick.randrange(2, len(chars))] = pick.choice(string.ascii_lowercase)
        words.append("".join(chars))
    index = NameIndex(names)
    for word in words:
        expected = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
        assert index.closest(word) == (expected[0] if expected else None), word
    assert len(words) <= MAX_SUGGESTED_WORDS


def test_suggestions_stop_after_a_bounded_number_of_distinct_words() -> None:
    index = NameIndex(["--port", "--host"])
    for i in range(MAX_SUGGESTED_WORDS):
        index.closest(f"--zz{i}")
    assert index.closest("--prt") is None


def test_lint_of_many_unknown_flags_finishes(tmp_path: Path) -> None:
    pick = random.Random(3)
    lines = ["vllm serve m " + " ".join("--" + "".join(pick.choice(string.ascii_lowercase) for _ in range(12))
                                         for _ in range(8)) for _ in range(600)]
    script = tmp_path / "many.sh"
    script.write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "doctor", "lint", str(script), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    assert len(json.loads(done.stdout)["results"]) >= 600


def test_a_bundle_with_more_gpu_pairs_than_one_host_has_is_refused(tmp_path: Path) -> None:
    from tests.support.big_bundle import big_bundle

    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps(big_bundle(100, topology_gpus=100)))
    assert_one_line(qd("check", "--from", str(bundle)), "4950 GPU pairs")
    bundle.write_text(json.dumps(big_bundle(1080, topology_gpus=64)))
    assert qd("check", "--from", str(bundle), "--format", "json").returncode in (0, 1)
