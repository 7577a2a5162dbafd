"""Redaction of secrets in env values, command lines and log text."""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

SECRET_NAME = re.compile(r"(TOKEN|_KEY$|^KEY$|API_KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)
_TOKEN_PATTERNS = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\b(sk|rk)-[A-Za-z0-9_-]{16,}\b"),
    re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+)?[^\s\"',]+"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(--(?:api[-_]key|hf[-_]token|token)[=\s]+)[^\s\"']+"),
    re.compile(r"(?i)(\b[A-Z0-9_]*(?:TOKEN|API_KEY|SECRET|PASSWORD)\s*=\s*)[^\s\"']+"),
]


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return bool(SECRET_NAME.search(name))


def redact_text(text: str) -> str:
    """Replace token-shaped substrings and secret-carrying arguments or headers."""
    for pattern in _TOKEN_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() and m.group(1) else "") + REDACTED, text)
    return text


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Env values with secret names replaced, others scrubbed of token-shaped substrings."""
    return {k: (REDACTED if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}
