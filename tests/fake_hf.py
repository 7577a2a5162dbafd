"""A Hugging Face look-alike on 127.0.0.1: metadata API and /resolve/ URLs for good, gated, private, missing
and slow repositories, plus a repository whose files redirect to a port where nothing listens."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from contextlib import contextmanager
from typing import Iterator

SLOW_S = 5.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Handler(BaseHTTPRequestHandler):
    refused_port = 0

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"{}", headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", "Content-Length": str(len(body)), **(headers or {})}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the probe gave up first: that is what the slow repository is for

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path
        repo = path.split("/api/models/", 1)[-1] if path.startswith("/api/models/") else path.lstrip("/")
        org_name = "/".join(repo.split("/")[:2])
        if org_name == "acme/slow":
            time.sleep(SLOW_S)
        if org_name in ("acme/ok", "acme/slow"):
            self._send(200, json.dumps({"id": org_name, "siblings": [{"rfilename": "config.json"}]}).encode())
        elif org_name == "acme/cdn-blocked":
            if "/resolve/" in path:
                self._send(302, b"", {"Location": f"http://127.0.0.1:{self.refused_port}/blob/abc"})
            else:
                self._send(200)
        elif org_name == "acme/gated":
            if self.headers.get("Authorization"):
                self._send(403, headers={"X-Error-Code": "GatedRepo", "X-Error-Message": "Access restricted"})
            else:
                self._send(401, headers={"X-Error-Code": "GatedRepo", "X-Error-Message": "Access restricted"})
        elif org_name == "acme/private":
            self._send(401, headers={"X-Error-Message": "Invalid username or password."})
        elif org_name == "acme/broken":
            self._send(503)
        else:
            self._send(404, headers={"X-Error-Code": "RepoNotFound"})


@contextmanager
def fake_hf() -> Iterator[str]:
    """Serve on a free loopback port; yields the endpoint URL (what HF_ENDPOINT would hold)."""
    handler = type("BoundHandler", (Handler,), {"refused_port": free_port()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
