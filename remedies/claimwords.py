"""Name the catalogue entry a reporter's own words point at: an issue title that paraphrases a failure.

A title such as "Chat template error with a system message in the middle of the conversation" or "Embeddings API
fails with 400: model does not support embeddings" names no message a template or an entry's samples hold, but its
words are the entries' own: the exception classes their samples raise and the key terms of their titles and
literals (the message's fixed words). `claimed_entry` weighs each shared term by how few entries hold it (inverse
document frequency over the catalogue) and names the entry with the highest total, only when at least MIN_SHARED
terms are shared, one of them held by at most MAX_RARE entries, the total reaches MIN_SCORE and leads every other
entry's by MARGIN: a title that could be several failures names none. A claim that names an exception class names
only an entry whose samples raise it; a claim of a stall (hang, deadlock) names none. Wrapper entries (a
consequence, "see the cause above") and operators' stop markers are never claimed. explain asks it for a title read
as the report's crash (`remedies.titleclaim`) and for a crash that neither an entry nor a mined template places.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from remedies.loader import load_catalogue
from remedies.model import WRAPPER_RANK

MIN_SHARED = 2
MAX_RARE = 3
MIN_SCORE = 7.0
MARGIN = 2.0
# a stall is no message an entry holds: hangs are judged as engine bugs (`remedies.bugsigns`), not claimed here
_STALL = re.compile(r"(?i)\b(?:hangs?|hung|hanging|deadlocks?|stuck|freez(?:es|e|ing)|froze)\b|卡住|卡死")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,40}|\b(?:TP|PP|DP|EP|PD|KV)\b")
_EXCEPTION = re.compile(r"\b[A-Z]\w{1,60}(?:Error|Exception)\b")
# words every report and most entries use: engines, models, failure verbs, glue
STOP = frozenset("""
the and for with when while from into onto after before during not but are was were has have had does did this
that these those its his her their our your you can cannot could should would will may might also any all some
only one two than then there here what which who whom why how use used uses using via per out off too very just
error errors fail fails failed failing failure failures crash crashes crashed issue bug bugs problem question
help please get gets got getting run runs running start starts started starting launch launching work works
working worked broken wrong unable able raise raised raises exception exceptions occurs occurred happen happens
vllm sglang qwen qwen3 qwen35 qwen36 qwen2 model models server serving serve served engine backend latest version
new old same other another instead still again even like about more most
""".split())


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word


def terms(text: str) -> frozenset[str]:
    """The key terms of a text: exception class names whole, other words lower-cased and singular, without
    STOP words."""
    found = {m.group(0).lower() for m in _EXCEPTION.finditer(text)}
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word not in STOP and not word.isdigit():
            found.add(_stem(word))
    return frozenset(found - STOP)


@dataclass(frozen=True)
class WordIndex:
    """Each claimable entry's key terms and the exception classes its samples raise; each term's weight (rarer
    across entries, heavier) and how many entries hold it."""

    entries: dict[str, frozenset[str]]
    weights: dict[str, float]
    holders: dict[str, int]
    raised: dict[str, frozenset[str]]


@lru_cache(maxsize=1)
def word_index() -> WordIndex:
    """The catalogue's words: an entry's title, literals and the exception classes its samples raise."""
    entries: dict[str, frozenset[str]] = {}
    raised: dict[str, frozenset[str]] = {}
    for remedy in load_catalogue():
        if remedy.stop or remedy.wrapper or remedy.rank >= WRAPPER_RANK:
            continue
        raised[remedy.id] = frozenset(m.group(0).lower() for s in remedy.samples for m in _EXCEPTION.finditer(s))
        entries[remedy.id] = terms(" ".join((remedy.title, remedy.literal, *remedy.also))) | raised[remedy.id]
    holders: dict[str, int] = {}
    for held in entries.values():
        for term in held:
            holders[term] = holders.get(term, 0) + 1
    weights = {term: math.log(len(entries) / count) for term, count in holders.items()}
    return WordIndex(entries, weights, holders, raised)


def claimed_entry(claim: str) -> str | None:
    """The id of the one entry whose words a claim shares enough of (see the module doc), or None."""
    if _STALL.search(claim):
        return None
    index = word_index()
    said = terms(claim)
    classes = {m.group(0).lower() for m in _EXCEPTION.finditer(claim)}
    scored: list[tuple[float, str]] = []
    for remedy_id, held in index.entries.items():
        if classes and not classes & index.raised[remedy_id]:
            continue
        shared = said & held
        if len(shared) < MIN_SHARED or min(index.holders[t] for t in shared) > MAX_RARE:
            continue
        scored.append((sum(index.weights[t] for t in shared), remedy_id))
    scored.sort(reverse=True)
    if not scored or scored[0][0] < MIN_SCORE or (len(scored) > 1 and scored[1][0] > scored[0][0] - MARGIN):
        return None
    return scored[0][1]
