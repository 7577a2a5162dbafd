"""The facts schema's compiled validator is cached on disk like a .pyc: a second run loads it, a corrupt or
unwritable cache only costs the compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.errors import BadBundle
from doctor.facts import schema

BAD = {"schema": "qwen-doctor.facts", "schema_version": 1, "nvml": {"gpus": [1]}}


def _fresh(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    schema._validator.cache_clear()


def test_the_validator_is_cached_and_the_cached_one_judges_alike(tmp_path: Path, monkeypatch) -> None:
    _fresh(monkeypatch, tmp_path)
    with pytest.raises(BadBundle, match=r"nvml.gpus\[0\]: expected an object"):
        schema.validate(BAD, "b.json")
    cached = list((tmp_path / "qwen-doctor" / "validators").glob("*.marshal"))
    assert len(cached) == 1
    _fresh(monkeypatch, tmp_path)
    monkeypatch.setattr(schema, "_generated", lambda part: pytest.fail("compiled again despite the cache"))
    with pytest.raises(BadBundle, match=r"nvml.gpus\[0\]: expected an object"):
        schema.validate(BAD, "b.json")


def test_a_corrupt_cache_file_is_compiled_again(tmp_path: Path, monkeypatch) -> None:
    _fresh(monkeypatch, tmp_path)
    schema._validator(None)
    (cached,) = (tmp_path / "qwen-doctor" / "validators").glob("*.marshal")
    cached.write_bytes(b"not marshal data")
    _fresh(monkeypatch, tmp_path)
    with pytest.raises(BadBundle, match=r"nvml.gpus\[0\]"):
        schema.validate(BAD, "b.json")


def test_an_unwritable_cache_still_validates(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    _fresh(monkeypatch, blocker)       # the cache root is a file: nothing can be written under it
    with pytest.raises(BadBundle, match=r"nvml.gpus\[0\]"):
        schema.validate(BAD, "b.json")
