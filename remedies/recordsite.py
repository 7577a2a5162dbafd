"""Source positions a log prints outside a traceback: in a message, or in a record's own prefix.

A native check often prints where it failed inside its message: torch's C10D_NCCL_CHECK ("NCCL error in:
<file>:<line>, ...", torch/csrc/distributed/c10d/NCCLUtils.hpp), ggml's CUDA_CHECK ("CUDA error <n> at
<file>:<line>: ..."), torch's TORCH_WARN ("Triggered internally at <file>:<line>."). `message_site(text)` reads it.

Logging frameworks put the file and line of the logging call before the message: glog / absl (`W0816
16:43:33.649654 127 pinned_memory_manager.cc:236] ...`, TensorFlow's `F tensorflow/.../statusor.cc:34] ...`),
Ray's C++ core (`[2025-07-23 10:05:49,679 W 51000 51000] gcs_rpc_client.h:151: ...`,
src/ray/util/logging.cc), Ray's Python logger (`WARNING worker.py:1228 -- ...`, ray/_private/ray_logging),
vLLM's (`[custom_ops.py:11] ...`, vllm/logger.py `[%(fileinfo)s:%(lineno)d]`) and Python's warnings
(`file.py:12: UserWarning: ...`). `record_site(line)` reads that position from the record's head.
"""

from __future__ import annotations

import re

from remedies.crash import Frame

HEAD = 200
MAX_MESSAGE = 2000
# A source file and line directly followed by the record's separator: `]`, `: ` or ` -- `.
_SITE = re.compile(r"(?:^|[\s\[>|(])(?P<path>/?[\w.-]{1,120}(?:/[\w.-]{1,120}){0,10}"
                   r"\.(?:py|cc|cpp|cxx|h|hpp|c|cu|cuh|go|rs|java|scala)):(?P<line>\d{1,7})(?:\]|: | -- )")


# A C / C++ / CUDA source position a message names as the place it failed.
_IN_MESSAGE = re.compile(r"(?:\bat|\berror in:|\binternally at)\s+(?P<path>[^\s:'\"()`,]{1,300}"
                         r"\.(?:cu|cuh|cc|cpp|cxx|c|h|hpp)):(?P<line>\d{1,7})\b")


def message_site(text: str) -> Frame | None:
    """The native source file and line a message says it failed at, or None."""
    hit = _IN_MESSAGE.search(text[:MAX_MESSAGE])
    return Frame(hit.group("path"), int(hit.group("line")), "") if hit else None



def record_site(line: str, message: str = "") -> Frame | None:
    """The file and line the record's prefix names, before `message` when the line holds it, or None."""
    head = line[:HEAD]
    at = head.find(message[:40]) if message else -1
    for found in _SITE.finditer(head):
        if at <= 0 or found.start("path") <= at:
            return Frame(found.group("path"), int(found.group("line")), "")
    return None
