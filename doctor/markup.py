"""Markdown inline markup made plain for a terminal: `code`, **bold**, *emphasis*, [text](url), headings."""

from __future__ import annotations

import re

_LINK = re.compile(r"\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)")
_CODE = re.compile(r"`{1,3}([^`\n]{1,2000})`{1,3}")
_STRONG = re.compile(r"\*\*(?=\S)([^*\n]{1,2000}?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]{1,2000}?)(?<=\S)\*(?![\w*])")
_HEADING = re.compile(r"^#{1,6}[ \t]+", re.M)


def plain(text: str) -> str:
    """The text as a terminal should show it: markup removed, link targets kept in parentheses."""
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})", text)
    text = _CODE.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return _HEADING.sub("", text)
