"""The source position a log record prints in its own prefix, as the site of a message without a traceback.

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
# A source file and line directly followed by the record's separator: `]`, `: ` or ` -- `.
_SITE = re.compile(r"(?:^|[\s\[>|(])(?P<path>/?[\w.-]{1,120}(?:/[\w.-]{1,120}){0,10}"
                   r"\.(?:py|cc|cpp|cxx|h|hpp|c|cu|cuh|go|rs|java|scala)):(?P<line>\d{1,7})(?:\]|: | -- )")


def record_site(line: str, message: str = "") -> Frame | None:
    """The file and line the record's prefix names, before `message` when the line holds it, or None."""
    head = line[:HEAD]
    at = head.find(message[:40]) if message else -1
    for found in _SITE.finditer(head):
        if at <= 0 or found.start("path") <= at:
            return Frame(found.group("path"), int(found.group("line")), "")
    return None
