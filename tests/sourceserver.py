"""A source server for the tests: real HTTP on loopback, serving pages and PDFs made here, and a hand-written PDF
maker (text that pypdf reads back, line by line, with no PDF library)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional, Union


def pdf(pages: list[list[str]]) -> bytes:
    """A PDF with one page per list of lines, in Helvetica, each line on its own line of the page."""
    objects: list[bytes] = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", b""]  # 1 font, 2 pages
    kids = []
    for lines in pages:
        ops = ["BT /F1 11 Tf 14 TL 72 720 Td"]
        for line in lines:
            ops.append("(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*")
        stream = ("\n".join(ops) + "\nET").encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 1 0 R >> "
                       b">> /Contents %d 0 R >>" % len(objects))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, len(objects), xref)
    return bytes(out)


class Page:
    """What the server answers on a path: a status, headers and a body (or a function writing the body itself, for
    slow and endless answers)."""

    def __init__(self, body: Union[bytes, str, Callable] = b"", status: int = 200,
                 headers: Optional[dict[str, str]] = None, etag: Optional[str] = None):
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.status, self.headers, self.etag = status, dict(headers or {}), etag


class SourceServer:
    """A threading HTTP server on 127.0.0.1 (a free port) answering from `pages`; `requests` records each request
    as (path, headers)."""

    def __init__(self):
        self.pages: dict[str, Union[Page, list[Page]]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                server.requests.append((self.path, dict(self.headers)))
                page = server.pages.get(self.path)
                if isinstance(page, list):  # answers in turn (the last one repeated)
                    page = page.pop(0) if len(page) > 1 else page[0]
                if page is None:
                    page = Page("not here", 404)
                try:
                    if page.etag and self.headers.get("If-None-Match") == page.etag:
                        self.send_response(304)
                        self.send_header("ETag", page.etag)
                        self.end_headers()
                        return
                    self.send_response(page.status)
                    for k, v in page.headers.items():
                        self.send_header(k, v)
                    if page.etag:
                        self.send_header("ETag", page.etag)
                    if callable(page.body):
                        self.end_headers()
                        page.body(self.wfile)
                        return
                    self.send_header("Content-Length", str(len(page.body)))
                    self.end_headers()
                    self.wfile.write(page.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a size limit, a timeout): as a real server sees it

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "SourceServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def seen(self, path: str) -> list[dict[str, str]]:
        return [h for p, h in self.requests if p == path]


def slowly(seconds: float, body: bytes = b"<p>late</p>") -> Callable:
    def write(out):
        time.sleep(seconds)
        out.write(body)

    return write


def endless(total: int, chunk: int = 1 << 20) -> Callable:
    """A body of `total` bytes written in chunks (stopped by the client hanging up)."""

    def write(out):
        block = b"a" * chunk
        for _ in range(total // chunk):
            out.write(block)

    return write
