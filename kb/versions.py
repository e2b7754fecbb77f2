"""What a source's URL says about the version it points at, and where its text is fetched from.

`kb validate` compares the version a URL pins (arXiv `2407.21783v3`, a commit in a GitHub link) with the
source's `version` field; `kb sources fetch` reads arXiv papers as PDFs (the abstract page only names the
versions) and GitHub files as raw text (a blob page is mostly the site's own markup). No network here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# New-style ids (2407.21783) and old-style ones (hep-th/9901001), on abs, pdf or html pages, with a version or not.
_ARXIV = re.compile(
    r"^https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/"
    r"(?P<id>\d{4}\.\d{4,5}|[a-z][a-z.-]*/\d{7})(?P<version>v\d+)?(?:\.pdf)?/?(?:[?#].*)?$",
    re.IGNORECASE)
_GITHUB = re.compile(r"^https?://github\.com/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?P<kind>blob|tree|raw|commit)/"
                     r"(?P<ref>[^/?#]+)(?P<path>/[^?#]*)?", re.IGNORECASE)
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
ARXIV_VERSION = re.compile(r"^v[1-9]\d*$")


@dataclass(frozen=True)
class Arxiv:
    id: str  # 2407.21783
    version: Optional[str]  # "v3" when the URL pins one


def arxiv(url: Optional[str]) -> Optional[Arxiv]:
    """The arXiv paper a URL points at, or None when it is not an arXiv URL."""
    m = _ARXIV.match(url or "")
    return Arxiv(m.group("id"), (m.group("version") or "").lower() or None) if m else None


def github_commit(url: Optional[str]) -> Optional[str]:
    """The commit a GitHub link pins (a hex ref of 7 to 40 digits), or None (a branch, or not GitHub)."""
    m = _GITHUB.match(url or "")
    if m and _SHA.match(m.group("ref").lower()):
        return m.group("ref").lower()
    return None


def same_commit(a: str, b: str) -> bool:
    """Whether two commit SHAs name the same commit (either may be abbreviated)."""
    a, b = a.lower(), b.lower()
    return a.startswith(b) or b.startswith(a)


def is_commit(text: str) -> bool:
    return bool(_SHA.match(text.lower()))


def fetch_url(url: str) -> str:
    """Where a source's text is read from: a GitHub file's raw text for its blob page; the URL otherwise (arXiv
    is handled apart, by id and version)."""
    m = _GITHUB.match(url)
    if m and m.group("kind").lower() in ("blob", "raw") and m.group("path"):
        return (f"https://raw.githubusercontent.com/{m.group('owner')}/{m.group('repo')}/{m.group('ref')}"
                f"{m.group('path')}")
    return url
