"""`profiles import`: the vendored recipes snapshot reproduces the shipped imported profiles byte for byte, each
with its provenance; schema drift in a recipe file is refused with one line naming the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from doctor.recipes.importer import import_profiles
from profiles import PROFILE_DIR, load_profile
from tests.test_profiles_cli import run

SNAPSHOT = PROFILE_DIR / "sources"
RECIPE_36 = SNAPSHOT / "vllm-project-recipes" / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml"


def snapshot_files() -> list[Path]:
    return sorted(p for p in SNAPSHOT.rglob("*.yaml") if p.name not in ("SNAPSHOT.yaml", "import.yaml"))


def options() -> dict:
    return yaml.safe_load((SNAPSHOT / "import.yaml").read_text())


def shipped_imports() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for pattern in ("recipe-*.yaml", "cookbook-*.yaml")
            for p in PROFILE_DIR.glob(pattern)}


def test_importing_the_snapshot_reproduces_the_shipped_profiles_byte_for_byte(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ["profiles", "import", *map(str, snapshot_files()), "-o", str(tmp_path)]
    for hw in options()["hardware"]:
        args += ["--hardware", hw]
    for feature in options()["features"]:
        args += ["--feature", feature]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    written = {p.stem: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.yaml")}
    assert written == shipped_imports()
    assert len(written) >= 40 and "skipped" in out


def test_imported_profiles_carry_provenance_and_the_recipes_own_fields() -> None:
    profile = load_profile("recipe-qwen3.6-nvfp4-rtx5090")
    assert profile.provenance["repository"] == "vllm-project/recipes"
    assert profile.provenance["file"] == "models/Qwen/Qwen3.6-35B-A3B.yaml"
    assert len(profile.provenance["commit"]) == 40 and profile.provenance["date"].startswith("20")
    assert "hardware rtx_5090 (verified)" in profile.provenance["entry"]
    assert any("variants.nvfp4.hardware_overrides.rtx_5090" in s for s in profile.sources)
    assert profile.flags["max-num-seqs"] == 4 and profile.flags["gpu-memory-utilization"] == 0.95
    assert profile.hardware.gpu == "RTX5090" and profile.hardware.min_compute_capability == "10.0"


def test_the_recipes_command_builder_rules_are_followed() -> None:
    # variant + exact-hardware override after it, the parallel flag from the strategy, features last
    pro6000 = load_profile("recipe-qwen3.6-bf16-rtxpro6000")
    assert pro6000.flags["max-num-seqs"] == 8 and pro6000.tp == 1
    # the BF16 variant does not fit one 80 GB H100: the TP rule spreads it over the GPUs given
    assert load_profile("recipe-qwen3.5-bf16-h100x2").tp == 2
    fp8 = load_profile("recipe-qwen3.6-fp8-rtxpro6000")
    assert fp8.env == {"VLLM_USE_DEEP_GEMM": "0"}


def test_cookbook_abbreviations_are_spelled_out_and_the_release_is_the_floor() -> None:
    mtp = load_profile("cookbook-qwen3.6-fp8-h100-mtp")
    assert mtp.flags["speculative-algorithm"] == "NEXTN" and "speculative-algo" not in mtp.flags
    assert str(mtp.backend_version) == ">=0.5.10"
    assert mtp.provenance["repository"] == "sgl-project/sgl-cookbook"


def test_an_entry_the_plan_does_not_fit_is_skipped_with_the_reason() -> None:
    cookbook = [p for p in snapshot_files() if "sgl-cookbook" in str(p)]
    result = import_profiles(cookbook)
    reasons = {s.entry: s.why for s in result.skipped}
    bf16_h100 = next(why for entry, why in reasons.items() if "Qwen3.6-35B-A3B, hardware H100" in entry)
    assert "does not fit 1xH100" in bf16_h100
    assert "cookbook-qwen3.6-fp8-h100" in result.profiles


def _drifted(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "recipes"
    shutil.copytree(SNAPSHOT / "vllm-project-recipes", folder)
    path = folder / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))
    return folder


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["variants"]["nvfp4"].update(quant_overrides={"fp8": {"ep": 2}}), "variants.nvfp4.quant_overrides"),
    (lambda d: d["features"]["spec_decoding"].update(modes={"mtp": {"argv": ["--x"]}}),
     "features.spec_decoding.modes.mtp.argv"),
    (lambda d: d["variants"]["fp8"]["hardware_overrides"]["rtx_pro_6000"].update(extra_flags=["--x"]),
     "variants.fp8.hardware_overrides.rtx_pro_6000.extra_flags"),
    (lambda d: d["model"].update(nightly_required=True), "model.nightly_required"),
])
def test_schema_drift_is_refused_with_one_line_naming_the_field(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, edit, field: str) -> None:
    folder = _drifted(tmp_path, edit)
    files = [folder / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml", folder / "taxonomy.yaml",
             *sorted((folder / "strategies").glob("*.yaml"))]
    code, out, err = run(capsys, "profiles", "import", *map(str, files))
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"field '{field}'" in err
    assert "Traceback" not in err


def test_nested_feature_modes_resolve_to_the_default_mode(tmp_path: Path) -> None:
    def to_modes(data: dict) -> None:
        args = data["features"]["spec_decoding"].pop("args")
        data["features"]["spec_decoding"].update(default_mode="mtp", modes={
            "dflash": {"label": "DFlash", "args": ["--speculative-config", '{"method":"dflash"}']},
            "mtp": {"label": "MTP", "args": args}})

    folder = _drifted(tmp_path, to_modes)
    files = [folder / "models" / "Qwen" / "Qwen3.6-35B-A3B.yaml", folder / "taxonomy.yaml",
             *sorted((folder / "strategies").glob("*.yaml"))]
    result = import_profiles(files, features=["spec_decoding"])
    text = result.profiles["recipe-qwen3.6-nvfp4-rtx5090-mtp"]
    assert "features.spec_decoding.modes.mtp" in text and "method: mtp" in text


def test_a_file_of_no_known_kind_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("a: 1\n")
    code, _, err = run(capsys, "profiles", "import", str(other))
    assert code == 2 and "not a vllm-project/recipes model" in err and len(err.strip().splitlines()) == 1
