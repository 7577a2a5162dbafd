"""A Hub lookup a serving wrapper made on its own: the wrapper's model lookup, not the network.

The Hub entries (unreachable, offline cache miss, repository not found) advise on the network and the cache. When
the traceback shows the lookup was made from a serving wrapper's own code that chose a Hub id although the model
was mounted locally, the network is not the problem: the wrapper's choice is. `WRAPPERS` lists, from each
wrapper's source, the frames that mark its lookup and why it went to the Hub:

- KServe's Hugging Face runtime: `get_model_id_or_path` returns `--model_id` whenever it is set ("If --model_id
  is specified then pass model_id to HF API, otherwise load the model from /mnt/models"), and `load_model` hands
  it to `AutoConfig.from_pretrained` and the tokenizer, so an InferenceService with a storageUri (mounted at
  /mnt/models, --model_dir) and a --model_id looks the id up on the Hub (kserve/kserve
  python/huggingfaceserver/huggingfaceserver/__main__.py, v0.13.0 and later).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from remedies.bugfeatures import MAX_FEATURE_LINES, features
from remedies.crash import Frame
from remedies.enginebug import NamedBug, Verdict
from remedies.model import FixStep

HUB_ENTRIES = ("QD-R-HF-HUB-UNREACHABLE", "QD-R-HF-CANNOT-CONNECT", "QD-R-HF-OFFLINE-CACHE-MISS",
               "QD-R-HF-REPO-NOT-FOUND", "QD-R-HF-NOT-A-MODEL-ID")
_FRAME = r'File "(?P<path>[^"\n]{0,400}{package}[/\\][^"\n]{1,200}\.py)", line (?P<line>\d{1,7}), in (?P<func>[\w.<>]{1,120})'
# (name, package directory in the frame's path, why the lookup went to the Hub, what to change)
WRAPPERS = (
    ("KServe huggingfaceserver", "huggingfaceserver",
     "KServe's Hugging Face runtime looks the model up on the Hub by --model_id whenever that argument is set, "
     "even when the model is mounted at --model_dir (/mnt/models from the storageUri): the Hub lookup is the "
     "runtime's choice, not a network fault of the model's own loading.",
     "Drop --model_id from the InferenceService's runtime arguments so the runtime loads the copy mounted at "
     "--model_dir (/mnt/models), or set HF_HUB_OFFLINE=1 in its environment; keep --model_id only for a model "
     "that is not mounted."),
)
_WRAPPER_FRAMES = tuple((name, package, re.compile(_FRAME.replace("{package}", re.escape(package))), why, change)
                        for name, package, why, change in WRAPPERS)


@dataclass(frozen=True)
class WrapperBug(NamedBug):
    """A serving wrapper's bug with the change to its deployment that avoids it, named before the generic steps."""

    change: str = ""

    def steps(self) -> tuple[FixStep, ...]:
        return (FixStep(self.change), *super().steps())


def wrapper_lookup(entry_id: str, read_lines: Callable[[], list[str]]) -> Verdict | None:
    """The serving wrapper's bug behind a Hub entry, named first at the wrapper's deepest frame, when the log's
    traceback passes through a wrapper of `WRAPPERS`; else None (the log is read only for Hub entries)."""
    if entry_id not in HUB_ENTRIES:
        return None
    head = read_lines()[:MAX_FEATURE_LINES]
    for name, package, frame_pattern, why, change in _WRAPPER_FRAMES:
        frames = [hit for text in head if package in text for hit in [frame_pattern.search(text[:4096])] if hit]
        if not frames:
            continue
        deepest = frames[-1]
        frame = Frame(deepest.group("path"), int(deepest.group("line")), deepest.group("func"))
        bug = WrapperBug(name, str(frame), None, (), None, frame, reason=why, features=features(head), change=change)
        return Verdict(bug, "first")
    return None
