"""A source's text as quotes are looked for in it: HTML and PDF turned into text, normalised, and searched.

Normalising makes the same words compare equal however a page or a PDF happens to print them: Unicode
compatibility forms (ligatures such as "ﬁ", full-width digits), curly quotes and dashes as ASCII, spaces of every
width as one space, soft hyphens and zero-width characters dropped, and a word hyphenated at a line end joined
again ("inter-\\nruptions" → "interruptions"). The sha256 of the normalised text identifies the text read, so a
record can say which text its quotes were checked against (a source's `sha256`).

A quote is searched for as written, normalised the same way, with a little slack for what text extraction does:
a hyphen inside a word may be missing (a compound broken at a line end), a space may be missing, case may differ,
and the cells of a table row (`quote_kind: table`, cells joined by " | ") may be separated by spaces only.
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Optional

_CHARS = {
    **{c: "'" for c in "\u2018\u2019\u201a\u201b\u2032\u02bc"},
    **{c: '"' for c in "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"},
    **{c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"},
    **{c: " " for c in "\u00a0\u2007\u2009\u200a\u202f\u205f\u3000\u2002\u2003\u2004\u2005\u2006\u2008"},
    **{c: "" for c in "\u00ad\u200b\u200c\u200d\u2060\ufeff"},
    "\u2026": "...",
}
_TABLE = str.maketrans(_CHARS)
# A word broken at a line end: joined when the next line goes on in lower case ("inter-\nruptions"); otherwise
# the hyphen is the word's own ("GPT-\n4", "Llama-\n3") and only the break goes.
_BROKEN = re.compile(r"(?<=\w)-[ \t]*\r?\n\s*(?=\w)")
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Text as it is compared and hashed: see the module's docstring."""
    text = unicodedata.normalize("NFKC", text).translate(_TABLE)
    text = _BROKEN.sub(lambda m: "" if m.string[m.end()].islower() else "-", text)
    return _SPACE.sub(" ", text).strip()


def digest(normalised: str) -> str:
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


@dataclass
class SourceText:
    """A source's normalised text and where its pages or sections start (offset, label)."""

    text: str
    anchors: list[tuple[int, str]] = field(default_factory=list)
    kind: str = "text"  # html | pdf | text
    version: Optional[str] = None  # what the document says of its version (an HTML page's modified date)

    @property
    def sha256(self) -> str:
        return digest(self.text)

    def where(self, offset: int) -> Optional[str]:
        """The page or section an offset of the text is in ("p. 12", "§ 3.3 Reliability")."""
        starts = [a for a, _ in self.anchors]
        i = bisect.bisect_right(starts, offset) - 1
        return self.anchors[i][1] if i >= 0 else None


def joined(parts: list[tuple[Optional[str], str]], kind: str, version: Optional[str] = None) -> SourceText:
    """Segments (label, raw text), normalised one by one and joined, with an anchor where each labelled one
    starts. A word broken across two segments (a page break) is joined as a line break would be."""
    out = ""
    anchors: list[tuple[int, str]] = []
    for label, raw in parts:
        piece = normalise(raw)
        if not piece:
            continue
        if out:
            if out.endswith("-") and re.match(r"\w", piece) and out[-2:-1].isalnum():
                out = out[:-1] if piece[0].islower() else out
            else:
                out += " "
        if label:
            anchors.append((len(out), label))
        out += piece
    return SourceText(out, anchors, kind, version)


# Finding a quote.


@dataclass
class Found:
    start: int
    end: int
    where: Optional[str]


def quote_pattern(quote: str, table: bool = False) -> re.Pattern:
    """The regular expression a quote is looked for with (see the module's docstring)."""
    out = []
    for token in re.split(r"( \| |(?<=\w)-(?=\w)| )", normalise(quote)):
        if token == " | ":
            out.append(r"(?: ?\| ?| )" if table else r" ?\| ?")
        elif token == "-":
            out.append("-? ?")
        elif token == " ":
            out.append(" ?")
        else:
            out.append(re.escape(token))
    return re.compile("".join(out), re.IGNORECASE)


def find(quote: str, text: SourceText, table: bool = False) -> Optional[Found]:
    """Where the quote is in the text, or None."""
    if not quote.strip():
        return None
    m = quote_pattern(quote, table).search(text.text)
    return Found(m.start(), m.end(), text.where(m.start())) if m else None


# Reading documents.


class SourceError(Exception):
    """A document that cannot be turned into text (a broken PDF, a PDF without pypdf installed)."""


def from_bytes(body: bytes, content_type: Optional[str] = None, name: str = "") -> SourceText:
    """A document's bytes as normalised text: a PDF (pypdf), an HTML page (html.parser) or plain text, told
    apart by the content type, the file name or the bytes themselves."""
    mime = (content_type or "").split(";")[0].strip().lower()
    lower = name.lower()
    head = body[:1024].lstrip().lower()
    if mime == "application/pdf" or lower.endswith(".pdf") or body[:5] == b"%PDF-":
        return from_pdf(body)
    if mime in ("text/html", "application/xhtml+xml") or lower.endswith((".html", ".htm")) or \
            head.startswith((b"<!doctype html", b"<html")):
        return from_html(decode(body, content_type, html=True))
    return joined([(None, decode(body, content_type))], "text")


def decode(body: bytes, content_type: Optional[str] = None, html: bool = False) -> str:
    """Bytes as text, in the charset the server declared, else the page's own <meta charset>, else UTF-8, else
    Windows-1252 (what browsers take ISO-8859-1 and unlabelled legacy pages to be)."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            return body.decode(codec, errors="replace")
    declared = _charset(content_type or "")
    if declared is None and html:
        m = re.search(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", body[:4096], re.IGNORECASE)
        declared = _known(m.group(1).decode("ascii")) if m else None
    if declared is not None:
        return body.decode(declared, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def _charset(content_type: str) -> Optional[str]:
    m = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", content_type, re.IGNORECASE)
    return _known(m.group(1)) if m else None


def _known(name: str) -> Optional[str]:
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    return "cp1252" if codec in ("latin-1", "iso8859-1", "ascii") else codec  # as the WHATWG encoding standard


def from_pdf(body: bytes) -> SourceText:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise SourceError("reading a PDF needs pypdf: pip install 'report-claims[pdf]'") from None
    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [(f"p. {n}", page.extract_text() or "") for n, page in enumerate(reader.pages, 1)]
    except Exception as e:  # pypdf raises many kinds on broken files
        raise SourceError(f"not a readable PDF: {type(e).__name__}: {e}") from None
    return joined(pages, "pdf")


_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas", "math"}
_BLOCK = {"address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog", "div", "dl",
          "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
          "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "ul"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_MODIFIED = ("article:modified_time", "og:updated_time", "last-modified", "dateModified", "article:published_time")


class _Html(HTMLParser):
    """An HTML page as segments of text, one per heading's section; a table row as its cells joined by " | "
    (as table quotes are written)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[Optional[str], list[str]]] = [(None, [])]
        self.skip = 0
        self.heading: Optional[list[str]] = None
        self.rows: list[list[list[str]]] = []  # a stack of rows being read (tables nest), each a list of cells
        self.meta: dict[str, str] = {}

    def _emit(self, text: str) -> None:
        if self.rows and self.rows[-1]:
            self.rows[-1][-1].append(text)
        else:
            self.parts[-1][1].append(text)
        if self.heading is not None:
            self.heading.append(text)

    def handle_starttag(self, tag, attrs):
        if tag == "meta":
            a = dict(attrs)
            key = a.get("property") or a.get("name") or a.get("itemprop") or ""
            if key in _MODIFIED and a.get("content"):
                self.meta.setdefault(key, a["content"])
            return
        if tag in _VOID and tag not in ("br", "hr"):
            return
        if tag in _SKIP:
            self.skip += 1
            return
        if self.skip:
            return
        if tag in _HEADINGS and not self.rows:
            self.parts.append((None, []))  # labelled when the heading ends
            self.heading = []
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self.rows[-1].append([])
        elif tag in _BLOCK:
            self._emit("\n")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in _SKIP:
            self.skip -= 1

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag in _HEADINGS and self.heading is not None:
            label = normalise("".join(self.heading))[:80]
            self.parts[-1] = (f"§ {label}" if label else None, self.parts[-1][1])
            self.heading = None
            self._emit("\n")
        elif tag == "tr" and self.rows:
            cells = [normalise("".join(c)) for c in self.rows.pop()]
            self._emit("\n" + " | ".join(cells) + "\n")
        elif tag in _BLOCK:
            self._emit("\n")

    def handle_data(self, data):
        if not self.skip:
            self._emit(data)


def from_html(page: str) -> SourceText:
    parser = _Html()
    parser.feed(page)
    parser.close()
    while parser.rows:  # a row left open at the end of a broken page
        cells = [normalise("".join(c)) for c in parser.rows.pop()]
        parser._emit("\n" + " | ".join(cells) + "\n")
    modified = next((parser.meta[k] for k in _MODIFIED if k in parser.meta), None)
    version = modified[:10] if modified and re.match(r"\d{4}-\d{2}-\d{2}", modified) else None
    return joined([(label, "".join(chunks)) for label, chunks in parser.parts], "html", version)
