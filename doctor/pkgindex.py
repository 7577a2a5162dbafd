"""The package index pip is configured to use: its URL, and the versions it serves of a project.

The URL is pip's own setting (PIP_INDEX_URL, else `index-url` in pip's configuration files in pip's order,
else PyPI); extra indexes (PIP_EXTRA_INDEX_URL / `extra-index-url`, http(s) or file://) are read too, since pip
resolves across all of them, and so are local find-links directories. A project's versions come from the simple repository API in its JSON form
(PEP 691), or a file:// index's directory listing; every request is bounded by `timeout_s` as a whole (a page
that trickles or never ends is cut, `doctor.boundedhttp`) and each page by INDEX_PAGE_MAX_BYTES.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

PYPI = "https://pypi.org/simple"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
# A project page of the simple API: PyPI's torch page (thousands of files) is a few MiB.
INDEX_PAGE_MAX_BYTES = 64 << 20


class IndexUnreachable(Exception):
    """No configured index answered (offline, refused, timed out): the reason, one line."""


@dataclass(frozen=True)
class IndexConfig:
    """pip's index setting: the main index and the extra ones, as URLs."""

    index_url: str
    extra: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()   # directories (or file:// URLs) of distribution files pip also picks from

    @property
    def urls(self) -> tuple[str, ...]:
        return (self.index_url, *self.extra)


def _config_files() -> list[Path]:
    """pip's configuration files, lowest priority first (global, user, site), as pip reads them."""
    if os.environ.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    home = Path.home()
    xdg = [Path(p) / "pip" / "pip.conf" for p in os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":") if p]
    files = [*xdg, Path("/etc/pip.conf"), home / ".pip" / "pip.conf",
             Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "pip" / "pip.conf",
             Path(sys.prefix) / "pip.conf"]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def configured() -> IndexConfig:
    """The index URLs pip would use here (environment over configuration files over PyPI)."""
    index, extra, links = PYPI, "", ""
    for path in _config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install", "download"):
            if parser.has_option(section, "index-url"):
                index = parser.get(section, "index-url").strip()
            if parser.has_option(section, "extra-index-url"):
                extra = parser.get(section, "extra-index-url")
            if parser.has_option(section, "find-links"):
                links = parser.get(section, "find-links")
    index = os.environ.get("PIP_INDEX_URL", index).strip() or PYPI
    extra = os.environ.get("PIP_EXTRA_INDEX_URL", extra)
    links = os.environ.get("PIP_FIND_LINKS", links)
    local = tuple(u for u in links.split() if u.startswith("file:") or "://" not in u)
    return IndexConfig(index.rstrip("/"), tuple(u.rstrip("/") for u in extra.split() if u), local)


def _versions_of_files(names: list[str], project: str) -> set[Version]:
    out: set[Version] = set()
    for name in names:
        try:
            if name.endswith(".whl"):
                dist, version, *_ = parse_wheel_filename(name)
            elif name.endswith((".tar.gz", ".zip")):
                dist, version = parse_sdist_filename(name)
            else:
                continue
        except (ValueError, InvalidVersion):
            continue
        if canonicalize_name(dist) == project:
            out.add(version)
    return out


def _from_url(base: str, project: str, timeout_s: float) -> set[Version]:
    import httpx

    from doctor.boundedhttp import ReplyTooLarge, ReplyTooSlow, bounded_body

    url = f"{base}/{project}/"
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=True) as client, \
                client.stream("GET", url, headers={"Accept": JSON_ACCEPT}) as response:
            if response.status_code == 404:
                return set()
            if response.status_code != 200:
                raise IndexUnreachable(f"{url} answered HTTP {response.status_code}")
            body = bounded_body(response, timeout_s, INDEX_PAGE_MAX_BYTES)
    except (ReplyTooLarge, ReplyTooSlow) as exc:
        raise IndexUnreachable(f"{url}: {exc}") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise IndexUnreachable(f"{_netloc(base)} did not answer ({type(exc).__name__})") from None
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        names = [f["filename"] for f in data.get("files", []) if not f.get("yanked")]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        names = re.findall(r">([^<>]+?)</a>", text)  # an index that answers the HTML form only
    return _versions_of_files(names, project)


def _netloc(url: str) -> str:
    """The host part of an index URL without its user:password, or the URL where it does not parse
    (`http://[::1`)."""
    try:
        return urlparse(url).netloc.rpartition("@")[2] or url
    except ValueError:
        return url


def _from_dir(base: str, project: str) -> set[Version]:
    root = Path(unquote(urlparse(base).path)) / project
    try:
        return _versions_of_files([p.name for p in root.iterdir()], project)
    except OSError:
        return set()


def versions(project: str, config: IndexConfig | None = None, timeout_s: float = 5.0) -> list[Version]:
    """Every version of `project` the configured indexes serve (yanked files left out), oldest first.

    Raises IndexUnreachable when no index with an http(s) URL answered; a file:// index that lacks the
    project simply adds nothing."""
    config = config or configured()
    project = canonicalize_name(project)
    found: set[Version] = set()
    failures: list[str] = []
    answered = False
    for base in config.urls:
        if base.startswith("file:"):
            found |= _from_dir(base, project)
            continue
        try:
            found |= _from_url(base, project, timeout_s)
            answered = True
        except IndexUnreachable as exc:
            failures.append(str(exc))
    for link in config.find_links:
        directory = Path(unquote(urlparse(link).path) if link.startswith("file:") else link)
        try:
            found |= _versions_of_files([p.name for p in directory.iterdir()], project)
        except OSError:
            continue
    if failures and not answered:
        raise IndexUnreachable("; ".join(failures))
    return sorted(found)
