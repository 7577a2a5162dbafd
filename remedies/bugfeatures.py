"""What a bug report names beside its exception: the features and flags in play, the mined releases that raise it.

An engine bug is told from another by the combination it needs (speculative decoding with one attention backend,
sleep mode on a hybrid model, a tool parser on a model family, a KV-cache dtype, the CUDA release a kernel port
builds with). `features(lines)` reads them from the log and the prose around it; `mined_span(located)` says which
mined releases raise the located message and the nearest mined release without it (`remedies.templates`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from packaging.version import InvalidVersion, Version

from remedies.source import Located
from remedies.templates import load_templates

# Features a bug report names beside its exception (the flags are vLLM's arg_utils.EngineArgs / SGLang's
# server_args.ServerArgs spellings); a value is kept where the flag takes one.
FEATURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("speculative decoding", re.compile(
        r"(?i)--speculative[-_](?:algorithm|algo|model|method)[= ]['\"]?(?P<v>[^\s'\"{]{1,80})|--speculative[-_]config"
        r"|\"method\":\s?\"(?P<m>[\w-]{1,30})\"|\b(?P<w>MTP|EAGLE3?|DFlash|ngram|speculative decoding|spec[- ]decode)\b")),
    ("attention backend", re.compile(r"(?i)--(?:prefill-|decode-)?attention[-_]backend[= ](?P<v>[\w-]{1,40})"
                                     r"|VLLM_ATTENTION_BACKEND=(?P<e>\w{1,40})")),
    ("sleep mode", re.compile(r"(?i)--enable[-_]sleep[-_]mode|\b(?:wake_up|sleep mode)\b")),
    ("tool parser", re.compile(r"--tool[-_]call[-_]parser[= ](?P<v>[\w-]{1,40})")),
    ("KV-cache dtype", re.compile(r"--kv[-_]cache[-_]dtype[= ](?P<v>[\w-]{1,40})|\b(?P<w>TurboQuant)\b")),
    ("quantization", re.compile(r"--quantization[= ](?P<v>[\w-]{1,40})")),
    ("hybrid model", re.compile(r"(?i)\b(?P<w>Qwen3\.5|Qwen3-Next|Mamba2?|GatedDeltaNet|Gated DeltaNet|GDN|hybrid)\b")),
    ("CUDA graphs", re.compile(r"(?i)\b(?P<w>CUDA[- ]graph capture|cudagraph_mode|capture_model)\b")),
    ("CUDA", re.compile(r"(?i)\bCUDA(?: toolkit| version)?[ :]{1,3}(?P<v>1[1-3]\.\d)|\bcu(?P<c>1[1-3]\d)\b")),
    ("platform", re.compile(r"\b(?P<w>Windows|WSL2?)\b")),
)
MAX_FEATURE_LINES = 4000


def features(lines: Iterable[str]) -> tuple[str, ...]:
    """The features and flags a log or its prose names (FEATURES), each once, with its value where printed."""
    found: dict[str, str] = {}
    for number, line in enumerate(lines):
        if number >= MAX_FEATURE_LINES:
            break
        for name, pattern in FEATURES:
            if name in found and found[name]:
                continue
            values = [next((v for v in hit.groups() if v), "") for hit in pattern.finditer(line[:4096])]
            if values:
                found[name] = next((v for v in values if v), "")
    return tuple(f"{name} ({value})" if value and value.lower() not in name.lower() else name
                 for name, value in found.items())


@lru_cache(maxsize=4)
def _mined_releases(package: str) -> tuple[Version, ...]:
    releases: set[Version] = set()
    for template in load_templates().templates:
        if template.package == package:
            for release in template.releases:
                try:
                    releases.add(Version(release))
                except InvalidVersion:
                    continue
    return tuple(sorted(releases))


def mined_span(located: Located | None) -> str:
    """Which mined releases print the located message, and the nearest mined release without it."""
    if located is None or not located.hit.template.releases:
        return ""
    template = located.hit.template
    have = sorted({Version(r) for r in template.releases if _valid(r)})
    if not have:
        return ""
    later = [r for r in _mined_releases(template.package) if r > have[-1]]
    earlier = [r for r in _mined_releases(template.package) if r < have[0]]
    text = f"Mined {template.package} releases that raise it: {have[0]}–{have[-1]} ({len(have)})"
    if later:
        text += f"; the nearest mined release without it: {later[0]}"
    elif earlier:
        text += f"; every mined release since {have[0]} has it (the last without it: {earlier[-1]})"
    return text + "."


def _valid(release: str) -> bool:
    try:
        Version(release)
    except InvalidVersion:
        return False
    return True
