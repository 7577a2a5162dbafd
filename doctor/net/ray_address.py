"""Parse a Ray address the way `ray.init(address=...)` and RAY_ADDRESS accept it.

Forms (docs.ray.io, "ray.init" and "Ray Client"): "auto" (the cluster started on this machine, found through
/tmp/ray/ray_current_cluster), "local" (start a new one-node cluster), "HOST:PORT" (the head's GCS, port 6379 by
default with `ray start --head`), "ray://HOST:PORT" (Ray Client server, port 10001 by default).
"http://HOST:8265" is the dashboard / Job Submission address: `ray job submit` takes it, `ray.init` does not.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass
from typing import Any

GCS_DEFAULT_PORT = 6379
CLIENT_DEFAULT_PORT = 10001
DASHBOARD_DEFAULT_PORT = 8265
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


@dataclass(frozen=True)
class RayAddress:
    """What an address means: kind is auto | local | gcs | client | dashboard | invalid."""

    raw: str
    kind: str
    host: str | None = None
    port: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse(raw: str | None) -> RayAddress:
    """Classify an address; a malformed one gets kind 'invalid' and an error saying what is wrong."""
    text = (raw or "").strip()
    if not text:
        return RayAddress("", "invalid", error="no address given (pass --ray ADDRESS or set RAY_ADDRESS)")
    low = text.lower()
    if low in ("auto", "local"):
        return RayAddress(text, low)
    scheme, rest = "", text
    if "://" in text:
        scheme, rest = text.split("://", 1)
        scheme = scheme.lower()
        if scheme not in ("ray", "http", "https"):
            return RayAddress(text, "invalid", error=f"unknown scheme {scheme!r}: use HOST:PORT, ray://HOST:PORT or auto")
    rest = rest.rstrip("/")
    host, port, error = _split_host_port(rest)
    if error:
        return RayAddress(text, "invalid", host=host, error=error)
    if scheme == "ray":
        return RayAddress(text, "client", host, port or CLIENT_DEFAULT_PORT)
    if scheme in ("http", "https"):
        return RayAddress(text, "dashboard", host, port or DASHBOARD_DEFAULT_PORT,
                          error="this is the dashboard / Job Submission address (for `ray job submit`); "
                                f"ray.init needs the GCS address HOST:{GCS_DEFAULT_PORT} or ray://HOST:{CLIENT_DEFAULT_PORT}")
    return RayAddress(text, "gcs", host, port or GCS_DEFAULT_PORT)


def _split_host_port(text: str) -> tuple[str | None, int | None, str | None]:
    if text.startswith("["):
        host, _, tail = text[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ("" if not tail else None)
        if port_text is None:
            return host, None, f"cannot parse {text!r} as [IPv6]:PORT"
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif text.count(":") > 1:
        return None, None, f"{text!r} has several ':'; write an IPv6 address as [ADDR]:PORT"
    else:
        host, port_text = text, ""
    if not host:
        return None, None, f"{text!r} has no host"
    if not _valid_host(host):
        return host, None, f"{host!r} is not a valid host name or IP address"
    if not port_text:
        return host, None, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return host, None, f"port {port_text!r} is not a number between 1 and 65535"
    return host, int(port_text), None


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOSTNAME.match(host))
