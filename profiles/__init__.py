"""Known-good deployment profiles.

Public API (used by `deploy`, `plan` and `check`):

    load_profile("vllm-stable") or load_profile("path/to/p.yaml") -> Profile
    list_profiles() -> list[Profile]                       # the shipped ones, sorted by name
    Profile.render({"port": 8001, "model_dir": "/m"}) -> RenderedCommand(argv, env)

Every error (unknown name, malformed YAML, bad field) is a ProfileError whose message names the file and field.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from profiles.model import Hardware, Profile, ProfileError, RenderedCommand, load_file

PROFILE_DIR = Path(__file__).resolve().parent

__all__ = ["Hardware", "Profile", "ProfileError", "RenderedCommand", "PROFILE_DIR", "list_profiles", "load_profile"]

def profile_names() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))

def list_profiles() -> list[Profile]:
    """Load and validate every shipped profile."""
    return [load_profile(name) for name in profile_names()]

def load_profile(name_or_path: str | Path) -> Profile:
    """Load a shipped profile by name, or any profile file by path."""
    import os

    from profiles.values import NAME, show

    text = str(name_or_path)
    if text.endswith((".yaml", ".yml")) or "/" in text or os.path.lexists(text):
        if not os.path.lexists(text):
            raise ProfileError(f"{show(text)}: no such profile file")
        return load_file(Path(text))
    path = PROFILE_DIR / f"{text}.yaml"
    if not NAME.match(text) or not path.is_file():
        hint = difflib.get_close_matches(text[:64], profile_names(), n=1)
        more = f"; did you mean {hint[0]!r}?" if hint else f"; known: {', '.join(profile_names())}"
        raise ProfileError(f"unknown profile {show(text)}{more}")
    profile = load_file(path)
    if profile.name != text:
        raise ProfileError(f"{path}: field 'name': {profile.name!r} does not match the file name {text!r}")
    return profile
