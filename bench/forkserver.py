"""A fork server for the fault campaign: one interpreter imports the CLI (and builds what every explain builds
the same way, the remedy matcher's prefilter) once, then forks a child per case, which runs `python -m doctor`'s
own __main__ on the case's argv, environment, current folder and standard streams (passed as descriptors).

A child starts as `python -m doctor` would, less the interpreter's start-up and the imports: its signal
dispositions are the defaults, its sys.stdin / stdout / stderr are rebuilt over descriptors 0-2 the way
Python's start-up builds them (None for a closed descriptor), and it ends as Python ends (non-daemon threads
joined, atexit handlers run, stdout flushed: a failed flush is Python's "Exception ignored" line and exit 120).
Cases that need the interpreter's own start-up (locale and PYTHON* variables, the installed launcher, a signal
during start-up, a terminal) are run as processes of their own by the campaign (bench/fault_variants.py).

Protocol, over a Unix socket, one connection per case: the client sends one JSON line {argv, env, cwd,
cwd_gone, fds: [0, 1, 2 present or not]} with the present descriptors attached (SCM_RIGHTS); the server answers
`pid N\\n` once forked and `status N\\n` (os.waitstatus_to_exitcode) once the child ended.
Usage: python bench/forkserver.py SOCKET (run from the source tree whose CLI it serves).
"""

from __future__ import annotations

import io
import json
import os
import selectors
import signal
import socket
import sys
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD, signal.SIGXFSZ)


def warm() -> None:
    """Import every command and build the shared matcher prefilter, as each child would on its own."""
    import importlib

    from doctor.cli.main import COMMANDS

    for target in COMMANDS.values():
        importlib.import_module(target.split(":")[0])
    from remedies import Matcher

    Matcher(context=2)


def _stdio(fd: int, mode: str, errors: str) -> Any:
    """sys.std* over `fd` as Python's start-up makes it (create_stdio), or None when `fd` is closed."""
    try:
        os.fstat(fd)
    except OSError:
        return None
    raw = io.FileIO(fd, mode, closefd=False)
    if mode == "rb":
        buffered: Any = io.BufferedReader(raw)
    else:
        buffered = io.BufferedWriter(raw)
    tty = raw.isatty()
    encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=tty or fd == 2,
                            write_through=fd == 2)


def _child(request: dict[str, Any], fds: list[int]) -> None:
    """Become the case's `python -m doctor` and never return."""
    code = 1
    try:
        for signum in _SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        given = iter(fds)
        for target in (0, 1, 2):
            if target in request["fds"]:
                source = next(given)
                os.dup2(source, target)
            else:
                os.close(target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        if request.get("cwd_gone"):
            os.rmdir(request["cwd"])
        sys.stdin = sys.__stdin__ = _stdio(0, "rb", "strict")
        sys.stdout = sys.__stdout__ = _stdio(1, "wb", "strict")
        sys.stderr = sys.__stderr__ = _stdio(2, "wb", "backslashreplace")
        main = os.path.join(os.path.dirname(sys.modules["doctor"].__file__), "__main__.py")
        sys.argv = [main, *request["argv"]]
        if not request.get("cwd_gone"):
            sys.path.insert(0, os.getcwd())  # `-m`'s first entry, which doctor/__main__.py takes off again
        import runpy

        try:
            runpy.run_module("doctor", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:  # what Python prints for an uncaught exception, and its exit 1
            import traceback

            traceback.print_exc()
            code = 1
        code = _finish(code)
    finally:
        os._exit(code)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        print(value, file=sys.stderr)
    except Exception:
        pass
    return 1


def _finish(code: int) -> int:
    """Python's own ending: threads joined, atexit run, stdout and stderr flushed (a failed stdout flush is
    its 'Exception ignored' line and exit 120)."""
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            continue
        try:
            stream.flush()
        except Exception as exc:
            if name == "stdout":
                try:
                    sys.stderr.write(f"Exception ignored in: {stream!r}\n{type(exc).__name__}: {exc}\n")
                    sys.stderr.flush()
                except Exception:
                    pass
                code = 120 if code == 0 else code
    return code


def serve(path: str) -> None:
    """Answer requests until the client side closes the listening socket's folder or kills the server."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(64)
    reaper_r, reaper_w = os.pipe()
    os.set_blocking(reaper_w, False)
    signal.set_wakeup_fd(reaper_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(reaper_r, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                conn, _addr = listener.accept()
                _accept(conn, waiting, listener, reaper_r, reaper_w)
            else:
                os.read(reaper_r, 4096)
        _reap(waiting)


def _accept(conn: socket.socket, waiting: dict[int, socket.socket], *ours: Any) -> None:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            break
        data += more
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:
        for item in (*ours, conn):
            try:
                (item.close() if hasattr(item, "close") else os.close(item))
            except OSError:
                pass
        for other in waiting.values():
            other.close()
        _child(request, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"pid {pid}\n".encode())
    waiting[pid] = conn


def _reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(f"status {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            conn.close()


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    warm()
    serve(sys.argv[1])
