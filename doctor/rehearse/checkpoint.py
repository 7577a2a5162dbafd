"""The rehearsal checkpoint folder: a model's exact config.json and everything a server reads besides the
weights (tokenizer, chat template, generation and vision-processor configs), cached under the user's cache
directory by a hash of its contents. The HF cache is never written."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from doctor.errors import DoctorError
from doctor.safeio import CONFIG_MAX_BYTES, read_json
from doctor.rehearse import cachefolder
from doctor.rehearse import tokenizer as tok
from doctor.rehearse.vocab import EOS_ID, PAD_ID, VISION_IDS, VOCAB_SIZE

# Small files of a local checkpoint worth reusing as they are (never weights).
COPIED_FILES = ("generation_config.json", "preprocessor_config.json", "video_preprocessor_config.json",
                "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                "vocab.json", "merges.txt")
MARKER = ".qwen-doctor-rehearsal.json"


@dataclass(frozen=True)
class Checkpoint:
    """A built rehearsal folder and how it came to be."""

    path: Path
    model: str
    config_hash: str
    tokenizer: str  # "generated (tokenizers)", "generated (json)" or "copied from DIR"
    cached: bool
    files: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "model": self.model, "config_hash": self.config_hash,
                "tokenizer": self.tokenizer, "cached": self.cached, "files": list(self.files)}


def cache_root(env: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    """$QWEN_DOCTOR_CACHE, else $XDG_CACHE_HOME/qwen-doctor, else ~/.cache/qwen-doctor; then /rehearsal."""
    from doctor.cachedir import cache_home

    home = cache_home(env)
    return (home if home is not None else Path.home() / ".cache" / "qwen-doctor") / "rehearsal"


def model_config(model: str) -> tuple[str, dict[str, Any], Path | None]:
    """(canonical name, config.json content, source folder) for a registry name/alias or a local folder."""
    from doctor.models.errors import ModelConfigError
    from doctor.models.registry import registry, resolved_config

    spec = registry().get(model.lower())
    if spec is not None:
        return spec.name, resolved_config(spec.name), None
    folder = Path(model).expanduser()
    if os.path.isfile(folder) and folder.name == "config.json":
        folder = folder.parent
    config_file = folder / "config.json"
    if not os.path.isfile(config_file):
        raise DoctorError(f"--rehearse needs a registry model or a folder with config.json; {model!r} is neither")
    try:
        config = read_json(config_file, "model config", CONFIG_MAX_BYTES)
    except ValueError as exc:
        raise DoctorError(f"cannot read {config_file}: {exc}") from None
    if not isinstance(config, dict):
        raise DoctorError(f"{config_file} is not a JSON object")
    try:
        from doctor.models.config_reader import spec_from_config

        spec_from_config(config, name=str(folder))
    except ModelConfigError as exc:
        raise DoctorError(f"{config_file}: {exc}") from None
    return str(folder.resolve()), config, folder


def vocab_size(config: dict[str, Any]) -> int:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    return int(text.get("vocab_size") or config.get("vocab_size") or 0)


def served_config(config: dict[str, Any]) -> dict[str, Any]:
    """config.json as written: the model's config with the eos and vision token ids spelled out."""
    out = copy.deepcopy(config)
    out.setdefault("eos_token_id", EOS_ID)
    out.setdefault("transformers_version", "5.2.0")  # without it transformers 5 warns of a Mistral regex
    if isinstance(out.get("text_config"), dict):
        out["text_config"].setdefault("eos_token_id", EOS_ID)
    if "vision_config" in out:
        for key, value in VISION_IDS.items():
            out.setdefault(key, value)
    quant = out.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "fp8" and quant.get("weight_block_size") \
            and not quant.get("modules_to_not_convert") and not quant.get("ignored_layers"):
        quant["modules_to_not_convert"] = fp8_unconverted(out)
    return out


def fp8_unconverted(config: dict[str, Any]) -> list[str]:
    """The modules a block-FP8 Qwen checkpoint keeps in BF16, by checkpoint name, as Qwen's FP8 releases list
    them in `modules_to_not_convert` (Qwen3-Next-80B-A3B-*-FP8: `linear_attn.in_proj_ba`, `mlp.gate`,
    `mlp.shared_expert_gate` per layer): the GDN `in_proj_a` / `in_proj_b` (linear_num_value_heads = 32 rows,
    not a multiple of the 128 block), the router and shared-expert gates, and every Linear of the vision
    tower (its 4304-wide MLP is not a multiple of 128). SGLang 0.5.16 builds one fused `in_proj_ba` and, with no
    `packed_modules_mapping` in the config, matches that fused name (layers/quantization/utils.py
    is_layer_skipped), so it is listed too. vLLM matches names exactly (vLLM
    quantization/fp8.py reads `modules_to_not_convert` when `ignored_layers` is absent, 0.26.0); without them
    SGLang 0.5.16 stops with "output_partition_size = 32 is not divisible by weight quantization block_n = 128"
    and vLLM 0.26.0 with the vision MLP's (tests/fixtures/h200-rehearsal/)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    layers = int(text.get("num_hidden_layers", 0))
    interval = int(text.get("full_attention_interval", 4) or 4)
    names: list[str] = []
    for i in range(layers):
        prefix = f"model.language_model.layers.{i}"
        if (i + 1) % interval:
            names += [f"{prefix}.linear_attn.in_proj_a", f"{prefix}.linear_attn.in_proj_b",
                      f"{prefix}.linear_attn.in_proj_ba"]
        names += [f"{prefix}.mlp.gate", f"{prefix}.mlp.shared_expert_gate"]
    vision = config.get("vision_config")
    if isinstance(vision, dict):
        names += [f"model.visual.blocks.{i}.{m}" for i in range(int(vision.get("depth", 0)))
                  for m in ("attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2")]
        names += ["model.visual.merger.linear_fc1", "model.visual.merger.linear_fc2"]
    return names


def vision_processor_configs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """preprocessor_config.json and video_preprocessor_config.json for the vision tower, sized from its
    vision_config (Qwen3-VL's processors: transformers models/qwen3_vl, the Qwen3.5 checkpoints' files)."""
    vision = config.get("vision_config")
    if not isinstance(vision, dict):
        return {}
    common = {"patch_size": int(vision.get("patch_size", 16)),
              "temporal_patch_size": int(vision.get("temporal_patch_size", 2)),
              "merge_size": int(vision.get("spatial_merge_size", 2)),
              "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor"}
    image = {**common, "image_processor_type": "Qwen2VLImageProcessorFast",
             "size": {"longest_edge": 16777216, "shortest_edge": 65536}}
    video = {**common, "video_processor_type": "Qwen3VLVideoProcessor", "fps": 2, "min_frames": 4,
             "max_frames": 768, "do_sample_frames": True, "size": {"longest_edge": 25165824, "shortest_edge": 4096}}
    return {"preprocessor_config.json": image, "video_preprocessor_config.json": video}


def chat_template() -> str:
    return resources.files("doctor.rehearse").joinpath("chat_template.j2").read_text(encoding="utf-8")


def tokenizer_config(template: str, vocab: int = VOCAB_SIZE) -> dict[str, Any]:
    """tokenizer_config.json for the generated tokenizer: Qwen's eos/pad, no bos, every added token (some
    transformers tokenizer classes rebuild the added vocabulary from this list), the chat template."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 262144, "add_bos_token": False,
            "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
            "errors": "replace", "clean_up_tokenization_spaces": False, "split_special_tokens": False,
            "image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
            "vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>",
            "added_tokens_decoder": {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "rstrip", "normalized",
                                                                      "single_word", "special")}
                                     for t in tok.added_tokens(vocab)},
            "chat_template": template}


def _hash(config: dict[str, Any], copied: dict[str, bytes]) -> str:
    """The folder's cache key: everything written into it, so a changed rule for config.json (not only a
    changed model config) gets a new folder."""
    written = {"config": served_config(config), "processors": vision_processor_configs(config)}
    h = hashlib.sha256(json.dumps({**written, "recipe": tok.RECIPE}, sort_keys=True).encode())
    for name in sorted(copied):
        h.update(name.encode() + b"\0" + hashlib.sha256(copied[name]).digest())
    h.update(chat_template().encode())
    return h.hexdigest()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name if os.sep in name else name.split("/")[-1]).strip("-")


def plan(model: str, root: Path | None = None) -> tuple[Path, str, dict[str, Any], dict[str, bytes], str]:
    """Where the folder for `model` goes (without building it): (path, hash, config, copied files, name)."""
    name, config, source = model_config(model)
    copied: dict[str, bytes] = {}
    if source is not None:
        for fname in COPIED_FILES:
            f = source / fname
            if f.is_file():
                copied[fname] = f.read_bytes()
    if "tokenizer.json" not in copied and vocab_size(config) != VOCAB_SIZE:
        raise DoctorError(f"the generated rehearsal tokenizer has Qwen3.5's vocabulary ({VOCAB_SIZE:,}); "
                          f"{name} has {vocab_size(config):,}: put the checkpoint's tokenizer files next to config.json")
    digest = _hash(config, copied)
    root = root or cache_root()
    _refuse_hf_cache(root)
    return root / f"{_slug(name)}-{digest[:16]}", digest, config, copied, name


def _refuse_hf_cache(root: Path) -> None:
    from doctor.facts.probes.host import hf_cache_dir

    hf = hf_cache_dir().resolve()
    target = root.expanduser().resolve()
    if target == hf or hf in target.parents:
        raise DoctorError(f"the rehearsal cache {target} lies inside the Hugging Face cache {hf}: "
                          "set QWEN_DOCTOR_CACHE to another folder")


def build(model: str, root: Path | None = None) -> Checkpoint:
    """The rehearsal folder for `model`, built once per content hash and reused after that."""
    path, digest, config, copied, name = plan(model, root)
    reused = cachefolder.reuse(path, _built)
    if reused is not None:
        folder, (how, names) = reused
        return Checkpoint(folder, name, digest, how, True, names)
    path = cachefolder.fresh(path)  # a folder we cannot reuse (see _built): ours is built beside it
    files: dict[str, bytes] = {"config.json": json.dumps(served_config(config), indent=2).encode()}
    files["generation_config.json"] = json.dumps({"eos_token_id": [EOS_ID, PAD_ID], "pad_token_id": PAD_ID},
                                                 indent=2).encode()
    for fname, content in vision_processor_configs(config).items():
        files[fname] = json.dumps(content, indent=2).encode()
    if "tokenizer.json" in copied:
        how = f"copied from {model}"
    else:
        text, builder = tok.tokenizer_json(vocab_size(config))
        files["tokenizer.json"] = text.encode()
        files["tokenizer_config.json"] = json.dumps(tokenizer_config(chat_template(), vocab_size(config)), indent=2).encode()
        files["chat_template.jinja"] = chat_template().encode()
        how = f"generated ({builder})"
        copied = {k: v for k, v in copied.items() if k not in ("tokenizer_config.json", "chat_template.jinja")}
    files.update(copied)
    names = sorted(files)
    files[MARKER] = json.dumps({"model": name, "config_hash": digest, "tokenizer": how, "files": names}).encode()
    cachefolder.write_whole(path, files, MARKER)
    return Checkpoint(path, name, digest, how, False, tuple(names))


def _built(path: Path) -> tuple[str, tuple[str, ...]] | None:
    """(how its tokenizer was made, its files) of a folder built before, or None: not built, its record not one
    we wrote (then the folder is built again beside it); cachefolder.reuse asks it of private folders only."""
    from doctor.safeio import InputError

    marker = path / MARKER
    if not os.path.isfile(marker):
        return None
    try:
        meta = read_json(marker, "rehearsal record", CONFIG_MAX_BYTES)
    except InputError:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("tokenizer"), str) or not isinstance(
            meta.get("files"), list) or not all(isinstance(f, str) for f in meta["files"]):
        return None
    return meta["tokenizer"], tuple(sorted(meta["files"]))
