"""Text saved as UTF-16 or UTF-32 with a byte-order mark, read as the UTF-8 everything else reads.

Windows PowerShell 5.1's `>` and `Out-File` write UTF-16 LE with a BOM (`docker logs vllm > vllm.log`,
`python collect_env.py > env.txt` on the Windows side of WSL2 or Docker Desktop), and Notepad and `Out-File
-Encoding utf8` start UTF-8 with one. Read as bytes, every other byte of a UTF-16 log is NUL and no message matches;
a BOM ahead of JSON or YAML makes a valid document unreadable. The BOM names the encoding (Unicode Standard,
section 23.8 "Specials"); text without one is left as it is, and a UTF-8 BOM is dropped.
"""

from __future__ import annotations

import codecs
import io
from typing import Any, BinaryIO

# Longest first: UTF-32 LE's BOM starts with UTF-16 LE's.
BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF8, "utf-8"))
CHUNK = 64 * 1024


def encoding_of(head: bytes) -> tuple[str, int] | None:
    """(codec, BOM length) when `head` starts with a byte-order mark."""
    for bom, codec in BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    return None


def utf8_bytes(raw: bytes) -> bytes:
    """`raw` as UTF-8 bytes: decoded by its BOM when it has one (undecodable units become U+FFFD), else as it is."""
    found = encoding_of(raw[:4])
    if found is None:
        return raw
    codec, bom = found
    return raw[bom:].decode(codec, errors="replace").encode("utf-8")


def as_utf8(stream: BinaryIO, codec: str) -> BinaryIO:
    """`stream` (positioned after its BOM) decoded from `codec` and re-encoded as UTF-8; undecodable bytes
    become U+FFFD, as a byte log's junk does."""
    return io.BufferedReader(_Transcoded(stream, codec))  # type: ignore[return-value]


class _Transcoded(io.RawIOBase):
    def __init__(self, stream: BinaryIO, codec: str) -> None:
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending and not self._done:
            raw = self._stream.read(CHUNK)
            self._done = not raw
            self._pending = self._decoder.decode(raw, final=self._done).encode("utf-8")
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n
