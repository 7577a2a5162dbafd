"""Text with a byte-order mark is read as UTF-8, whatever the chunk boundaries."""

from __future__ import annotations

import codecs
import io

import pytest

from doctor import unicode_text
from doctor.unicode_text import as_utf8, encoding_of, utf8_bytes

TEXT = "vLLM ✓ 日本語 — torch.OutOfMemoryError: CUDA out of memory 🚀\n" * 3000


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_every_character_survives_chunks_that_cut_code_units(codec: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(unicode_text, "CHUNK", 7)  # odd: every chunk ends inside a code unit
    assert as_utf8(io.BytesIO(TEXT.encode(codec)), codec).read().decode("utf-8") == TEXT


@pytest.mark.parametrize(("bom", "codec"), [(codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                                            (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF8, "utf-8")])
def test_the_byte_order_mark_names_the_encoding(bom: bytes, codec: str):
    assert encoding_of(bom + b"x\x00") == (codec, len(bom))


def test_a_log_without_a_mark_is_left_alone():
    assert encoding_of(b"INFO 12-05 start") is None


def test_undecodable_bytes_become_replacement_characters_not_an_error():
    broken = "ok\n".encode("utf-16-le") + b"\x00\xd8" + "after\n".encode("utf-16-le")  # a lone high surrogate
    out = as_utf8(io.BytesIO(broken), "utf-16-le").read().decode("utf-8")
    assert out.startswith("ok\n") and out.endswith("after\n") and "\ufffd" in out


def test_bytes_with_a_mark_become_utf8_and_bytes_without_stay_the_same_object():
    plain = b'{"schema": "x"}'
    assert utf8_bytes(plain) is plain
    assert utf8_bytes(codecs.BOM_UTF16_LE + '{"é": 1}'.encode("utf-16-le")) == '{"é": 1}'.encode("utf-8")
    assert utf8_bytes(codecs.BOM_UTF8 + plain) == plain
