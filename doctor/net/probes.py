"""DNS, TCP and HTTP probes that always return within their deadline, as plain dicts for the Facts."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class Deadline(Exception):
    """The call did not finish within its deadline."""


def bounded(fn: Callable[[], T], timeout_s: float) -> T:
    """Run fn in a daemon thread and give up after timeout_s (the thread is abandoned, never joined)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name="qd-net-probe")
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise Deadline(f"no answer within {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _elapsed(t0: float) -> float:
    return round(time.monotonic() - t0, 3)


def dns(host: str, timeout_s: float = 2.0) -> dict[str, Any]:
    """Resolve host; {'ok', 'addresses', 'error', 'seconds'}."""
    t0 = time.monotonic()
    try:
        infos = bounded(lambda: socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP), timeout_s)
    except Deadline as exc:
        return {"ok": False, "addresses": [], "error": f"DNS timeout: {exc}", "seconds": _elapsed(t0)}
    except OSError as exc:
        return {"ok": False, "addresses": [], "error": f"DNS failure: {exc}", "seconds": _elapsed(t0)}
    addresses = sorted({info[4][0] for info in infos})
    return {"ok": True, "addresses": addresses, "error": None, "seconds": _elapsed(t0)}


def tcp(host: str, port: int, timeout_s: float = 2.0) -> dict[str, Any]:
    """Open and close a TCP connection; {'ok', 'error', 'seconds'}."""
    t0 = time.monotonic()

    def connect() -> None:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass

    try:
        bounded(connect, timeout_s + 0.5)
    except (Deadline, socket.timeout, TimeoutError):
        return {"ok": False, "error": f"TCP connect to {host}:{port} timed out after {timeout_s:g} s",
                "seconds": _elapsed(t0)}
    except ConnectionRefusedError:
        return {"ok": False, "error": f"TCP connect to {host}:{port} refused (nothing listens there)",
                "seconds": _elapsed(t0)}
    except OSError as exc:
        return {"ok": False, "error": f"TCP connect to {host}:{port} failed: {exc.strerror or exc}",
                "seconds": _elapsed(t0)}
    return {"ok": True, "error": None, "seconds": _elapsed(t0)}


def http_get(url: str, timeout_s: float = 5.0, headers: dict[str, str] | None = None,
             read_body: bool = True, max_body: int = 256 * 1024) -> dict[str, Any]:
    """GET url without following redirects; {'ok', 'status', 'headers', 'body', 'error', 'seconds'}.

    Connect and read are bounded by httpx's timeouts, the whole exchange by `timeout_s`. `read_body=False`
    streams only the response head (for large data-plane files).
    """
    import httpx

    t0 = time.monotonic()
    per_phase = httpx.Timeout(timeout_s, connect=min(timeout_s, 3.0))

    def exchange() -> dict[str, Any]:
        with httpx.Client(timeout=per_phase, follow_redirects=False, trust_env=True) as client:
            with client.stream("GET", url, headers=headers or {}) as resp:
                body = b""
                if read_body:
                    for chunk in resp.iter_bytes():
                        body += chunk
                        if len(body) >= max_body:
                            break
                return {"status": resp.status_code, "headers": _keep_headers(resp.headers),
                        "body": body.decode("utf-8", "replace")}

    try:
        got = bounded(exchange, timeout_s)
    except Deadline as exc:
        return {"ok": False, "status": None, "error": f"HTTP timeout: {exc}", "seconds": _elapsed(t0)}
    except httpx.TimeoutException as exc:
        return {"ok": False, "status": None, "error": f"HTTP timeout ({type(exc).__name__})",
                "seconds": _elapsed(t0)}
    except httpx.HTTPError as exc:
        return {"ok": False, "status": None, "error": f"HTTP failure: {type(exc).__name__}: {exc}",
                "seconds": _elapsed(t0)}
    return {"ok": True, **got, "error": None, "seconds": _elapsed(t0)}


_KEPT = ("location", "content-length", "content-type", "x-repo-commit", "x-linked-size", "x-linked-etag",
         "x-error-code", "x-error-message", "etag")


def _keep_headers(headers: Any) -> dict[str, str]:
    return {k: headers[k] for k in _KEPT if k in headers}
