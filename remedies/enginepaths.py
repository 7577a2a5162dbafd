"""An entry's message reached through an engine code path that should not have run for this input: the engine's bug.

Some user-looking errors are raised only because the engine took a path it should have skipped. `PATHS` lists,
from the engines' source, the entry, the engine function whose frame marks that path, and why the path makes it
the engine's bug:

- transformers' "GGUF model with architecture {} is not supported yet" (QD-R-HF-GGUF-ARCH-UNSUPPORTED) raised
  under vLLM's speculator probe: EngineArgs.create_engine_config calls
  vllm/transformers_utils/config.py maybe_override_with_speculators(model=...) before it builds the model config,
  and for a .gguf file the probe sets gguf_file and has transformers parse the GGUF header, without the
  --hf-config-path the user gave for exactly this case (the model config itself honours it); vLLM's later GGUF
  plugin skips the probe for GGUF references (_patch_speculator_probe).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from remedies.advisories import engine_release
from remedies.bugfeatures import MAX_FEATURE_LINES, features
from remedies.crash import Frame
from remedies.enginebug import NamedBug, Verdict


@dataclass(frozen=True)
class EnginePath:
    """An entry, the engine frame that marks the path that should not have reached it, and why."""

    entry_id: str
    engine: str
    function: str
    reason: str
    applied: re.Pattern[str] | None = None  # the user's documented workaround, when the log shows it
    applied_note: str = ""


PATHS = (
    EnginePath(
        "QD-R-HF-GGUF-ARCH-UNSUPPORTED", "vllm", "maybe_override_with_speculators",
        "vLLM's speculator probe (maybe_override_with_speculators) asked transformers to parse the GGUF file before "
        "building the model config, a path that ignores --hf-config-path; the model config itself would have been "
        "read from the given config.",
        re.compile(r"--hf[-_]config[-_]path\b|\bhf_config_path['\"]?\s{0,2}[:=]\s{0,2}['\"]?[\w./-]"),
        "The log already passes --hf-config-path, the documented workaround for a GGUF architecture transformers "
        "cannot read, so the probe is what fails.",
    ),
)
_FRAME = re.compile(r'File "(?P<path>[^"\n]{1,400})", line (?P<line>\d{1,7}), in (?P<func>[\w.<>]{1,120})')


def engine_path(entry_id: str, read_lines: Callable[[], list[str]]) -> Verdict | None:
    """The engine bug first when an entry of `PATHS` was reached through its engine frame, else None (the log is
    read only for those entries)."""
    path = next((p for p in PATHS if p.entry_id == entry_id), None)
    if path is None:
        return None
    head = read_lines()[:MAX_FEATURE_LINES]
    frames = [hit for text in head if path.function in text for hit in [_FRAME.search(text[:4096])]
              if hit and hit.group("func") == path.function]
    if not frames:
        return None
    frame = Frame(frames[-1].group("path"), int(frames[-1].group("line")), path.function)
    applied = path.applied is not None and any(path.applied.search(text[:4096]) for text in head)
    release = engine_release(head, path.engine)
    bug = NamedBug(path.engine, str(frame), release, (), None, frame, reason=path.reason, features=features(head),
                   moot=path.applied_note if applied else "")
    return Verdict(bug, "first")
