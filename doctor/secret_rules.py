"""Provider secret forms as data: gitleaks' maintained default rules, plus ours for forms it lacks.

`doctor/data/gitleaks/gitleaks.toml` is gitleaks' own rule file (MIT, vendored unchanged, see SOURCE.md there):
one rule per provider token (AWS, Slack, GitHub, GitLab, Stripe, OpenAI, Anthropic, Hugging Face, curl -u ...),
each a regex with the secret in `secretGroup` (else the first group, else the match), `keywords` that must
occur (lower-cased) for the rule to be tried, an optional Shannon `entropy` floor for the secret, and
allowlists (regexes on the secret, match or line; stopwords). `doctor/data/secret_rules.toml` adds, in the
same format, forms gitleaks has no rule for (NVIDIA nvapi- keys, Google OAuth tokens and client secrets, an
AWS secret key given as a CLI value, registry login passwords).

Rules are Go RE2 syntax; the few constructs Python's `re` spells differently are translated (a flag group
`(?i)` inside a pattern becomes `(?i:...)` up to the end of its group, `\\z` becomes `\\Z`). gitleaks' catch-all
`generic-api-key` and `private-key` are left out (see LEFT_OUT), and so are rules scoped to file paths.
Every rule is only tried on text holding one of its keywords, found with one combined search.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

RULE_FILES = (("doctor.data.gitleaks", "gitleaks.toml"), ("doctor.data", "secret_rules.toml"))
# generic-api-key: name = value forms are judged by doctor.redact's own name rules. private-key, curl-auth-user,
# curl-auth-header: their unbounded `.*` / lazy bodies backtrack quadratically under Python's `re` (RE2 runs
# them linearly); doctor.redact's PEM and Authorization passes and our curl-user-password rule (bounded) find
# the same secrets in linear time (tests/test_redact_speed.py).
LEFT_OUT = frozenset({"generic-api-key", "private-key", "curl-auth-user", "curl-auth-header"})
_FLAG_GROUP = re.compile(r"\(\?[a-zA-Z]+\)")
_POSIX_CLASS = re.compile(r"\[:([a-z]+):\]")
_POSIX = {"alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "upper": "A-Z", "lower": "a-z",
          "xdigit": "0-9A-Fa-f", "space": "\\s", "word": "\\w", "punct": "!-/:-@\\[-`{-~", "blank": " \\t"}


@dataclass
class Rule:
    """One secret form: where its secret is in a match, and what lets a match go (compiled on first use)."""

    id: str
    regex: str
    group: int
    keywords: tuple[str, ...]
    entropy: float
    allow: tuple[tuple[str, str], ...]
    stopwords: tuple[str, ...]
    _pattern: re.Pattern[str] | None = None
    _allow: tuple[tuple[str, re.Pattern[str]], ...] = ()

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._allow = tuple((target, re.compile(to_python(rx))) for target, rx in self.allow)
            self._pattern = re.compile(to_python(self.regex))
        return self._pattern

    def secrets(self, text: str) -> Iterator[tuple[int, int]]:
        """(start, end) of each secret this rule finds in `text`."""
        for m in self.pattern.finditer(text):
            group = self.group if self.group <= (self.pattern.groups or 0) else 0
            if group == 0 and self.pattern.groups and m.group(1) is not None:
                group = 1
            start, end = m.span(group)
            if start < 0 or end <= start:
                continue
            secret = text[start:end]
            if self.entropy and shannon(secret) < self.entropy:
                continue
            if self._allowed(secret, m.group(), _line_of(text, start)):
                continue
            yield start, end

    def _allowed(self, secret: str, match: str, line: str) -> bool:
        lowered = secret.lower()
        if any(word in lowered for word in self.stopwords):
            return True
        targets = {"secret": secret, "match": match, "line": line}
        return any(rx.search(targets.get(target, secret)) for target, rx in self._allow)


def _line_of(text: str, i: int) -> str:
    start = text.rfind("\n", 0, i) + 1
    end = text.find("\n", i)
    return text[start:end if end >= 0 else len(text)]


def shannon(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


def to_python(regex: str) -> str:
    """An RE2 pattern in Python's `re` dialect: inline flag groups scoped, `\\z` as `\\Z`."""
    out: list[str] = []
    closers: list[int] = [0]  # per open group: how many scoped flag groups to close with it
    i, in_class = 0, False
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            pair = regex[i:i + 2]
            out.append("\\Z" if pair == "\\z" else pair)
            i += 2
            continue
        if in_class:
            posix = _POSIX_CLASS.match(regex, i)
            if posix is not None:
                out.append(_POSIX[posix.group(1)])
                i = posix.end()
                continue
            in_class = ch != "]"
            doubled = ch in "[-&~|" and (ch == "[" or regex[i + 1:i + 2] == ch)
            out.append("\\" + ch if doubled else ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            if regex[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if regex[i + 1:i + 2] == "]":
                out.append("]")
                i += 1
            i += 1
            continue
        flag = _FLAG_GROUP.match(regex, i)
        if flag is not None and i > 0:
            out.append(flag.group()[:-1] + ":")
            closers[-1] += 1
            i = flag.end()
            continue
        if ch == "(":
            closers.append(0)
        elif ch == ")" and len(closers) > 1:
            out.append(")" * closers.pop())
        out.append(ch)
        i += 1
    out.append(")" * closers[0])
    return "".join(out)


def _rule(entry: dict[str, Any]) -> Rule | None:
    regex = entry.get("regex")
    if not regex or entry.get("id") in LEFT_OUT or entry.get("path"):
        return None  # a rule scoped to file paths (Terraform files, say) has no path to match in our texts
    allow: list[tuple[str, str]] = []
    stopwords: list[str] = []
    for allowlist in entry.get("allowlists") or ():
        if allowlist.get("paths") and not allowlist.get("regexes") and not allowlist.get("stopwords"):
            continue
        target = allowlist.get("regexTarget") or "secret"
        allow += [(target, rx) for rx in allowlist.get("regexes") or ()]
        stopwords += [w.lower() for w in allowlist.get("stopwords") or ()]
    return Rule(id=entry["id"], regex=regex, group=int(entry.get("secretGroup") or 0),
                keywords=tuple(k.lower() for k in entry.get("keywords") or ()), entropy=float(entry.get("entropy") or 0),
                allow=tuple(allow), stopwords=tuple(stopwords))


@lru_cache(maxsize=1)
def rules() -> tuple[Rule, ...]:
    """Every rule, gitleaks' first."""
    out: list[Rule] = []
    for package, name in RULE_FILES:
        data = tomllib.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
        out += [r for r in map(_rule, data.get("rules") or ()) if r is not None]
    return tuple(out)


@lru_cache(maxsize=1)
def _index() -> tuple[re.Pattern[str], dict[str, tuple[Rule, ...]], tuple[Rule, ...]]:
    """One search for every keyword; keyword -> the rules it (or a longer keyword containing it) enables;
    the rules without keywords (always tried)."""
    by_keyword: dict[str, list[Rule]] = {}
    always: list[Rule] = []
    for rule in rules():
        if not rule.keywords:
            always.append(rule)
        for keyword in rule.keywords:
            by_keyword.setdefault(keyword, []).append(rule)
    words = sorted(by_keyword, key=len, reverse=True)
    enabled = {w: tuple({r.id: r for k in words if k in w for r in by_keyword[k]}.values()) for w in words}
    return re.compile(_trie(words)), enabled, tuple(always)


def _trie(words: list[str]) -> str:
    """One regex for all `words` as a character trie, longest match first: at each place the engine follows a
    single path instead of trying every word."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return "(?:" + body + ")?"
        return body

    return pattern(root)


def _candidates(lowered: str) -> list[Rule]:
    """The rules whose keywords occur in the lower-cased text (one search with the keyword trie)."""
    search, enabled, always = _index()
    hits = set(search.findall(lowered))
    seen: dict[str, Rule] = {r.id: r for r in always}
    for keyword in hits:
        for rule in enabled[keyword]:
            seen.setdefault(rule.id, rule)
    return list(seen.values())


def secret_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every provider secret any rule finds in `text`, sorted, overlaps merged."""
    spans = [span for rule in _candidates(text.lower()) for span in rule.secrets(text)]
    return merge(spans)


def merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with overlapping or touching ones joined."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
