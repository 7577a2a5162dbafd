"""Read a traceback pasted without its exception line: the deepest engine frame is where it was raised.

People paste a traceback up to the frame that looks relevant, or a page cuts it mid-frame, so the exception
line Python prints last is missing. The crash scan reads exceptions; here the last traceback of an excerpt that
is cut (no exception line after its frames) still yields a crash: its raise site is the deepest engine frame
(vllm / sglang, else the deepest frame; `remedies.rootcause.cut_traceback_near`), its root what the report's
title says failed, when the issue's title (its first H1 / H2 heading) states a failure. When a C library printed the
failure above it - NCCL's `NCCL WARN` (src/include/debug.h WARN), a CUDA driver or runtime error (torch's
c10/cuda/CUDAException.h "CUDA error: ...", the driver API's CUDA_ERROR_* names), NVSHMEM's
"non-zero status" / "failed" (nvshmem src/host/util/debug.h NVSHMEMI_ERROR_PRINT) - that line is the root
the Python frames were unwinding from, and names the crash. explain reads this only in an excerpt in which
nothing else named a failure.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

from remedies.crash import Crash, component_of, starts_traceback
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise
from remedies.rootcause import BACKWARD, cut_traceback_near

_FRAME_LINE = re.compile(r'^\s{0,8}File "[^"\n]{1,1024}", line \d{1,9}')
# A C library's own report of the failure, printed before the Python frames that unwind from it.
UPSTREAM = re.compile(
    r"\bNCCL WARN\b|\bCUDA (?:driver |runtime )?error\b|\bCUDA_ERROR_[A-Z_]{2,60}\b|\bcudaError[A-Z]\w{2,60}\b"
    r"|(?i:\bnvshmem\w{0,40}\b[^\n]{0,300}?(?:non-zero status|failed|error))"
)
# An issue's title (the first H1 / H2 heading, its [Bug]-style tags dropped) that states a failure
_TITLE = re.compile(r"^\s{0,3}#{1,2}\s+(?:\[[^\]\n]{1,40}\]:?\s*)*(?P<text>\S.{8,})$")
_FAILS = re.compile(r"(?i)\b(?:error|exception|fail(?:s|ed|ure)?|cannot|can't|unable|refused|in use|not (?:found|"
                    r"supported|available)|invalid|crash(?:es|ed)?|timed? ?out|denied)\b|报错|失败|错误|异常")
CUT_KIND = "cut"  # the crash's kind: no exception line of its own, so no verdict on the code that raised it
CUT = "not pasted (the traceback is cut before its exception line)"
MAX_ROOT = 400


def _starts(lines: list[str]) -> list[int]:
    """0-based indices where a traceback starts: its header, or a first frame printed without one."""
    starts = []
    for index, raw in enumerate(lines):
        text = normalise(raw[:MAX_LINE]).text
        if starts_traceback(text):
            starts.append(index)
        elif _FRAME_LINE.match(text) and (not starts or not _in_block(lines, starts[-1], index)):
            starts.append(index)
    return starts


def _in_block(lines: list[str], start: int, index: int) -> bool:
    """Whether every line from `start` to `index` is the traceback's own (its header, frames, indented source)."""
    for raw in lines[start + 1:index]:
        text = normalise(raw[:MAX_LINE]).text
        if not (_FRAME_LINE.match(text) or text[:1] in " \t"):
            return False
    return True


def _upstream(lines: list[str], start: int, floor: int) -> int | None:
    """The last line within BACKWARD lines above a traceback (not above `floor`) where a C library reported the
    failure, 0-based, or None."""
    for index in range(start - 1, max(floor, start - BACKWARD) - 1, -1):
        if UPSTREAM.search(normalise(lines[index][:MAX_LINE]).text):
            return index
    return None


def _title(lines: list[str]) -> tuple[int, str] | None:
    """The 0-based index and text of the issue title above a traceback when it states a failure, else None."""
    for index, raw in enumerate(lines):
        found = _TITLE.match(raw[:MAX_LINE])
        if found is not None:
            text = found.group("text").replace("**", "").replace("`", "").strip()[:MAX_ROOT]
            return (index, text) if _FAILS.search(text) else None
    return None


def cut_crashes(stream: BinaryIO) -> Iterator[Match]:
    """The last traceback of a pasted excerpt (at most WRAP_SCAN_BYTES) that is cut before its exception line,
    as a crash raised at its deepest engine frame, rooted at a C library's report above it when there is one."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    if 'File "' not in text:
        return
    lines = text.split("\n")
    padded = ["", *lines]  # a traceback on the first line still has a line before it to search from
    starts = _starts(lines)
    for order in range(len(starts) - 1, -1, -1):
        start = starts[order]
        frame = cut_traceback_near("", start + 1, (), padded)
        if frame is None:
            continue
        floor = starts[order - 1] + 1 if order else 0
        upstream = _upstream(lines, start, floor)
        titled = _title(lines[:start]) if upstream is None else None
        at = upstream if upstream is not None else titled[0] if titled is not None else start
        root = (normalise(lines[at][:MAX_LINE]).text.strip()[:MAX_ROOT] if upstream is not None
                else titled[1] if titled is not None else CUT)
        crash = Crash(at + 1, root, root, frame, component_of([frame], root), CUT_KIND)
        yield Match(UNKNOWN, at + 1, lines[at].strip()[:MAX_ROOT], tuple(lines[max(0, at - 2):at]),
                    tuple(lines[at + 1:at + 3]), crash=crash)
        return
