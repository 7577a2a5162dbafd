"""A separate drafter's rehearsal folder: the registry's config.json, nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor.errors import DoctorError
from doctor.rehearse import drafter


def test_the_dflash_drafter_folder_holds_its_published_config(tmp_path: Path) -> None:
    folder = drafter.build("qwen3.5-35b-a3b-dflash", root=tmp_path)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["DFlashDraftModel"]
    assert config["dflash_config"]["target_layer_ids"] == [1, 10, 19, 28, 37]
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]
    assert drafter.build("z-lab/Qwen3.5-35B-A3B-DFlash", root=tmp_path) == folder


def test_an_unknown_drafter_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(DoctorError, match="z-lab/Qwen3.5-35B-A3B-DFlash"):
        drafter.build("no/such-drafter", root=tmp_path)


def test_a_drafter_folder_another_user_may_write_into_is_neither_reused_nor_written_through(tmp_path: Path) -> None:
    first = drafter.build("qwen3.5-35b-a3b-dflash", root=tmp_path)
    first.chmod(0o777)  # a cache folder anyone may write into: its config.json could be anyone's
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (first / "config.json").unlink()
    (first / "config.json").symlink_to(victim)
    (first / "config.json.partial").symlink_to(victim)
    second = drafter.build("qwen3.5-35b-a3b-dflash", root=tmp_path)
    assert second != first and second.parent == tmp_path
    assert victim.read_text() == "precious\n"
    assert json.loads((second / "config.json").read_text())["architectures"] == ["DFlashDraftModel"]
    assert drafter.build("qwen3.5-35b-a3b-dflash", root=tmp_path) == second  # ours is reused after that
