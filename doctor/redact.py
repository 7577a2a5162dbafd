"""Redaction of secrets (and, on request, hostnames and IP addresses) in env values, argv, logs and reports.

`redact_document` is the one pass every report goes through before any renderer sees it: it walks every
string of a JSON-like document, replaces values of secret-named keys, values that follow a secret flag in an
argv list, secrets in free text (see `redact_text`), and every other occurrence of a secret value it found that
way. With `hosts=True` it also replaces hostnames and IP addresses by stable pseudonyms (`[HOST-1]`, `[IP-1]`),
keeping loopback and wildcard addresses, which identify nobody (see `doctor.redact_hosts`).

Every pattern here runs in time linear in its input: each one starts at a literal or at the first character
of a run (a look-behind excludes starts inside the run), its quantifiers are bounded or end the pattern, and
values are measured by code, not by backtracking (bench/redact_speed.py, tests/test_redact_speed.py).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Optional, Protocol

from doctor import textviews
from doctor.secret_book import SecretBook, worth_keeping
from doctor.secret_rules import merge, secret_spans

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 6
TRUNCATION_MARK = "…"

# ---- names -----------------------------------------------------------------------------------------------
# On an upper-case snake name: *_TOKEN, *_KEY, *SECRET*, passwords, credentials, auth headers, cookies, signatures;
# a Google service account's private_key_id (the key file's `private_key_id`, which names the key to revoke).
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|APIKEY|ACCESSKEY|SECRETKEY|PRIVATEKEY|PASS|PASSPHRASE|PWD|CREDENTIALS?|AUTH|"
    r"AUTHORIZATION|COOKIE|SIG|SIGNATURE)$|(?:^|_)PRIVATE_?KEY_ID$|SECRET|PASSWORD|PASSWD")
_PASSWORDISH = re.compile(r"SECRET|PASSWORD|PASSWD|PASS$|PASSPHRASE|PWD$|CREDENTIAL|COOKIE|AUTH")
# Roles of tokenizer special tokens (`eos_token: <|im_end|>`): not secrets.
_TOKEN_ROLES = frozenset({"BOS", "EOS", "PAD", "UNK", "MASK", "CLS", "SEP", "IMAGE", "VIDEO", "AUDIO", "VISION",
                          "START", "END", "STOP", "THINK", "SPECIAL", "PREFIX", "SUFFIX", "MIDDLE", "TOOL", "CALL",
                          "NEXT", "FIRST", "LAST", "MAX", "MIN", "NUM", "TOTAL", "PER", "ANSWER", "DEFAULT"})
# Boolean switches whose name ends in a secret word (--allow-credentials): they take no value.
_SWITCH_PREFIXES = ("ALLOW_", "ENABLE_", "DISABLE_", "NO_", "USE_", "SKIP_", "RETURN_", "REQUIRE_")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_FLAG_NAME = re.compile(r"-{1,2}[A-Za-z][\w.-]{0,80}")
_NUMBER = re.compile(r"[+-]?\d{1,40}(?:\.\d{1,40})?")
_ENV_REF = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]{0,80}\}?")
_PLACEHOLDERS = frozenset({"", "none", "null", "nil", "true", "false", "yes", "no", "undefined", "***", "...",
                           "<redacted>", "redacted", REDACTED.lower()})


def _normal(name: str) -> str:
    return _NON_ALNUM.sub("_", _CAMEL.sub(r"\1_\2", name)).strip("_").upper()


def _secret_normal(norm: str) -> bool:
    if not norm or norm == "PWD" or _SECRET_NAME.search(norm) is None:
        return False
    head, _, last = norm.rpartition("_")
    return not (last == "TOKEN" and head.rpartition("_")[2] in _TOKEN_ROLES)


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether an env var or key name says its value is a secret (HF_TOKEN, *_KEY, *SECRET*, apiKey...)."""
    return _secret_normal(_normal(name))


def is_secret_flag(arg: str) -> bool:
    """Whether a command-line flag takes a secret value (--api-key, --api_key, --hf-token, --password...)."""
    if _FLAG_NAME.fullmatch(arg) is None:
        return False
    norm = _normal(arg)
    return not norm.startswith(_SWITCH_PREFIXES) and _secret_normal(norm)


def _kept_value(value: str, norm: str) -> bool:
    """Values that are no secret whatever their name: placeholders, env references, counts, special tokens."""
    if value.lower() in _PLACEHOLDERS or value.startswith("<") or _ENV_REF.fullmatch(value):
        return True
    return _NUMBER.fullmatch(value) is not None and _PASSWORDISH.search(norm) is None


def _row_start(text: str, i: int) -> bool:
    """Whether only blanks precede `i` on its line."""
    line_start = text.rfind("\n", 0, i) + 1
    return not text[line_start:i].strip(" \t")


def _random_looking(value: str) -> bool:
    """A bare `key=` outside a URL is a secret only when its value looks generated (not `key=lambda p: ...`)."""
    return len(value) >= 20 or (len(value) >= 8 and any(c.isdigit() for c in value))


# ---- values: measured by code from where they start --------------------------------------------------------
_DQ = re.compile(r'(?:[^"\\\n]|\\.)*')
_SQ = re.compile(r"(?:[^'\\\n]|\\.)*")
_WORD = re.compile(r"[^\s\"'`]*")
_PLAIN = re.compile(r"[^\s\"'`,;<>(){}\[\]]*")
_QUERY = re.compile(r"[^\s\"'`&#<>]*")
_LINE_REST = re.compile(r"[^\r\n\"'`]*")
_BLANKS = re.compile(r"[ \t]*")
# RFC 7235 section 2.1: credentials are a token68 (base64-like, `=` only as padding at its end) or a list of
# auth-params (`username="u", response="..."`: Digest, AWS4-HMAC-SHA256), which runs to the end of the line.
_AUTH_PARAM = re.compile(r"[\w!#$%&'*+.^`|~-]{1,80}[ \t]{0,8}=[ \t]{0,8}[^=\s]")
_LINE_END = re.compile(r"[^\r\n]*")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "apikey", "key", "aws4-hmac-sha256"})

Hit = Optional[tuple[str, int]]


def _value(text: str, i: int, unquoted: re.Pattern[str]) -> tuple[int, int, str]:
    """(start, end, quote) of the value at `i`: a quoted string (escapes honoured) or an unquoted run."""
    if i < len(text) and text[i] in "\"'":
        q = text[i]
        end = (_DQ if q == '"' else _SQ).match(text, i + 1).end()
        return i + 1, end, q
    return i, unquoted.match(text, i).end(), ""


class Sink(Protocol):
    def add(self, value: str) -> None: ...


class _Scan:
    """One pass of `redact_text`; `found` collects every secret value it replaced (of at least `min_len`)."""

    def __init__(self, found: Sink | None = None, min_len: int = MIN_SECRET_LEN) -> None:
        self.found = found
        self.min_len = min_len

    def hide(self, value: str) -> str:
        if self.found is not None and len(value) >= self.min_len:
            self.found.add(value)
        return REDACTED

    def flag(self, text: str, m: re.Match[str]) -> Hit:
        if not is_secret_flag(m.group(1)):
            return None
        i = m.end() if m.group(2) == "=" else _BLANKS.match(text, m.end()).end()
        if m.group(2) != "=" and (i >= len(text) or text[i] in "-\r\n"):
            return None
        start, end, q = _value(text, i, _WORD)
        value = text[start:end]
        if not value or value == REDACTED or _ENV_REF.fullmatch(value):
            return None
        return text[m.start():start] + self.hide(value), end

    def assignment(self, text: str, m: re.Match[str]) -> Hit:
        norm = _normal(m.group(1))
        if not _secret_normal(norm) or (norm == "KEY" and "=" not in m.group(2)):
            return None
        path_name = m.start() > 0 and text[m.start() - 1] in "/\\" and ":" in m.group(2)
        tab_only = not any(c in m.group(2) for c in ":=")  # `name<TAB>value`: a TSV export, an env listing
        i = _BLANKS.match(text, m.end()).end()
        if norm.endswith("AUTHORIZATION"):
            return self._authorization(text, m.start(), i)
        in_query = m.start() > 0 and text[m.start() - 1] in "?&;"
        run = _LINE_REST if norm.endswith("COOKIE") else _QUERY if in_query else _PLAIN
        start, end, _q = _value(text, i, run)
        value = text[start:end]
        if _kept_value(value.strip(), norm) or (norm == "KEY" and not in_query and not _random_looking(value)):
            return None
        if path_name and not _random_looking(value):
            return None  # a file path's last component (`/etc/passwd: cannot open`); grep's `/x/token:VALUE` is not
        if tab_only and not _row_start(text, m.start()) and not _random_looking(value):
            return None  # after other words, a tab before a word is prose's (`the token\tmoved on`)
        return text[m.start():start] + self.hide(value), end

    def _authorization(self, text: str, begin: int, i: int) -> Hit:
        start, end, q = _value(text, i, _PLAIN)
        value = text[start:end]
        scheme, _, cred = value.partition(" ") if q else (value, "", "")
        if not q and scheme.lower() in _AUTH_SCHEMES:
            gap = _BLANKS.match(text, end).end()
            params = _AUTH_PARAM.match(text, gap)
            cred_end = _LINE_END.match(text, gap).end() if params else _PLAIN.match(text, gap).end()
            cred = text[gap:cred_end]
            if gap > end and cred and cred != REDACTED:
                return text[begin:gap] + self.hide(cred), cred_end
            return None
        if q and scheme.lower() in _AUTH_SCHEMES and cred.strip():
            if cred.strip() == REDACTED:
                return None
            return text[begin:start] + scheme + " " + self.hide(cred.strip()), end
        if _kept_value(value, "AUTHORIZATION"):
            return None
        return text[begin:start] + self.hide(value), end

    def bearer(self, text: str, m: re.Match[str]) -> Hit:
        cred = m.group(2)
        if len(cred) < 16 and not any(c.isdigit() for c in cred):
            return None
        return m.group(1) + self.hide(cred), m.end()

    def url_password(self, text: str, m: re.Match[str]) -> Hit:
        i = m.end()
        authority = _AUTHORITY.match(text, i).group()
        at = authority.rfind("@")
        colon = authority.find(":", 0, at) if at > 0 else -1
        user = authority[:colon if colon >= 0 else max(at, 0)]
        password = authority[colon + 1:at] if colon >= 0 else ""
        if at > 0 and _token_as_user(user, password):
            return "://" + self.hide(user) + authority[len(user):at + 1], i + at + 1
        if colon < 0 or password in (REDACTED, *_USER_PLACEHOLDER_PASSWORDS):
            return None  # nothing, or GitHub's fixed `x-oauth-basic` beside a token user name
        return "://" + authority[:colon + 1] + self.hide(password) + "@", i + at + 1

    def named_value(self, text: str, m: re.Match[str]) -> Hit:
        """The value of a name / value pair whose name is a secret's: a Kubernetes or ECS env entry
        (`- name: HF_TOKEN` then `value: V`), `{"Key": "API_KEY", "Value": V}`, `<add key="ApiKey" value="V"/>`."""
        if not is_secret_name(m.group(1)):
            return None
        start, end, _q = _value(text, m.end(), _PLAIN)
        value = text[start:end]
        if not value or value == REDACTED or _kept_value(value, _normal(m.group(1))):
            return None
        return text[m.start():start] + self.hide(value), end

    def xml_element(self, text: str, m: re.Match[str]) -> Hit:
        """`<password>V</password>` (Maven's settings.xml, NuGet.Config, .NET and Java configs)."""
        if not is_secret_name(m.group(1)):
            return None
        end = text.find("<", m.end(), m.end() + 4096)
        value = text[m.end():end].strip() if end > 0 else ""
        if not value or value == REDACTED or "\n" in value or _kept_value(value, _normal(m.group(1))):
            return None
        return m.group() + self.hide(value), end

    def token(self, text: str, m: re.Match[str]) -> Hit:
        return self.hide(m.group()), m.end()

    def pem(self, text: str, m: re.Match[str]) -> Hit:
        body_end = text.find("-----END", m.end())
        if body_end < 0:
            body_end = len(text)
            tail_end = len(text)
        else:
            close = text.find("-----", body_end + 8)
            tail_end = close + 5 if close >= 0 else len(text)
        if text[m.end():body_end].strip() == REDACTED:
            return None
        return m.group() + REDACTED + text[body_end:tail_end], tail_end


_AUTHORITY = re.compile(r"[^\s/?#\"'`<>\\]*")
# GitHub's token-in-URL forms: `https://TOKEN@github.com/...`, `https://TOKEN:x-oauth-basic@github.com/...`
# (docs.github.com, "Using a personal access token on the command line"; git's credential docs).
_USER_PLACEHOLDER_PASSWORDS = frozenset({"", "x-oauth-basic", "x-oauth-token"})


def _token_as_user(user: str, password: str) -> bool:
    """Whether a URL's user name is itself a token: no real password beside it, and generated-looking (long,
    letters and digits, none of a name's dots or at-signs); `git@`, `user@`, `me.name@` stay."""
    if password.lower() not in _USER_PLACEHOLDER_PASSWORDS or user == REDACTED or len(user) < 20:
        return False
    return (any(c.isdigit() for c in user) and any(c.isalpha() for c in user)
            and all(c.isalnum() or c in "_-" for c in user))
# (pattern, method of _Scan, lower-case needles: the pattern can only match a text holding one of them).
_PASSES: list[tuple[re.Pattern[str], Callable[[_Scan], Callable[[str, re.Match[str]], Hit]], tuple[str, ...]]] = [
    (re.compile(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"), lambda s: s.pem,
     ("private key",)),
    (re.compile(r"://"), lambda s: s.url_password, ("://",)),
    (re.compile(r'"(?i:name|key|parameterkey)"[ \t]{0,8}:[ \t]{0,8}"([A-Za-z_][\w.-]{0,80})"[ \t]{0,8},\s{0,40}'
                r'"(?i:value|parametervalue)"[ \t]{0,8}:[ \t]{0,8}'), lambda s: s.named_value, ("name", "key")),
    (re.compile(r"(?<![\w-])(?i:name|key):[ \t]{1,8}[\"']?([A-Za-z_][\w.-]{0,80})[\"']?[ \t]{0,8}\r?\n"
                r"[ \t]{0,40}(?i:value):[ \t]{0,8}"), lambda s: s.named_value, ("name", "key")),
    (re.compile(r"(?<![\w-])(?i:key|name)[ \t]{0,8}=[ \t]{0,8}\"([A-Za-z_][\w.-]{0,80})\"[ \t]{1,8}"
                r"(?i:value)[ \t]{0,8}=[ \t]{0,8}"), lambda s: s.named_value, ("name", "key")),
    (re.compile(r"<([A-Za-z_][\w.-]{0,80})>"), lambda s: s.xml_element,
     ("token", "key", "secret", "pass", "pwd", "cred", "auth", "cookie", "sig")),
    (re.compile(r"(?<![\w-])(-{1,2}[A-Za-z][\w.-]{0,80})(=|[ \t]{1,8})"), lambda s: s.flag,
     ("token", "key", "secret", "pass", "pwd", "cred", "auth", "cookie", "sig")),
    (re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]{0,80})([\"']?[ \t]{0,8}[:=][ \t]{0,8}|\t[ \t]{0,8}(?=[^\s:=]))"),
     lambda s: s.assignment,
     ("token", "key", "secret", "pass", "pwd", "cred", "auth", "cookie", "sig")),
    (re.compile(r"(?<![\w-])((?i:bearer)[ \t]{1,8})([A-Za-z0-9._~+/=-]{6,})"), lambda s: s.bearer, ("bearer",)),
    (re.compile(r"(?<![A-Za-z0-9_-])(?:hf_[A-Za-z0-9]{16,}|(?:sk|rk|pk)-[A-Za-z0-9_-]{16,}|(?:sk|rk)_(?:live|test)_"
                r"[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|glpat-[A-Za-z0-9_-]{16,}"
                r"|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
                r"|AIza[A-Za-z0-9_-]{30,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"),
     lambda s: s.token, ("hf_", "sk-", "rk-", "pk-", "sk_", "rk_", "gh", "glpat", "xox", "akia", "asia", "abia",
                         "acca", "aiza", "eyj")),
]
# A word cut by a line-length limit (`… hf_AbC …`): its prefix is a secret too when it starts like a token.
_TOKEN_PREFIXES = ("hf_", "sk-", "rk-", "sk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
                   "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "AKIA", "ASIA", "AIza", "eyJ")
_LAST_WORD = re.compile(r"[A-Za-z0-9_.+/=-]*\Z")


def _rewrite(pattern: re.Pattern[str], text: str, handler: Callable[[str, re.Match[str]], Hit]) -> str:
    """Apply `handler` to each match; it returns (replacement, end) for text[match.start():end], or None."""
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() < pos:
            continue
        hit = handler(text, m)
        if hit is None:
            continue
        out.append(text[pos:m.start()])
        out.append(hit[0])
        pos = hit[1]
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _cut_tail(text: str, known: Callable[[str], bool], scan: _Scan) -> str:
    """Redact the last word of a text when it is the start of a secret cut by a length limit: after a
    truncation mark, a word that starts like a token or starts a known secret; at the very end of a text cut
    without a mark (`text[:60]`), a word that starts like a token and looks random (a digit or capital)."""
    core = text.rstrip()
    marked = core.endswith(TRUNCATION_MARK)
    head = core[:-len(TRUNCATION_MARK)].rstrip(" \t") if marked else text
    m = _LAST_WORD.search(head, max(0, len(head) - 256))
    word = m.group() if m else ""
    prefix = next((p for p in _TOKEN_PREFIXES if word.startswith(p)), None)
    if not word or word.endswith(REDACTED):
        return text
    if marked:
        secret = prefix is not None or known(word)
    else:
        rest = word[len(prefix):] if prefix else ""
        secret = len(rest) >= 4 and any(c.isdigit() or c.isupper() for c in rest)
    if not secret:
        return text
    scan.hide(word)
    return head[:m.start()] + REDACTED + text[len(head):]


def _no_secret(word: str) -> bool:
    return False


def _provider_secrets(text: str, scan: _Scan) -> str:
    """Secrets of the provider rule set (`doctor.secret_rules`: gitleaks' rules and ours) replaced."""
    spans = secret_spans(text)
    return _replace_spans(text, spans, scan) if spans else text


def _replace_spans(text: str, spans: list[tuple[int, int]], scan: _Scan) -> str:
    """Each span replaced by the mark (each line of a span that crosses lines, so lines stay lines)."""
    out: list[str] = []
    pos = 0
    for start, end in merge(spans):
        if start < pos:
            start = pos
        if end <= start:
            continue
        out.append(text[pos:start])
        scan.hide(text[start:end])
        out.append("\n".join(REDACTED if part.strip() else part for part in text[start:end].split("\n")))
        pos = end
    out.append(text[pos:])
    return "".join(out)


class _Values:
    """A sink that keeps every value a scan of a view hid."""

    def __init__(self) -> None:
        self.values: set[str] = set()

    def add(self, value: str) -> None:
        self.values.add(value)


def _view_spans(text: str, view: textviews.View, in_place: Callable[[], set[str]]) -> list[tuple[int, int]]:
    """Spans of `text` holding a secret that the view shows: what the provider rules and the name / flag / header
    passes find in the view, at every place the value occurs. A value shorter than MIN_SECRET_LEN that the passes
    find in the text itself (`in_place()`) is left to them, which replace it where it stands: `passwd: a` must not
    take every `a` with it. A value the view read across a line break ends at the break (`_value_end`)."""
    view_text = view[0]
    spans: list[tuple[int, int]] = []
    values = _Values()
    _standard_passes(view_text, _Scan(values, min_len=1), blocks=False)
    for value in values.values:
        if not value.strip() or value == REDACTED or (len(value) < MIN_SECRET_LEN and value in in_place()):
            continue
        glued = not any(c.isspace() for c in value)
        start = view_text.find(value)
        while start >= 0:
            begin, end = textviews.original_spans(view, [(start, start + len(value))])[0]
            spans.append((begin, _value_end(text, begin, end, glued)))
            start = view_text.find(value, start + len(value))
    return spans


_BARE_BREAK = re.compile(r"(?<!\\)\r?\n")
_NEXT_WORD = re.compile(r"[^\s]{0,200}")


def _value_end(text: str, start: int, end: int, glued: bool) -> int:
    """Where a value that a view read across line breaks ends in `text`. A quoted value runs to its closing
    quote; one the view glued (a token cut by a line width) ends at the first bare break whose next line does not
    go on like a token (a digit, or an upper-case letter after the first character); one the view joined with a
    space (a header or cookie running to its line's end) ends at its line's end. So a value at a line end keeps
    the next line's words (`password: 1` then `retry`; `Cookie: a=b` then a log line)."""
    if "\n" not in text[start:end] or (0 < start and end < len(text) and text[start - 1] in "\"'"
                                         and text[end] == text[start - 1]):
        return end
    if not glued:
        first = _BARE_BREAK.search(text, start, end)
        return first.start() if first else end
    for m in _BARE_BREAK.finditer(text, start, end):
        word = _NEXT_WORD.match(text, m.end(), end).group()
        if not (any(c.isdigit() for c in word) or any(c.isupper() for c in word[1:])):
            return m.start()
    return end


def _in_views(text: str, scan: _Scan) -> str:
    """Secrets disguised by Unicode (full-width signs, zero-width characters) or split over lines, found in the
    normalised and joined views of the text and replaced in the original at the mapped places. The passes run on
    the text itself only when a view finds a short value (whether they find it in place decides its fate)."""
    extra = textviews.views(text)
    if not extra:
        return text
    found_in_place: list[set[str]] = []

    def in_place() -> set[str]:
        if not found_in_place:
            values = _Values()
            _standard_passes(text, _Scan(values, min_len=1))
            found_in_place.append(values.values)
        return found_in_place[0]

    spans = [span for view in extra for span in _view_spans(text, view, in_place)]
    return _replace_spans(text, spans, scan) if spans else text


# A YAML block scalar (`password: >` / `key: |-` then indented lines), also after other words on its line (a log
# line that quotes YAML); each line must end in a newline (or the text), so the lines parse one way only.
_BLOCK_SCALAR = re.compile(r"(?m)^([ \t]{0,40})(?:[^\n]{0,400}?[ \t])?([\w.-]{1,80})[ \t]{0,8}:[ \t]{0,8}[>|][+-]?[0-9]?[ \t]{0,8}\n"
                           r"((?:\1[ \t]{1,40}[^\n]*(?:\n|\Z))+)")


def _block_scalars(text: str, scan: _Scan) -> str:
    """The lines of a secret-named key's YAML block scalar, each replaced (a folded password spans lines)."""
    def hide(m: re.Match[str]) -> str:
        if not is_secret_name(m.group(2)):
            return m.group()
        lines = m.group(3).split("\n")
        shown = [line[:len(line) - len(line.lstrip())] + (scan.hide(line.strip()) if line.strip() else "")
                 for line in lines]
        return m.group()[:m.start(3) - m.start()] + "\n".join(shown)

    return _BLOCK_SCALAR.sub(hide, text) if "\n" in text and (">" in text or "|" in text) else text


def _standard_passes(text: str, scan: _Scan, blocks: bool = True) -> str:
    """Every pass on `text`; `blocks` off for a view, whose joined lines are no longer YAML."""
    if blocks:
        text = _block_scalars(text, scan)
    text = _provider_secrets(text, scan)
    lowered = text.lower()
    for pattern, method, needles in _PASSES:
        if any(n in lowered for n in needles):
            text = _rewrite(pattern, text, method(scan))
    return text


def scan_text(text: str, found: Sink | None = None, known: Callable[[str], bool] = _no_secret,
              min_len: int = MIN_SECRET_LEN) -> str:
    """`redact_text`, adding each secret value of at least `min_len` characters it replaced to `found`; a word
    cut by a length limit goes too when `known(word)` says it starts a known secret."""
    scan = _Scan(found, min_len)
    text = _in_views(text, scan)
    return _cut_tail(_standard_passes(text, scan), known, scan)


def redact_text(text: str) -> str:
    """Replace secrets in free text: values of secret flags (`--api-key V`, `--api_key=V`), of secret-named
    assignments, JSON/YAML keys, headers and URL parameters (`X-Api-Key: V`, `aws_secret_access_key = V`,
    `?access_token=V`), Authorization / Cookie headers, URL passwords (`redis://:PW@host`), PEM private keys,
    token-shaped words (hf_, sk-, ghp_, github_pat_, AKIA, JWT...) and a token's prefix cut by a length limit."""
    return scan_text(text)


def redact_lines(lines: list[str], found: Sink | None = None) -> list[str]:
    """Consecutive lines of one excerpt (a log line with its context) redacted as one text, so that a secret
    whose head is on one line and tail on the next (a wrapped token, `password: >` then its folded lines, a
    JSON key and its value) goes whole (line by line when a replacement joined lines); the body of a PEM
    private key is hidden from its BEGIN line on, whether or not its END is in the excerpt. `found` collects
    the secret values replaced (as `scan_text`)."""
    joined = scan_text("\n".join(lines), found, min_len=1).split("\n")
    each = joined if len(joined) == len(lines) else [scan_text(line, found, min_len=1) for line in lines]
    out: list[str] = []
    in_key = False
    for line, done in zip(lines, each):
        if in_key:
            end = line.find("-----END")
            out.append(REDACTED if end < 0 else REDACTED + line[end:])
            in_key = end < 0
            continue
        in_key = opens_private_key(line)
        out.append(done)
    return out


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Env values with secret names replaced, others scrubbed of secrets in their text."""
    return {k: (REDACTED if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}


def redact_argv(argv: list[str]) -> list[str]:
    """An argument vector with the value after each secret flag (and `--flag=value` forms) replaced."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        out.append(REDACTED if hide_next and arg and not arg.startswith("-") else redact_text(arg))
        hide_next = is_secret_flag(arg)
    return out


def opens_private_key(text: str) -> bool:
    """Whether a line starts a PEM private key block that it does not end (the next lines are its body)."""
    begin = text.rfind("-----BEGIN ")
    return begin >= 0 and "PRIVATE KEY" in text[begin:begin + 80] and text.find("-----END", begin) < 0


_VALUE_OF_SECRET = "SECRET_VALUE"  # the key a walk gives the value of a secret's name / value pair
_PAIR_NAMES = ("name", "Name", "key", "Key", "ParameterKey")
_PAIR_VALUES = frozenset({"value", "Value", "ParameterValue"})


def _secret_pair(node: dict[Any, Any], key: Any) -> bool:
    """Whether `node[key]` is the value of a name / value pair naming a secret (`{"name": "HF_TOKEN", "value":
    V}`: a Kubernetes or ECS env entry, AWS's Key / Value and ParameterKey / ParameterValue)."""
    if key not in _PAIR_VALUES:
        return False
    name = next((node[n] for n in _PAIR_NAMES if isinstance(node.get(n), str)), None)
    return name is not None and is_secret_name(name)


class Redactor:
    """One redaction pass over a JSON-like document; `hosts` also pseudonymises hostnames and IPs; `visible`
    also shows control characters as escapes (`doctor.textsafe.visible`)."""

    def __init__(self, hosts: bool = False, visible: bool = False) -> None:
        from doctor.redact_hosts import HostHider

        self.book = SecretBook()
        self.late = SecretBook()
        self.hider = HostHider() if hosts else None
        self.visible = visible
        self._done: dict[tuple[str, bool | str], str] = {}

    @property
    def hosts(self) -> bool:
        return self.hider is not None

    @property
    def pseudonyms(self) -> dict[str, str]:
        return self.hider.pseudonyms if self.hider else {}

    def __call__(self, doc: Any) -> Any:
        self._harvest(doc, None)
        out = self._walk(doc, None)
        return self._replace_known(out) if len(self.late) else out

    def _harvest(self, node: Any, key: str | None) -> None:
        """First look: remember secret values (to hide them wherever else they appear) and host names."""
        if isinstance(node, dict):
            for k, v in node.items():
                self._harvest(v, _VALUE_OF_SECRET if _secret_pair(node, k) else str(k))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str) and i and isinstance(node[i - 1], str) and is_secret_flag(node[i - 1]):
                    self._remember_secret(item)
                self._harvest(item, key)
        elif isinstance(node, str) and key is not None:
            if is_secret_name(key):
                self._remember_secret(node)
            elif self.hider is not None:
                self.hider.learn(key, node)

    def _remember_secret(self, value: str) -> None:
        if worth_keeping(value) and value != REDACTED and not _kept_value(value, "PASSWORD"):
            self.book.add(value)

    def _walk(self, node: Any, key: str | None) -> Any:
        if isinstance(node, dict):
            return {self._string(str(k)): self._walk(v, _VALUE_OF_SECRET if _secret_pair(node, k) else str(k))
                    for k, v in node.items()}
        if isinstance(node, list):
            return self._walk_list(node, key)
        if isinstance(node, str):
            if key is not None and node and is_secret_name(key):
                return REDACTED
            return self._string(node, hosts=not (key and "version" in key.lower()))
        return node

    def _walk_list(self, node: list[Any], key: str | None) -> list[Any]:
        if len(node) > 1 and all(isinstance(item, str) for item in node):
            node = self._as_lines(node)
        out: list[Any] = []
        in_key_block = False
        for i, item in enumerate(node):
            if i and isinstance(item, str) and item and isinstance(node[i - 1], str) and is_secret_flag(node[i - 1]) \
                    and not item.startswith("-"):
                out.append(REDACTED)
                continue
            if in_key_block and isinstance(item, str):
                end = item.find("-----END")
                if end < 0:
                    out.append(REDACTED)
                    continue
                item = REDACTED + item[end:]
                in_key_block = False
            if isinstance(item, str) and opens_private_key(item):
                in_key_block = True
            out.append(self._walk(item, key))
        return out

    def _as_lines(self, items: list[str]) -> list[str]:
        """A list of strings is often consecutive lines (a log excerpt, a command's output): a secret wrapped
        from one item onto the next is hidden whole first (`redact_lines`), then each item is walked."""
        if any("\n" in item for item in items):
            return items  # items with their own line breaks are redacted one by one
        joined = "\n".join(items)
        done = self._done.get((joined, "lines"))
        if done is None:
            done = "\n".join(redact_lines(items, self))
            self._done[(joined, "lines")] = done
        lines = done.split("\n")
        return lines if len(lines) == len(items) else items

    def _replace_known(self, node: Any) -> Any:
        if isinstance(node, dict):
            return {self.late.replace(str(k), REDACTED): self._replace_known(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self._replace_known(item) for item in node]
        if isinstance(node, str):
            return self.late.replace(node, REDACTED)
        return node

    def add(self, value: str) -> None:
        """A secret found in text during the walk: hidden in later strings now, in earlier ones afterwards."""
        if value not in self.book.values and worth_keeping(value):
            self.book.add(value)
            self.late.add(value)
            self._done.clear()

    def _string(self, text: str, hosts: bool = True) -> str:
        """A string redacted once per document: a report of 186k findings repeats the same keys, details and
        fixes, and each repeat is answered from `_done` (cleared whenever a new secret is learned)."""
        done = self._done.get((text, hosts))
        if done is None:
            done = self._done[(text, hosts)] = self._redact_string(text, hosts)
        return done

    def _redact_string(self, text: str, hosts: bool) -> str:
        if not text.isascii():
            text = text.encode("utf-8", "replace").decode("utf-8")
        if self.visible:
            from doctor.textsafe import visible

            text = visible(text)
        text = self.book.replace(text, REDACTED)
        text = scan_text(text, self, self.book.starts_one, min_len=1)
        if hosts and self.hider is not None:
            text = self.hider.hide(text)
        return text


def redact_document(doc: Any, hosts: bool = False, visible: bool = False) -> Any:
    """A redacted copy of a JSON-like document (the input is left untouched)."""
    return Redactor(hosts=hosts, visible=visible)(doc)
