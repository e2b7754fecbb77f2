"""Where the knowledge base is: found as git finds its repository, so commands work from any folder under it.

A knowledge base is a folder holding `claims/` (the records); its database is built at `site/kb.db` beside it.
`--claims DIR` names the records folder directly; otherwise `claims/` in the current folder or its nearest parent
is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

CLAIMS = "claims"
SITE = "site"
DATABASE = "kb.db"


@dataclass(frozen=True)
class Location:
    claims: Path  # the records folder
    root: Path  # the folder that holds it (and site/)

    @property
    def site(self) -> Path:
        return self.root / SITE

    @property
    def database(self) -> Path:
        return self.site / DATABASE


def find(claims: Union[str, Path, None] = None, start: Union[str, Path, None] = None) -> Optional[Location]:
    """The knowledge base: `claims` when given (whether or not it exists: commands report a missing folder),
    else the nearest `claims/` folder at or above `start` (default: the current folder); None when there is
    none."""
    if claims is not None:
        p = Path(claims)
        return Location(p, p.resolve().parent)
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CLAIMS).is_dir():
            return Location(folder / CLAIMS, folder)
    return None
