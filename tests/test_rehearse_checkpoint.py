"""The rehearsal checkpoint folder: exact config, vision-processor and generation configs, tokenizer, the
content-hash cache under the user's cache directory, and refusals (HF cache, foreign vocabularies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor.errors import DoctorError
from doctor.models.registry import resolved_config
from doctor.rehearse import checkpoint

GENERATED = {"config.json", "generation_config.json", "preprocessor_config.json", "video_preprocessor_config.json",
             "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}


@pytest.fixture()
def root(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    return tmp_path / "cache"


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_registry_model_gets_every_file_a_server_reads_besides_weights(root: Path) -> None:
    ck = checkpoint.build("Qwen/Qwen3.5-35B-A3B", root)
    assert set(ck.files) == GENERATED
    assert {p.name for p in ck.path.iterdir()} == GENERATED | {checkpoint.MARKER}
    assert not [p for p in ck.path.iterdir() if p.suffix in (".safetensors", ".bin", ".pt")]
    config = _json(ck.path / "config.json")
    base = resolved_config("Qwen/Qwen3.5-35B-A3B")
    assert config["text_config"] == {**base["text_config"], "eos_token_id": 248046}
    assert config["vision_config"] == base["vision_config"]
    assert (config["image_token_id"], config["video_token_id"]) == (248056, 248057)
    assert (config["vision_start_token_id"], config["vision_end_token_id"]) == (248053, 248054)
    assert _json(ck.path / "generation_config.json")["eos_token_id"] == [248046, 248044]
    assert ck.tokenizer.startswith("generated")


def test_vision_processor_configs_follow_the_vision_tower(root: Path) -> None:
    ck = checkpoint.build("qwen3.5-35b-a3b", root)
    image = _json(ck.path / "preprocessor_config.json")
    video = _json(ck.path / "video_preprocessor_config.json")
    vision = resolved_config("Qwen/Qwen3.5-35B-A3B")["vision_config"]
    for cfg in (image, video):
        assert (cfg["patch_size"], cfg["temporal_patch_size"], cfg["merge_size"]) == (
            vision["patch_size"], vision["temporal_patch_size"], vision["spatial_merge_size"])
    assert image["image_processor_type"] == "Qwen2VLImageProcessorFast"
    assert video["video_processor_type"] == "Qwen3VLVideoProcessor"


@pytest.mark.parametrize("alias, method", [("fp8", "fp8"), ("gptq-int4", "gptq")])
def test_quantized_variants_carry_their_quantization_config(root: Path, alias: str, method: str) -> None:
    config = _json(checkpoint.build(alias, root).path / "config.json")
    assert config["quantization_config"]["quant_method"] == method


def test_block_fp8_keeps_what_qwen_releases_keep_in_bf16(root: Path) -> None:
    config = _json(checkpoint.build("fp8", root).path / "config.json")
    skipped = set(config["quantization_config"]["modules_to_not_convert"])
    depth = config["vision_config"]["depth"]
    assert {"model.visual.blocks.0.mlp.linear_fc1", f"model.visual.blocks.{depth - 1}.attn.proj",
            "model.visual.merger.linear_fc2"} <= skipped
    # GDN gates a/b (32 rows, not a multiple of the 128 block), both spellings SGLang and vLLM match
    assert {"model.language_model.layers.0.linear_attn.in_proj_a", "model.language_model.layers.0.linear_attn.in_proj_b",
            "model.language_model.layers.0.linear_attn.in_proj_ba", "model.language_model.layers.0.mlp.gate",
            "model.language_model.layers.0.mlp.shared_expert_gate"} <= skipped
    # full-attention layers (every 4th) have no GDN gates; their attention and the experts stay FP8
    assert not [n for n in skipped if n.startswith("model.language_model.layers.3.linear_attn")]
    assert not [n for n in skipped if "self_attn" in n or "experts" in n]
    assert "quantization_config" not in _json(checkpoint.build("Qwen/Qwen3.5-35B-A3B", root).path / "config.json")


def test_a_changed_config_rule_gets_a_new_folder_not_the_stale_cached_one(root: Path, monkeypatch) -> None:
    before = checkpoint.plan("fp8", root)[0]
    monkeypatch.setattr(checkpoint, "fp8_unconverted", lambda config: ["lm_head"])
    assert checkpoint.plan("fp8", root)[0] != before


def test_the_folder_is_cached_by_content_and_variants_get_their_own(root: Path) -> None:
    first = checkpoint.build("bf16", root)
    again = checkpoint.build("Qwen/Qwen3.5-35B-A3B", root)
    fp8 = checkpoint.build("fp8", root)
    assert (first.cached, again.cached) == (False, True)
    assert again.path == first.path and again.config_hash == first.config_hash
    assert fp8.path != first.path
    assert sorted(p.name for p in root.iterdir()) == sorted([first.path.name, fp8.path.name])


def test_dry_run_planning_writes_nothing(root: Path) -> None:
    path, digest, *_ = checkpoint.plan("bf16", root)
    assert digest[:16] in path.name
    assert not root.exists()


def test_local_model_dir_config_is_served_as_is_and_its_hash_follows_it(root: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    config = resolved_config("Qwen/Qwen3.5-35B-A3B")
    config["text_config"]["num_hidden_layers"] = 8
    (model / "config.json").write_text(json.dumps(config))
    ck = checkpoint.build(str(model), root)
    written = _json(ck.path / "config.json")
    assert written["text_config"]["num_hidden_layers"] == 8
    config["text_config"]["num_hidden_layers"] = 12
    (model / "config.json").write_text(json.dumps(config))
    assert checkpoint.build(str(model), root).path != ck.path
    assert sorted(p.name for p in model.iterdir()) == ["config.json"]


def test_local_tokenizer_files_are_reused_instead_of_generated(root: Path, tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    config = resolved_config("Qwen/Qwen3.5-35B-A3B")
    config["text_config"]["vocab_size"] = 151936
    (model / "config.json").write_text(json.dumps(config))
    with pytest.raises(DoctorError, match="vocabulary"):
        checkpoint.build(str(model), root)
    (model / "tokenizer.json").write_text('{"model": {}}')
    (model / "tokenizer_config.json").write_text('{"eos_token": "<|im_end|>"}')
    ck = checkpoint.build(str(model), root)
    assert ck.tokenizer == f"copied from {model}"
    assert (ck.path / "tokenizer.json").read_text() == '{"model": {}}'
    assert _json(ck.path / "tokenizer_config.json") == {"eos_token": "<|im_end|>"}


def test_a_folder_without_config_is_a_clear_error(root: Path, tmp_path: Path) -> None:
    with pytest.raises(DoctorError, match="config.json"):
        checkpoint.build(str(tmp_path), root)


def test_the_hugging_face_cache_is_never_used(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(DoctorError, match="Hugging Face cache"):
        checkpoint.build("bf16", tmp_path / "hub" / "qd")
    assert not (tmp_path / "hub").exists()


def test_cache_root_prefers_the_tool_variable_then_xdg(tmp_path: Path) -> None:
    assert checkpoint.cache_root({"QWEN_DOCTOR_CACHE": str(tmp_path)}) == tmp_path / "rehearsal"
    assert checkpoint.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "qwen-doctor" / "rehearsal"
