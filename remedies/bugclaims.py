"""A report's own words that name an engine bug: a regression between releases, an upstream fix, a hang.

Engine bugs are often reported with no exception of the engine's, or with one no catalogue entry ties to a
setting: what makes them bugs is what the reporter says around it. Read from the page's title and its prose
(lines that are neither log records nor inside a code fence), and only where the page names an engine:

- a regression: "works with A, fails with B" (two releases, model runners, engines or backends), "worked in A",
  "after upgrading to B", "since B", "regression", "downgrading to A fixes it": the releases it names, and the one
  that worked, which is the workaround (an older release or runner);
- an upstream fix or cause: a pull request of the engine's repository, "fixed / introduced by #N";
- a hang: the engine's own record that a process stopped answering (`remedies.hangphase.hang_sign`), or
  "hangs / deadlocks / freezes / gets stuck / never becomes ready" stated as what happens (not a question how to
  avoid one, nor a condition in a tutorial's "if it hangs"), with the phase the log stopped in
  (`remedies.hangphase`) and the knobs read there;
- a workaround the text names: an engine, NCCL or library environment variable set in the running text
  (VLLM_USE_V2_MODEL_RUNNER=0, NCCL_P2P_DISABLE=1), or a flag that drops the feature.

`claim_of(lines)` returns the claim, `claim_crashes` the crash a prose-only report is read as when nothing else in
it named a failure (explain's last reader); `remedies.claimedbug` makes the engine bug of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import BinaryIO, Iterator

from packaging.version import Version

from remedies.bugfeatures import MAX_FEATURE_LINES
from remedies.crash import Crash, component_of
from remedies.enginebug import ENGINE_WORD, engine_in
from remedies.hangphase import hang_sign
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise
from remedies.templates import load_templates
from remedies.titleclaim import ISSUE_FORM, ISSUE_TAG, TITLE

CLAIM_KIND = "claim"  # a crash read from the report's words: no exception to judge the engine's code by
_VERSION = r"v?\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:\.?(?:post|rc|dev)\d{0,4})?"
_RUNNER = r"(?:V[012]|v[012]) (?:model )?runner|model runner v?[12]|MRV2|V[01] engine"
_THING = (rf"(?:(?:vllm|sglang|vLLM|SGLang|nightly|main|release)\s{{0,2}}(?:==\s{{0,2}})?{_VERSION}|{_VERSION}|{_RUNNER}"
          r"|vLLM|SGLang|vllm|sglang|TensorRT-LLM|transformers|FlashInfer|FLASH_ATTN|Triton|nightly)")
_BROKEN = (r"(?:fails?|failing|failed|breaks?|broke|broken|crash(?:es|ed)?|hangs?|hung|errors?(?: out)?|does(?:n't| not) work"
           r"|stopped working|no longer works?|not working|regress(?:es|ed)?)")
REGRESSION = re.compile(
    rf"(?i)\bwork(?:s|ed|ing)?(?: (?:fine|well|ok|okay|correctly|perfectly|normally|as expected))?"
    rf" (?:with|on|in|under|using|for) (?P<works>{_THING})\b.{{0,160}}?\b{_BROKEN}\b"
    rf"(?: (?:with|on|in|under|using|after|since|from) (?P<fails1>{_THING})\b)?"
    rf"|\b{_BROKEN} (?:with|on|in|under|using|after|since) (?P<fails>{_THING})\b.{{0,160}}?"
    rf"\bwork(?:s|ed|ing)?(?: (?:fine|well|ok|okay|correctly|perfectly|normally))? (?:with|on|in|under|using) (?P<works2>{_THING})\b"
    rf"|\b(?:after|since) (?:an? )?(?:upgrad(?:e|ed|ing)|updat(?:e|ed|ing)|bump(?:ed|ing)?|switch(?:ed|ing)?|mov(?:e|ed|ing))"
    rf"(?: (?:vllm|sglang|vLLM|SGLang))? (?:to|from \S{{1,40}} to) (?P<upgraded>{_THING})"
    rf"|\b(?:regression|regressed|broke|broken|introduced) (?:in|since|with|from|after|by) (?P<since>{_THING})"
    rf"|\b(?:downgrad(?:e|ed|ing)|roll(?:ed|ing)? back|revert(?:ed|ing)?|pinn(?:ed|ing)|going back) to (?P<back>{_THING})"
    rf"|\bworked (?:fine |well |ok )?(?:in|on|with|before) (?P<before>{_THING})\b"
    rf"|\b(?:in|with|on|using|under) (?P<fails3>{_THING})\W{{0,4}}(?:but |while |whereas |though )?(?:it )?"
    rf"works? (?:fine |well |correctly )?(?:in|with|on|using|under) (?P<works3>{_THING})"
    r"|\b(?:after|since|post-?) ?(?:an? |the |my |our )?(?:(?:vllm|sglang|vLLM|SGLang|ray|Ray|engine|image|version) )?"
    r"(?:upgrad(?:e|ed|ing)|updat(?:e|ed|ing))\b"
    r"|\b(?P<word>regressions?)\b")
UPSTREAM = re.compile(r"(?i)\b(?:fix(?:ed|es)?|introduced|caused|broken|resolved|regress(?:ed|ion)) (?:by|in|from|with) "
                      r"(?:PR |pull request |the )?(?:https://github\.com/(?:vllm-project/vllm|sgl-project/sglang)/pull/"
                      r"|#)(?P<pr>\d{2,6})")
# an engine's pull request linked on an issue report's page, or in a sentence that calls it a fix or names a failure
PR_LINK = re.compile(r"github\.com/(?:vllm-project/vllm|sgl-project/sglang)/pull/\d{2,6}")
PR_WORDS = re.compile(r"(?i)\b(?:fix\w*|bug\w*|regress\w*|broke\w*|crash\w*|fail\w*|error\w*|hang\w*|issue|patch\w*"
                      r"|workaround|upstream|revert\w*)\b")
HANG = re.compile(
    r"(?i)\b(?:hangs|hung|hanging|hang (?:at|on|in|after|during|forever|when|while)|deadlock(?:s|ed)?|freez(?:es|ing)"
    r"|frozen|(?:gets?|got|is|was|stays?|remains?|becomes?) stuck|stuck (?:at|on|in|after|during|forever|while|when)"
    r"|never (?:starts?|finishes|completes|returns|responds|becomes? (?:ready|healthy)|gets? past|proceeds)"
    r"|stops? responding|unresponsive|(?:connection|transfer)s? (?:silently )?(?:dies|died|drops?|dropped)"
    r"|fail(?:s|ed|ing)? (?:its |the )?health[- ]?checks?|health[- ]?checks? (?:time[sd]? ?out|fail(?:s|ed|ing)?)"
    r"|never recovers?|(?:does(?:n't| not)|did(?:n't| not)|cannot|can't) (?:self[- ]heal|recover|reconnect)|no self[- ]heal\w*)"
    r"|卡住|卡死|死锁|无响应|挂起")
# An engine's internal invariant named in an issue's title: an assertion, an index, a weight's or an expert's key the
# model's weight loader looked up (vllm/model_executor/models/*.py load_weights: `param = params_dict[name]`; SGLang
# python/sglang/srt/models/*.py the same), a local read before it was set.
TITLE_INTERNAL = re.compile(r"\b(?:AssertionError|assert(?:ion)?(?: fail(?:s|ed|ure)?| error)?\b|IndexError|UnboundLocalError"
                            r"|KeyError:?\s{0,2}['\"`]?[\w.]{0,120}(?:weight|experts?|layers\.\d|_scale|qweight|qzeros|scales)"
                            r"[\w.]{0,120})")
# a tutorial's condition, a question how to avoid one, a setting's description: not a report that it happens
NOT_REPORTED = re.compile(r"(?i)\b(?:if|in case|whether|how (?:to|do|can|should)|avoid|prevent|to not|without|might"
                          r"|may|could|can|would|should)\b[^.]{0,80}$")
WORKAROUND = re.compile(r"\b(?P<var>(?:VLLM|SGLANG|SGL|NCCL|TORCH|CUDA|NVSHMEM|RAY|UCX|NIXL|PYTORCH)_[A-Z0-9_]{2,60})"
                        r"=(?P<value>[\w:-]{1,40}(?:\.\w{1,20}){0,3})"
                        r"|(?P<flag>--(?:disable-custom-all-reduce|enforce-eager|disable-cuda-graph|no-enable-prefix-caching"
                        r"|disable-radix-cache|disable-overlap-schedule|disable-piecewise-cuda-graph)\b)")
# a workaround the text says did not help
NO_HELP = re.compile(r"(?i)\b(?:does(?:n't| not)|did(?:n't| not)|won't|doesn't|no longer) (?:help|fix|solve|work|change)"
                     r"|\bno (?:effect|difference|luck)\b|\bstill (?:hangs?|fails?|crash)")
_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)")
# a record of a log format the normaliser does not take apart: a leading date / ISO timestamp, or a level word in
# its first token (Rust's tracing "2025-11-02T10:00:00Z  WARN target: ...", glog's "W1102 ...")
_RECORD_LIKE = re.compile(r"^\s{0,4}(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|[IWEF]\d{4} \d{2}:\d{2}"
                          r"|\S{0,60}\b(?:TRACE|DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL)\b)")
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?[A-Z][A-Z0-9_]{2,60}=\S*\s*$|^\s*[\w .-]{1,60}:\s")  # a dump's key=value
MAX_CLAIM = 300
# The workaround each model-runner claim implies: vLLM reads VLLM_USE_V2_MODEL_RUNNER with maybe_convert_bool, and
# unset picks the V2 runner where it supports the configuration (vllm/config/vllm.py VllmConfig.use_v2_model_runner,
# 0.32.0); 0 keeps the V1 runner. The releases that pick V2 by default are those whose mined templates carry its
# fallback warning (V2_DEFAULT); those that read the variable at all, its opt-in refusal or that warning (V2_READ).
V2_RUNNER = re.compile(r"(?i)\b(?:V2 (?:model )?runner|new(?:er)? model runner|model runner v?2|MRV2"
                       r"|VLLM_USE_V2_MODEL_RUNNER)\b")
V2_WORKAROUND = "VLLM_USE_V2_MODEL_RUNNER=0"
V2_DEFAULT = "Model Runner V2 does not yet support {}; using the V1 model runner instead."
V2_READ = (V2_DEFAULT, "VLLM_USE_V2_MODEL_RUNNER does not yet support: {}")


@lru_cache(maxsize=1)
def v2_runner_releases() -> tuple[str, str]:
    """The first vLLM release (of the mined ones) that reads VLLM_USE_V2_MODEL_RUNNER, and the first that picks
    the V2 runner by default; '' where no mined template says."""
    def first(texts: tuple[str, ...]) -> str:
        found = [Version(r) for t in load_templates().templates if t.package == "vllm" and t.text in texts
                 for r in t.releases]
        return str(min(found)) if found else ""
    return first(V2_READ), first((V2_DEFAULT,))


def v2_workaround() -> str:
    """The V1-runner workaround with the releases it applies to (`v2_runner_releases`)."""
    read, default = v2_runner_releases()
    where = (f" (vLLM reads it from {read}; from {default} the V2 runner is the default wherever it supports the "
             "configuration, and 0 keeps the V1 runner)") if read and default else ""
    return V2_WORKAROUND + where


@dataclass(frozen=True)
class Claim:
    """What a report says makes it a bug: its kind, the sentence, the release that worked, the workarounds."""

    kind: str  # "regression", "upstream", "hang" or "internal"
    said: str
    line: int  # 0-based
    working: str | None = None
    failing: str | None = None
    workarounds: tuple[str, ...] = ()


def _prose(lines: list[str]) -> Iterator[tuple[int, str, bool]]:
    """The page's prose lines (0-based number, text, whether it is a title): outside code fences, not log
    records, not an environment dump's key = value."""
    fenced = False
    for number, raw in enumerate(lines[:MAX_FEATURE_LINES]):
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = normalise(raw[:MAX_LINE])
        if line.record or line.level is not None or _RECORD_LIKE.match(raw[:MAX_LINE]):
            continue
        title = bool(TITLE.match(raw[:MAX_LINE]))
        if not title and _ENV_LINE.match(line.text):
            continue
        yield number, line.text.strip(), title


COMPONENT = re.compile(r"(?i)\b(?:ray serve|ray|nccl|nvshmem|deepep|nixl|mooncake)\b")


TRACKING = re.compile(r"(?i)\[(?:tracking(?: issue)?|tracker|rfc|regression)\]")


def _engine_named(lines: list[str]) -> bool:
    """Whether the page names an engine or a component whose bugs these are, or holds an engine's own records."""
    head = "\n".join(line[:MAX_LINE] for line in lines[:MAX_FEATURE_LINES])
    return bool(ENGINE_WORD.search(head) or COMPONENT.search(head) or engine_in(None, lines[:MAX_FEATURE_LINES]))


def _report(lines: list[str]) -> bool:
    """Whether the page is an issue report: an issue's title tag or its form's headings (else a claim counts only
    with the workaround the text names beside it)."""
    tagged = any(ISSUE_TAG.search(found.group("tags")) or TRACKING.search(found.group("tags"))
                 for found in map(TITLE.match, lines[:40]) if found)
    return tagged or bool(ISSUE_FORM.search("\n".join(line[:MAX_LINE] for line in lines[:MAX_FEATURE_LINES])))


def _thing(value: str | None) -> str | None:
    return value.strip() if value else None


def claim_of(lines: list[str]) -> Claim | None:
    """The engine-bug claim a bug report's title or prose makes (see the module doc), or None."""
    if not lines or not _engine_named(lines):
        return None
    found: Claim | None = None
    workarounds: list[str] = []
    prose: list[str] = []
    report = _report(lines)
    for number, text, title in _prose(lines):
        prose.append(text)
        for hit in WORKAROUND.finditer(text):
            named = hit.group("flag") or f"{hit.group('var')}={hit.group('value')}"
            if named not in workarounds and not NO_HELP.search(text[hit.end():hit.end() + 80]):
                workarounds.append(named)
        if found is not None and found.kind not in ("hang", "internal"):
            continue
        regression = REGRESSION.search(text)
        if regression is not None and not text.rstrip().endswith("?"):
            groups = regression.groupdict()
            working = _thing(groups["works"] or groups["works2"] or groups["works3"] or groups["back"] or groups["before"])
            failing = _thing(groups["fails"] or groups["fails1"] or groups["fails3"] or groups["upgraded"]
                             or groups["since"])
            found = Claim("regression", text[:MAX_CLAIM], number, working, failing)
            continue
        upstream = UPSTREAM.search(text) or (PR_LINK.search(text) if report or PR_WORDS.search(PR_LINK.sub("", text))
                                             else None)
        if upstream is not None and found is None:
            found = Claim("upstream", text[:MAX_CLAIM], number)
            continue
        internal = TITLE_INTERNAL.search(text) if title else None
        if internal is not None and found is None:
            found = Claim("internal", text[:MAX_CLAIM], number)
            continue
        hang = HANG.search(text)
        if hang is not None and found is None and (title or not text.rstrip().endswith("?")) \
                and not NOT_REPORTED.search(text[:hang.start()]):
            found = Claim("hang", text[:MAX_CLAIM], number)
    sign = hang_sign(lines[:MAX_FEATURE_LINES]) if found is None else None
    if sign is not None:
        found = Claim("hang", sign[1][:MAX_CLAIM], sign[0])
    elif found is None or not (report or workarounds or ENGINE_WORD.search(found.said)
                               or COMPONENT.search(found.said)):
        return None
    if any(V2_RUNNER.search(text) for text in prose) and not any(V2_WORKAROUND in w for w in workarounds):
        workarounds.append(v2_workaround())
    return Claim(found.kind, found.said, found.line, found.working, found.failing, tuple(workarounds))


def claim_crashes(stream: BinaryIO) -> Iterator[Match]:
    """A bug report whose words claim an engine bug (see the module doc) as a crash, in a pasted excerpt (at most
    WRAP_SCAN_BYTES) in which nothing else named a failure."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    lines = data.decode("utf-8", errors="replace").split("\n")
    claim = claim_of(lines)
    if claim is None:
        return
    said = claim.said
    yield Match(UNKNOWN, claim.line + 1, lines[claim.line].strip()[:MAX_CLAIM],
                tuple(x.rstrip() for x in lines[max(0, claim.line - 2):claim.line]),
                tuple(x.rstrip() for x in lines[claim.line + 1:claim.line + 3]),
                crash=Crash(claim.line + 1, said, said, None,
                            engine_in(None, lines) or component_of((), "\n".join(lines[:200])), CLAIM_KIND))

