"""A new record from the template (kb/template.yaml, or a knowledge base's own _template.yaml): `kb new`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional, Union

from .fmt import format_text
from .load import template_path
from .model import SLUG

_NEEDS_QUOTES = re.compile(r"[:#\[\]{}&*!|>'\"%@`,]|^\s|\s$")


class TemplateError(ValueError):
    pass


def new_record_text(report_id: str, claims_dir: Union[str, Path, None] = None, title: Optional[str] = None,
                    organization: Optional[str] = None, url: Optional[str] = None) -> str:
    """The template's text for a record with this id, with the given title, organization and URL filled in.
    Every other <placeholder> stays, so the record does not validate until each is replaced."""
    if not re.match(SLUG, report_id):
        raise TemplateError(f"{report_id!r} is not a valid id (lowercase words joined by hyphens, starting with a "
                            f"letter)")
    if url is not None and not re.match(r"^https?://\S+$", url):
        raise TemplateError(f"the URL must be http or https, got {url!r}")
    lines = template_path(claims_dir).read_text(encoding="utf-8").splitlines(keepends=True)
    # The template's own header says how to use it; the new record keeps the modeline and the writing rules.
    text = lines[0] + "".join(lines[4:])
    text = text.replace("new-report", report_id)
    for field, value in (("title", title), ("organization", organization), ("url", url)):
        if value:
            quoted = json.dumps(value) if _NEEDS_QUOTES.search(value) else value
            # the report's title is also its first source's title
            text = re.sub(rf"(?m)^(\s*(?:- )?{field}: )[^#\n]*?(\s*#.*)?$",
                          lambda m: m.group(1) + quoted + (m.group(2) or ""), text,
                          count=2 if field == "title" else 1)
    return format_text(text)
