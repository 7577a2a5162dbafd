"""Compressed files and archives other than gzip, named by their magic bytes, so that an input that is one is
refused with what it is and how to read it rather than as binary or non-UTF-8 bytes.

Magic numbers: xz (tukaani.org xz-file-format 1.1.0, 2.1.1.1 "Header Magic Bytes"), bzip2 ("BZh", the block
size '1'-'9', then a block's or the stream end's magic, bzip2's compress.c), zstd frames (RFC 8878 3.1.1
"Magic_Number" 0xFD2FB528, little-endian), zip (PKWARE APPNOTE 4.3.7 local file header 0x04034b50, 4.3.16 end of
central directory 0x06054b50 for an empty archive), 7z (7-Zip's 7zFormat.txt signature), lz4 frames
(lz4_Frame_format.md 0x184D2204), and tar ("ustar\\0" at offset 257, POSIX.1-2017 pax "ustar Interchange
Format"; GNU tar's "ustar  \\0").
"""

from __future__ import annotations

# bzip2's first block (pi) or, for empty input, its end of stream (sqrt(pi)), right after "BZh" and the level.
_BZIP2_BLOCKS = (b"1AY&SY", b"\x17\x72\x45\x38\x50\x90")
# (magic, offset, name, the command that writes its text to stdout)
_SIGNATURES: tuple[tuple[bytes, int, str, str], ...] = (
    (b"\xfd7zXZ\x00", 0, "an xz-compressed file", "xz -dc"),
    (b"\x28\xb5\x2f\xfd", 0, "a zstd-compressed file", "zstd -dc"),
    (b"\x04\x22\x4d\x18", 0, "an lz4-compressed file", "lz4 -dc"),
    (b"PK\x03\x04", 0, "a zip archive", "unzip -p"),
    (b"PK\x05\x06", 0, "an empty zip archive", "unzip -l"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7z archive", "7z x -so"),
    (b"ustar\x00", 257, "a tar archive", "tar -xOf"),
    (b"ustar  \x00", 257, "a tar archive", "tar -xOf"),
)


def compression_of(head: bytes) -> tuple[str, str] | None:
    """(what the bytes are, the command that reads them out) for a known compressed file or archive, else None
    (gzip is read directly and is not named here)."""
    if head[:3] == b"BZh" and head[3:4] in tuple(b"123456789"[i:i + 1] for i in range(9)) and head[4:10] in _BZIP2_BLOCKS:
        return "a bzip2-compressed file", "bzip2 -dc"
    for magic, offset, name, command in _SIGNATURES:
        if head[offset:offset + len(magic)] == magic:
            return name, command
    return None


def refusal(head: bytes) -> str | None:
    """The one-line refusal for a compressed or archived input (to follow its name), or None when it is
    neither."""
    found = compression_of(head)
    if found is None:
        return None
    what, command = found
    return f"{what}, not plain text; only gzip is read directly (decompress it first: {command} FILE > FILE.txt)"
