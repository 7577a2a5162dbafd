"""Redaction of secrets (and, on request, hostnames and IP addresses) in env values, argv, logs and reports.

`redact_document` is the one pass every report goes through before any renderer sees it: it walks every
string of a JSON-like document, replaces values of secret-named keys, values that follow a secret flag in an
argv list, token-shaped substrings and headers in free text, and every other occurrence of a secret value it
found that way. With `hosts=True` it also replaces hostnames and IP addresses by stable pseudonyms
(`[HOST-1]`, `[IP-1]`), keeping loopback and wildcard addresses, which identify nobody.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 6

# Names of env vars / keys whose value is a secret: *_TOKEN, *_KEY, *SECRET*, passwords, credentials, auth headers.
_SECRET_NAME = re.compile(
    r"(^|_)(TOKEN|KEY|APIKEY|SECRET\w*|PASSWORD|PASSWD|CREDENTIALS?|AUTHORIZATION|COOKIE)$|SECRET|PASSWORD|PASSWD"
)
_SECRET_FLAG = re.compile(r"^--?[A-Za-z0-9-]*(token|api-?key|secret|password|passwd)$", re.I)
_WORDS = ("token", "key", "secret", "passw")
# (pattern, replacement, lower-case needles: the pattern can only match a text that contains one of them).
_TOKEN_PATTERNS: list[tuple[re.Pattern[str], str, tuple[str, ...]]] = [
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{16,}"), REDACTED, ("hf_",)),
    (re.compile(r"(?<![A-Za-z0-9])(?:sk|rk|pk)-[A-Za-z0-9_-]{16,}"), REDACTED, ("sk-", "rk-", "pk-")),
    (re.compile(r"(?<![A-Za-z0-9])(?:ghp|gho|ghs|github_pat|glpat|xox[abp])[_-][A-Za-z0-9_-]{16,}"), REDACTED,
     ("ghp", "gho", "ghs", "github_pat", "glpat", "xox")),
    (re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;}]+"),
     r"\1" + REDACTED, ("authorization",)),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{6,}"), r"\1" + REDACTED, ("bearer",)),
    (re.compile(r"(?i)(--[A-Za-z0-9-]*(?:token|api-?key|secret|password|passwd)(?:=|\s+)[\"']?)[^\s\"']+"),
     r"\1" + REDACTED, _WORDS),
    (re.compile(r"((?:_TOKEN|_KEY|SECRET[A-Z0-9_]*|PASSWORD|PASSWD)\s*=\s*[\"']?)[^\s\"']+"),
     r"\1" + REDACTED, _WORDS),
    (re.compile(r"(?i)((?:token|api_?key|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
                r"(?![\"']?(?:None|null|true|false|\[REDACTED\])(?![\w-]))(?!\d+(?:\.\d+)?(?![\w.-]))"
                r"[^\s\"',;}]+"), r"\1" + REDACTED, _WORDS),
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), r"\1" + REDACTED + "@", ("://",)),
]
_HOST_KEYS = frozenset({"hostname", "host", "node", "node_name", "node_ip", "node_ip_address", "ip", "address",
                        "head_address", "gcs_address", "driver_host", "master", "master_addr", "fqdn"})
_IPV4 = re.compile(r"(?<![\w.=])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_URL_HOST = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://(?:[^/\s@]+@)?)([A-Za-z0-9.-]+)")
_KEEP_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", ""})
# Public sites that sources and remedies link to: naming them identifies no customer.
_PUBLIC_DOMAINS = ("huggingface.co", "hf.co", "github.com", "githubusercontent.com", "pypi.org",
                   "pythonhosted.org", "pytorch.org", "nvidia.com", "vllm.ai", "sglang.ai", "ray.io",
                   "apache.org", "docker.com", "docker.io", "nvcr.io", "python.org", "example.com")


def is_secret_name(name: str) -> bool:
    """Whether an env var or key name says its value is a secret (HF_TOKEN, *_KEY, *SECRET*, api_key...)."""
    return bool(_SECRET_NAME.search(re.sub(r"[-.]", "_", name.upper())))


def is_secret_flag(arg: str) -> bool:
    """Whether a command-line flag takes a secret value (--api-key, --hf-token, --password...)."""
    return bool(_SECRET_FLAG.match(arg))


def redact_text(text: str) -> str:
    """Replace token-shaped substrings and the values of secret-carrying arguments, headers and assignments."""
    lowered = text.lower()
    for pattern, replacement, needles in _TOKEN_PATTERNS:
        if any(n in lowered for n in needles):
            text = pattern.sub(replacement, text)
    return text


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Env values with secret names replaced, others scrubbed of token-shaped substrings."""
    return {k: (REDACTED if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}


def redact_argv(argv: list[str]) -> list[str]:
    """An argument vector with the value after each secret flag (and `--flag=value` forms) replaced."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        out.append(REDACTED if hide_next and arg else redact_text(arg))
        hide_next = is_secret_flag(arg)
    return out


class Redactor:
    """One redaction pass over a JSON-like document; `hosts` also pseudonymises hostnames and IPs."""

    def __init__(self, hosts: bool = False) -> None:
        self.hosts = hosts
        self.secrets: set[str] = set()
        self.pseudonyms: dict[str, str] = {}
        self._known_hosts: re.Pattern[str] | None = None
        self._secrets_longest_first: list[str] = []

    def __call__(self, doc: Any) -> Any:
        self._harvest(doc, None)
        self._secrets_longest_first = sorted(self.secrets, key=len, reverse=True)
        if self.hosts:
            names = sorted((h for h in self.pseudonyms if not _is_ip(h)), key=len, reverse=True)
            if names:
                self._known_hosts = re.compile(
                    r"(?<![\w-])(" + "|".join(re.escape(n) for n in names) + r")(?:\.[A-Za-z0-9-]+)*(?![\w-])", re.I)
        return self._walk(doc, None)

    def _harvest(self, node: Any, key: str | None) -> None:
        """First look: remember secret values (to hide them wherever else they appear) and host names."""
        if isinstance(node, dict):
            for k, v in node.items():
                self._harvest(v, str(k))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str) and i and isinstance(node[i - 1], str) and is_secret_flag(node[i - 1]):
                    self._remember_secret(item)
                self._harvest(item, key)
        elif isinstance(node, str) and key is not None:
            if is_secret_name(key):
                self._remember_secret(node)
            elif self.hosts and key.lower() in _HOST_KEYS:
                host = node.split(":")[0] if node.count(":") == 1 else node
                self._pseudonym(host)

    def _remember_secret(self, value: str) -> None:
        if len(value) >= MIN_SECRET_LEN and value != REDACTED:
            self.secrets.add(value)

    def _walk(self, node: Any, key: str | None) -> Any:
        if isinstance(node, dict):
            return {self._string(str(k)): self._walk(v, str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [REDACTED if i and isinstance(item, str) and item and isinstance(node[i - 1], str)
                    and is_secret_flag(node[i - 1]) else self._walk(item, key) for i, item in enumerate(node)]
        if isinstance(node, str):
            if key is not None and node and is_secret_name(key):
                return REDACTED
            return self._string(node, hosts=self.hosts and not (key and "version" in key.lower()))
        return node

    def _string(self, text: str, hosts: bool | None = None) -> str:
        if not text.isascii():
            text = text.encode("utf-8", "replace").decode("utf-8")
        for secret in self._secrets_longest_first:
            if secret in text:
                text = text.replace(secret, REDACTED)
        text = redact_text(text)
        if self.hosts if hosts is None else hosts:
            text = self._hide_hosts(text)
        return text

    def _hide_hosts(self, text: str) -> str:
        if self._known_hosts is not None:
            text = self._known_hosts.sub(lambda m: self._pseudonym(m.group(1)), text)
        text = _URL_HOST.sub(lambda m: m.group(1) + (m.group(2) if _is_public(m.group(2))
                                                     else self._pseudonym(m.group(2))), text)
        text = _IPV4.sub(lambda m: self._pseudonym(m.group(0)) if _is_ip(m.group(0)) else m.group(0), text)
        return _IPV6.sub(lambda m: self._pseudonym(m.group(0)) if "::" in m.group(0) or m.group(0).count(":") == 7
                         else m.group(0), text)

    def _pseudonym(self, host: str) -> str:
        """A stable stand-in per host or address; loopback, wildcard and already hidden values stay as they are."""
        if host.lower() in _KEEP_HOSTS or host.startswith("[") or _is_local(host):
            return host
        key = host.lower()
        if key not in self.pseudonyms:
            kind = "IP" if _is_ip(host) else "HOST"
            n = sum(1 for v in self.pseudonyms.values() if v.startswith(f"[{kind}-")) + 1
            self.pseudonyms[key] = f"[{kind}-{n}]"
        return self.pseudonyms[key]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_public(host: str) -> bool:
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in _PUBLIC_DOMAINS)


def _is_local(text: str) -> bool:
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return False
    return addr.is_loopback or addr.is_unspecified


def redact_document(doc: Any, hosts: bool = False) -> Any:
    """A redacted copy of a JSON-like document (the input is left untouched)."""
    return Redactor(hosts=hosts)(doc)
