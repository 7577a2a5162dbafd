"""Hugging Face reachability: DNS, TCP and HTTP to the mirror (HF_ENDPOINT) and the default endpoint.

URL shapes as huggingface_hub builds them (huggingface_hub/constants.py, hf_api.py): metadata
`{endpoint}/api/models/{repo}/revision/{rev}`, data plane `{endpoint}/{repo}/resolve/{rev}/{file}`.
Errors carry `X-Error-Code` (GatedRepo, RepoNotFound, EntryNotFound, RevisionNotFound; utils/_http.py).
"""

from __future__ import annotations

import os
import time
import urllib.request
from typing import Any, Mapping
from urllib.parse import quote, urlsplit

from doctor.net import hf_cache, probes

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_MODEL = "Qwen/Qwen3.5-35B-A3B"
PROBE_FILE = "config.json"
TRUE_VALUES = ("1", "true", "yes", "on")


def offline(env: Mapping[str, str]) -> bool:
    """HF_HUB_OFFLINE (huggingface_hub) or TRANSFORMERS_OFFLINE (transformers) switches the network off."""
    return any(env.get(k, "").strip().lower() in TRUE_VALUES for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def endpoints(env: Mapping[str, str], include_default: bool = True) -> list[tuple[str, str]]:
    """(role, url): the HF_ENDPOINT mirror when set, then the default endpoint."""
    mirror = (env.get("HF_ENDPOINT") or "").strip().rstrip("/")
    found = [("mirror", mirror)] if mirror and mirror != DEFAULT_ENDPOINT else []
    return found + ([("default", DEFAULT_ENDPOINT)] if include_default or not found else [])


def probe(model: str = DEFAULT_MODEL, revision: str = "main", env: Mapping[str, str] | None = None,
          timeout_s: float = 3.0, include_default: bool = True) -> dict[str, Any]:
    """The `hf` facts section: offline mode, each endpoint's DNS/TCP/API/file probes, and the local cache."""
    env = os.environ if env is None else env
    token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN")
    facts: dict[str, Any] = {
        "model": model, "revision": revision, "offline": offline(env), "token_set": bool(token),
        "endpoint_env": env.get("HF_ENDPOINT"), "endpoints": [],
        "cache": hf_cache.probe(model, revision, env),
    }
    if facts["offline"] or os.path.isdir(model):
        return facts
    for role, url in endpoints(env, include_default):
        facts["endpoints"].append({"role": role, **probe_endpoint(url, model, revision, token, timeout_s)})
    return facts


def probe_endpoint(url: str, model: str, revision: str, token: str | None, timeout_s: float) -> dict[str, Any]:
    """DNS, then TCP, then the metadata API and one file's download URL; stops at the first layer that fails."""
    t0 = time.monotonic()
    scheme, host, port = address(url)
    out: dict[str, Any] = {"url": url, "host": host, "port": port, "dns": None, "tcp": None, "api": None,
                           "file": None, "redirect": None, "proxy": None}
    if scheme not in ("http", "https") or not host:
        out["error"] = f"{url!r} is not an http(s) URL"
        return out
    proxy = proxy_for(scheme, host, os.environ)
    if proxy:
        # The proxy resolves and connects for us: what must answer here is the proxy itself.
        proxy_scheme, host, port = address(proxy if "://" in proxy else f"http://{proxy}")
        if not host:
            out["error"] = "the proxy setting for it is not a URL"
            return out
        out["proxy"] = f"{proxy_scheme}://{host}:{port}"  # without any user:password
    out["dns"] = probes.dns(host, min(timeout_s, 2.0))
    if not out["dns"]["ok"]:
        return _done(out, t0)
    out["tcp"] = probes.tcp(host, port, min(timeout_s, 2.0))
    if not out["tcp"]["ok"]:
        return _done(out, t0)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    repo, rev = quote(model, safe="/"), quote(revision, safe="")
    api = probes.http_get(f"{url}/api/models/{repo}/revision/{rev}", timeout_s, headers)
    out["api"] = _summarize(api)
    if api.get("status") is None:
        return _done(out, t0)
    file = probes.http_get(f"{url}/{repo}/resolve/{rev}/{PROBE_FILE}", timeout_s, headers, read_body=False)
    out["file"] = _summarize(file)
    location = (file.get("headers") or {}).get("location")
    if file.get("status") in (301, 302, 303, 307, 308) and location and not proxy:
        out["redirect"] = _probe_redirect(url, location, timeout_s)
    return _done(out, t0)


def address(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL; the host is empty where the URL does not parse (`http://[::1`, a port past
    65535 or not a number: urllib raises ValueError for each)."""
    try:
        parts = urlsplit(url)
        return parts.scheme, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "", "", 0


def proxy_for(scheme: str, host: str, env: Mapping[str, str]) -> str | None:
    """The proxy an HTTP client would use for scheme://host, from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY and NO_PROXY."""
    def get(name: str) -> str | None:
        return env.get(name) or env.get(name.lower())

    proxy = get(f"{scheme.upper()}_PROXY") or get("ALL_PROXY")
    if not proxy:
        return None
    no_proxy = get("NO_PROXY") or ""
    if no_proxy and urllib.request.proxy_bypass_environment(host, {"no": no_proxy}):
        return None
    return proxy


def _summarize(resp: dict[str, Any]) -> dict[str, Any]:
    headers = resp.get("headers") or {}
    return {"ok": resp["ok"], "status": resp.get("status"), "error": resp.get("error"),
            "error_code": headers.get("x-error-code"), "error_message": headers.get("x-error-message"),
            "seconds": resp["seconds"]}


def _probe_redirect(base: str, location: str, timeout_s: float) -> dict[str, Any]:
    """LFS files redirect to a CDN host that a firewall may block although the endpoint itself is open."""
    _scheme, host, port = address(location if "://" in location else base + location)
    result: dict[str, Any] = {"host": host, "port": port, "dns": probes.dns(host, min(timeout_s, 2.0)), "tcp": None}
    if result["dns"]["ok"]:
        result["tcp"] = probes.tcp(host, port, min(timeout_s, 2.0))
    return result


def _done(out: dict[str, Any], t0: float) -> dict[str, Any]:
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out
