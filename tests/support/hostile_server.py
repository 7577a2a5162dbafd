"""A local OpenAI-compatible server that answers what a test tells it to: /v1/models one body, every other path
another, or a reply that never ends (TRICKLE: one chunked byte every 0.2 s; ENDLESS: 1 MiB chunks; SLOW_HEAD: a
head that never ends, one byte every 0.2 s, the slowloris shape; GZIP_BOMB: 256 KiB of gzip that inflate to 256 MiB;
REDIRECT_LOOP / FILE_REDIRECT: a 302 to itself / to a file: URL; HUGE_HEADER: a 1 MiB header),
for probe,
deploy's exercises and the package index reader (tests/test_fault_campaign4.py, bench/fault_variants.py)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Callable

TRICKLE, ENDLESS = b"<one byte every 0.2 s, forever>", b"<1 MiB chunks, forever>"
SLOW_HEAD = b"<a head one byte every 0.2 s, forever>"
GZIP_BOMB = b"<256 MiB of zeros, gzip-encoded>"
REDIRECT_LOOP, FILE_REDIRECT = b"<302 to the same path>", b"<302 to file:///etc/passwd>"
HUGE_HEADER = b"<a 1 MiB header line>"
MODELS = b'{"data": [{"id": "m", "max_model_len": 4096}]}'


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = self.server.models if self.path.endswith("/models") else self.server.other  # type: ignore[attr-defined]
        if body in (TRICKLE, ENDLESS):
            return self._forever(b" " if body == TRICKLE else b" " * (1 << 20))
        if body == SLOW_HEAD:
            return self._slow_head()
        if body == GZIP_BOMB:
            return self._bomb()
        if body in (REDIRECT_LOOP, FILE_REDIRECT, HUGE_HEADER):
            return self._odd_head(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forever(self, chunk: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with contextlib.suppress(OSError):
            while not self.server.done.is_set():  # type: ignore[attr-defined]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                if len(chunk) == 1:
                    time.sleep(0.2)

    def _odd_head(self, body: bytes) -> None:
        self.send_response(200 if body == HUGE_HEADER else 302)
        if body == HUGE_HEADER:
            self.send_header("X-Huge", "a" * (1 << 20))
        else:
            self.send_header("Location", self.path if body == REDIRECT_LOOP else "file:///etc/passwd")
        self.send_header("Content-Length", "0")
        with contextlib.suppress(OSError):
            self.end_headers()

    def _bomb(self) -> None:
        body = _gzip_bomb()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _slow_head(self) -> None:
        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        with contextlib.suppress(OSError):
            while not self.server.done.is_set():  # type: ignore[attr-defined]
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.2)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    do_GET = _answer

    def log_message(self, *args: object) -> None:
        pass


@functools.lru_cache(maxsize=1)
def _gzip_bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join([*(packer.compress(zeros) for _ in range(256)), packer.flush()])


def start(models: bytes = MODELS, other: bytes = b"{}") -> tuple[str, Callable[[], None]]:
    """The server's base URL and the function that stops it (its threads are daemons either way)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.models, server.other, server.done = models, other, threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.done.set()  # type: ignore[attr-defined]
        server.shutdown()

    return f"http://127.0.0.1:{server.server_address[1]}", stop


@contextlib.contextmanager
def hostile(models: bytes = MODELS, other: bytes = b"{}") -> Iterator[str]:
    """`start` as a context: the base URL, the server stopped on exit."""
    url, stop = start(models, other)
    try:
        yield url
    finally:
        stop()
