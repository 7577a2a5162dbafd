"""A compressed file or archive other than gzip given where a log, a bundle, a profile or a document is read
(issue 23): one line naming what it is and the command that decompresses it, exit 2, the file untouched. gzip
itself is read directly (tests/test_bounded_inputs.py)."""

from __future__ import annotations

import bz2
import io
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from doctor.compressed import compression_of

ROOT = Path(__file__).resolve().parents[1]
LOG = (ROOT / "tests/data/logs/nccl-525-shm.log").read_bytes()


def _tar(data: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        member = tarfile.TarInfo("server.log")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return out.getvalue()


def _zip(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("server.log", data)
    return out.getvalue()


# Written by the standard library's own writers; zstd (no writer before Python 3.14): a frame's magic number
# (RFC 8878 3.1.1) before bytes that are not a valid frame, which is all the sniffing reads.
FORMATS = {
    "xz": (lzma.compress(LOG), "xz-compressed", "xz -dc"),
    "bzip2": (bz2.compress(LOG), "bzip2-compressed", "bzip2 -dc"),
    "zstd": (b"\x28\xb5\x2f\xfd" + os.urandom(64), "zstd-compressed", "zstd -dc"),
    "zip": (_zip(LOG), "zip archive", "unzip -p"),
    "tar": (_tar(LOG), "tar archive", "tar -xOf"),
}
COMMANDS = {
    "explain": ["explain", "{}"], "lint": ["lint", "{}"], "plan --from-log": ["plan", "--from-log", "{}"],
    "check --from": ["check", "--from", "{}"], "check --log": ["check", "--from",
                                                             str(ROOT / "tests/fixtures/h200.json"), "--log", "{}"],
}
# A tar of text is text to a bundle or profile reader, whose own JSON / YAML error names it.
BINARY_FORMATS = ("xz", "bzip2", "zstd", "zip")


CASES = [(fmt, command) for fmt in FORMATS for command in COMMANDS
         if fmt in BINARY_FORMATS or command != "check --from"]


@pytest.mark.parametrize(("fmt", "command"), CASES, ids=[f"{f}-{c}" for f, c in CASES])
def test_a_compressed_input_is_named_with_its_decompress_command_in_one_line(tmp_path: Path, fmt, command) -> None:
    data, what, decompress = FORMATS[fmt]
    given = tmp_path / f"server.{fmt}"
    given.write_bytes(data)
    argv = [part.format(given) for part in COMMANDS[command]]
    done = subprocess.run([sys.executable, "-m", "doctor", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert what in done.stderr and decompress in done.stderr and "only gzip is read directly" in done.stderr
    assert given.read_bytes() == data


@pytest.mark.parametrize("fmt", BINARY_FORMATS)
def test_a_compressed_profile_is_named_too(tmp_path: Path, fmt) -> None:
    data, what, decompress = FORMATS[fmt]
    given = tmp_path / f"p.yaml.{fmt}"
    given.write_bytes(data)
    done = subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", str(given), "--dry-run"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and what in done.stderr, done.stderr


def test_gzip_plain_text_and_look_alikes_are_not_named() -> None:
    assert compression_of(b"\x1f\x8b\x08\x00") is None
    assert compression_of(LOG[:512]) is None
    assert compression_of(b"BZh9 is how a line may start\n") is None
    assert compression_of(b"x" * 257 + b"ustar is a word\n") is None
    assert compression_of(b"PK is a name\n") is None
