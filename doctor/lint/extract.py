"""Find the code inside the text users paste: Markdown, blog posts and chat messages.

    snippets_from_text(text) -> [Snippet(lang, text, first_line, origin)]

Recognised, in this order of confidence:
- fenced blocks (``` or ~~~, with an optional language);
- copy-button residue, the word a web page's "copy" button leaves when its block is copied as text:
  `python复制LLMEngine(`, `bash复制# comment`, `pythonCopy code`, `Copy code` on a line of its own;
- unfenced code: a line that starts like a statement (`from x import`, `Name(`, `x = Name(`, `vllm serve`,
  `python -m sglang.launch_server`, `export VAR=`, `pip install`), Markdown-indented or not, with the lines that
  follow it while they are code-like (blank lines included) and stop at the first line of prose.

A line is prose when, outside its comment and its quoted strings, it holds CJK text or reads as an English
sentence; Chinese comments and strings inside code therefore do not end a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LANGS = {"python": "python", "python3": "python", "py": "python", "ipython": "python",
         "bash": "shell", "sh": "shell", "shell": "shell", "zsh": "shell", "console": "shell", "shell-session": "shell",
         "dockerfile": "dockerfile", "docker": "dockerfile",
         "yaml": "yaml", "yml": "yaml"}
_LANG_WORDS = "|".join(sorted((re.escape(k) for k in LANGS), key=len, reverse=True))
_COPY = r"(?:复制代码|复制|copy code|copy)"
# `python复制CODE`, `bashCopy codeCODE`, `Copy code` alone: the language word sits right before the button text.
_RESIDUE = re.compile(rf"^(?P<indent>[ \t]*)(?:(?P<lang>{_LANG_WORDS})[ \t]?{_COPY}|{_COPY}(?=[ \t]*$))(?P<rest>.*)$",
                      re.IGNORECASE)
_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
_STRING = re.compile(r"\"[^\"\n]{0,2000}\"|'[^'\n]{0,2000}'")
_SHELL_START = re.compile(r"^(?:\$\s+)?(?:sudo\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*"
                          r"(?:vllm\s+serve|python3?\s+-m\s+(?:sglang|vllm)\.|pip3?\s+install|uv\s+pip|conda\s+|"
                          r"export\s+[A-Za-z_]|docker\s+run|ray\s+start|torchrun|sglang\s|git\s+clone|cd\s+\S)")
_PY_START = re.compile(r"^(?:from\s+[\w.]+\s+import\s|import\s+[\w.]+|@[\w.]+|def\s+\w+\(|class\s+\w+|"
                       r"[A-Za-z_][\w.]*\s*=\s*[\w.]+\(|[A-Z][\w]*(?:\.[\w]+)*\()")
_CODE_TOKEN = re.compile(r"[=()\[\]{}\\]|^\s*(?:#|\.|\.\.\.|@|[\w.]+\s*\(|--?\w)|,\s*$")


@dataclass(frozen=True)
class Snippet:
    """A piece of code found in a document, with the line of the document its first line came from."""

    lang: str
    text: str
    first_line: int
    origin: str


def _code_part(line: str) -> str:
    """The line without its quoted strings and its trailing comment (`#`, or `//` after a space)."""
    bare = _STRING.sub('""', line)
    hash_at = bare.find("#")
    return bare if hash_at < 0 else bare[:hash_at]


def is_prose(line: str) -> bool:
    """Prose, not code: CJK text outside comments and strings, a bullet, or an English sentence."""
    stripped = line.strip()
    if not stripped:
        return False
    if stripped[0] in "•●▪◦":
        return True
    code = _code_part(stripped)
    if _CJK.search(code):
        return True
    return _is_sentence(stripped) and not _CODE_TOKEN.search(code)


def _is_sentence(stripped: str) -> bool:
    """Five or more words, capitalised first, nearly all plain words: English running text."""
    words = stripped.split()
    if len(words) < 5 or not words[0][:1].isupper() or not words[0].isalpha():
        return False
    plain = sum(1 for w in words if w.strip(".,;:!?'\"()").isalpha())
    return plain >= 0.8 * len(words)


def _code_like(line: str, lang: str = "auto") -> bool:
    stripped = line.strip()
    return bool(stripped) and not is_prose(line) and bool(
        _CODE_TOKEN.search(stripped) or _SHELL_START.match(stripped) or _PY_START.match(stripped)
        or stripped.startswith(("-", "'", '"')) or (lang == "yaml" and re.match(r"^[\w.-]+:(\s|$)", stripped)))


def starts_code(line: str) -> str | None:
    """'python' or 'shell' when a line of running text opens an unfenced code block."""
    stripped = line.strip()
    if not stripped or is_prose(line):
        return None
    if _SHELL_START.match(stripped):
        return "shell"
    if _PY_START.match(stripped):
        return "python"
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _dedent(lines: list[str], cut: int) -> list[str]:
    return [line[min(cut, _indent(line)):] for line in lines]


def _depth(line: str) -> int:
    code = _code_part(line)
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _extend(lines: list[str], start: int, base: int, depth: int = 0, lang: str = "auto") -> int:
    """Index just past the block that continues at `start`: code-like, deeper-indented or still-bracketed lines
    (blank lines inside), up to the first line of prose."""
    end = start
    i = start
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        deeper = _indent(line) > base
        if is_prose(line) or not (depth > 0 or deeper or _code_like(line, lang) or line.rstrip().endswith(")")):
            break
        depth = max(0, depth + _depth(line))
        i += 1
        end = i
    return end


def snippets_from_text(text: str) -> list[Snippet]:
    """Every code snippet of a Markdown / prose document, in document order."""
    lines = text.splitlines()
    out: list[Snippet] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            close = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence['fence'][0])}{{{len(fence['fence'])},}}[ \t]*$")
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            body = _dedent(lines[i + 1:j], len(fence["indent"]))
            out.append(Snippet(LANGS.get(fence["lang"].lower(), "auto"), "\n".join(body), i + 2, "fenced block"))
            i = j + 1
            continue
        residue = _RESIDUE.match(line)
        if residue:
            base = len(residue["indent"])
            lang = LANGS.get((residue["lang"] or "").lower(), "auto")
            j = _extend(lines, i + 1, base, max(0, _depth(residue["rest"])), lang)
            body = [residue["rest"]] + _dedent(lines[i + 1:j], base)
            while body and not body[-1].strip():
                body.pop()
            if any(b.strip() for b in body):
                first = i + 1 if residue["rest"].strip() else i + 2
                if not residue["rest"].strip():
                    body = body[1:]
                out.append(Snippet(lang, "\n".join(body), first, "copied code block"))
            i = max(j, i + 1)
            continue
        lang = starts_code(line)
        if lang:
            base = _indent(line)
            j = max(_extend(lines, i + 1, base, max(0, _depth(line))), i + 1)
            body = _dedent(lines[i:j], base)
            while body and not body[-1].strip():
                body.pop()
            out.append(Snippet(lang, "\n".join(body), i + 1, "unfenced code"))
            i = j
            continue
        i += 1
    return out
