"""Port availability: refuse to start a server on a port that something already holds."""

from __future__ import annotations

import os
import socket

from doctor.command_options import PORT
from doctor.errors import DoctorError


class PortInUse(DoctorError):
    """The requested port is taken; starting would fail late with an unclear bind error."""


def port_is_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port and we could bind it. The bind uses SO_REUSEADDR, as uvicorn
    (vLLM, SGLang) does on Unix, so connections of an earlier server still in TIME_WAIT do not count as busy."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        if s.connect_ex((host, port)) == 0:
            return False
    with socket.socket(family, socket.SOCK_STREAM) as s:
        if os.name == "posix":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ensure_port_free(host: str, port: int) -> None:
    """Raise PortInUse with a fix when host:port is taken."""
    if not port_is_free(host, port):
        raise PortInUse(f"port {port} on {host} is already in use; stop what listens there "
                        f"(ss -ltnp 'sport = :{port}') or pass {PORT} with a free port")


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel reports free right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
