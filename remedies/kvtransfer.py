"""A native crash inside a KV-transfer library the engine calls: that library's bug (or the engine's use of it).

Prefill / decode disaggregation moves KV blocks through a transfer library the engine's connector calls: NIXL
(vLLM's vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py, SGLang's
python/sglang/srt/disaggregation/nixl/), Mooncake's transfer engine (SGLang's disaggregation/mooncake/, vLLM's
MooncakeConnector) or LMCache (vLLM's LMCacheConnectorV1). A segmentation fault or abort whose stack (Python's
faulthandler dump, `File "..." line N in f`, or a native backtrace `#3 0x... in ... libnixl.so`) runs through
that library is no setting of the user's: the way out is another release of the library (the one the engine's
connector pins or was tested with), another transfer backend (SGLang --disaggregation-transfer-backend,
python/sglang/srt/server_args.py; vLLM's kv_connector in --kv-transfer-config, vllm/config/kv_transfer.py), and a
report with both versions.
"""

from __future__ import annotations

import re
from typing import Iterable

NATIVE_CRASH = re.compile(r"Segmentation fault|SIGSEGV|SIGBUS|SIGABRT|core dumped|Fatal Python error|signal 11\b"
                          r"|terminate called after throwing")
# A stack line naming the library: a Python frame, faulthandler's frame, a native backtrace frame or a shared
# object of the library.
_LIBRARY = re.compile(r"(?i)(?<![A-Za-z])(nixl|mooncake|lmcache)(?:[/\\_.]|(?![A-Za-z]))")
_STACK_LINE = re.compile(r'File "|^\s*#\d{1,3}\s|\b0x[0-9a-f]{4,}\b|\.so\b')
MAX_LINES = 4000
SWITCH = {
    "vllm": "another kv_connector in --kv-transfer-config (vllm/config/kv_transfer.py)",
    "sglang": "the other --disaggregation-transfer-backend (mooncake / nixl; python/sglang/srt/server_args.py)",
}


def transfer_library(exception: str, lines: Iterable[str]) -> tuple[str, str] | None:
    """(library, the stack line that names it) when a native crash's stack runs through a KV-transfer library."""
    if not NATIVE_CRASH.search(exception):
        return None
    for count, line in enumerate(lines):
        if count >= MAX_LINES:
            break
        hit = _LIBRARY.search(line[:2048]) if _STACK_LINE.search(line[:2048]) else None
        if hit is not None:
            return hit.group(1).lower(), line.strip()[:300]
    return None


def transfer_reason(library: str, engine: str) -> str:
    """Why a native crash in a KV-transfer library is a bug, and the ways out."""
    return (f"The process crashed natively inside {library}, the KV-transfer library the engine's disaggregation "
            f"connector calls: a bug of that library (or of the engine's use of it), not a setting. Use the "
            f"{library} release the engine's connector pins or was tested with, or {SWITCH.get(engine, SWITCH['vllm'])}, "
            "and report it with both versions.")
