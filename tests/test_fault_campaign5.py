"""The fifth fault campaign's classes: a server that sends its reply's head one byte at a time, a bundle naming a
key twice, secret forms the redactor passed over, a module of the current folder shadowing the standard library.
Each is refused in one line with exit 2, cut at its bound, or hidden, and nothing the user had changes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.hostile_server import SLOW_HEAD, hostile

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "a100-8x-nvlink.json"


def _doctor(cwd: Path, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_STATE_DIR": str(cwd / "s")})


def test_a_head_sent_one_byte_at_a_time_ends_at_the_clients_deadline() -> None:
    """httpx bounds each read, not the head: a byte every 0.2 s would keep the sync client waiting for hours."""
    from doctor import boundedhttp

    async def get(url: str) -> None:
        async with boundedhttp.bounded_async_client(1.5, base_url=url) as client:
            await client.get("/metrics")

    def sync_get(url: str) -> None:
        with boundedhttp.bounded_client(1.5) as client:
            client.get(f"{url}/metrics")

    with ThreadPoolExecutor(1) as pool, hostile(other=SLOW_HEAD) as url:  # the server stops first
        started = time.monotonic()
        with pytest.raises(boundedhttp.ReplyTooSlow):
            pool.submit(sync_get, url).result(timeout=10)  # without the bound: a TimeoutError here
        assert time.monotonic() - started < 5
        with pytest.raises(boundedhttp.ReplyTooSlow):
            asyncio.run(get(url))


def test_the_sync_client_still_reads_a_whole_reply_and_reuses_its_connection() -> None:
    from doctor import boundedhttp

    with hostile(other=b'{"ok": true}') as url, boundedhttp.bounded_client(5.0) as client:
        assert [client.get(f"{url}/x").json() for _ in range(3)] == [{"ok": True}] * 3


def test_probe_of_a_server_whose_head_never_ends_fails_each_exercise_in_time(tmp_path: Path) -> None:
    with hostile(other=SLOW_HEAD) as url:
        done = _doctor(tmp_path, "probe", url, "--request-timeout", "1", "--burst", "1", "--format", "json")
    results = {r["check_id"]: r for r in json.loads(done.stdout)["results"]}
    assert done.returncode == 1 and "ReplyTooSlow" in results["QD-DEPLOY-CHAT"]["summary"], done.stderr


@pytest.mark.parametrize("command", [["check", "--from"], ["plan", "--facts"], ["profiles", "suggest", "--from"]])
def test_a_bundle_naming_a_key_twice_is_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    """A collector never writes a key twice; a bundle that does was edited, and which value counts is a guess."""
    text = FIXTURE.read_text()
    bundle = tmp_path / "bundle.json"
    bundle.write_text(text.replace('{', '{"schema_version": "x", ', 1) if '"schema_version"' in text else
                      text.replace('{', '{"host": {}, ', 1))
    before = bundle.read_bytes()
    done = _doctor(tmp_path, *command, str(bundle))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "appears twice" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert bundle.read_bytes() == before
