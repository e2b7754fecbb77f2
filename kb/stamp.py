"""`kb reverify --stamp`: set claims' `verified` to today as the smallest edit of the record's text.

Only the date on each claim's `verified:` line changes; every other byte of the file (comments, layout, quoting
style, line endings) stays as written, as kb.fmt edits records by moving text rather than re-serialising it.
"""

from __future__ import annotations

import re
import shutil
from datetime import date
from pathlib import Path

from .yaml12 import YamlError, parse_yaml

_DATE = re.compile(r"""(?P<q>['"]?)\d{4}-\d{2}-\d{2}(?P=q)""")


class StampError(Exception):
    pass


def stamp(path: Path, claim_ids: set[str], today: date) -> list[str]:
    """Set `verified: TODAY` on the given claims of one record file. Returns the ids stamped (a claim already
    verified today, or without a `verified:` date written on its own line, is left alone). Raises StampError
    when the file cannot be read or is not what it was when checked."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
        data, positions = parse_yaml(text)
    except (OSError, UnicodeDecodeError, YamlError) as e:
        raise StampError(f"{path}: cannot stamp: {getattr(e, 'message', None) or e}") from None
    lines = text.split("\n")  # as the YAML parser counts lines (not str.splitlines, which also splits at U+2028)
    stamped = []
    for i, claim in enumerate(data.get("claims") or []):
        if not isinstance(claim, dict) or claim.get("id") not in claim_ids or "verified" not in claim:
            continue
        line, col = positions.find(("claims", i, "verified"))
        if line is None or positions.find(("claims", i, "verified")) == positions.find(("claims", i)):
            continue
        row = lines[line - 1]
        m = _DATE.match(row, col - 1)
        if not m:
            continue  # a date written some other way is left for a person to change
        new = f"{m.group('q')}{today.isoformat()}{m.group('q')}"
        if m.group(0) != new:
            lines[line - 1] = row[:m.start()] + new + row[m.end():]
            stamped.append(claim["id"])
    if stamped:
        tmp = path.with_name(f".{path.name}.stamp.tmp")
        tmp.write_bytes("\n".join(lines).encode("utf-8"))
        shutil.copymode(path, tmp)
        tmp.replace(path)
    return stamped
