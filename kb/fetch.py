"""Fetching a source over HTTP, carefully: httpx with timeouts, a few retries with backoff, a size limit, an
honest user agent, http(s) only, redirects followed only to http(s), and no private or loopback addresses unless
allowed (a record's URL is contributed text: it must not make a CI runner read its own network).

httpx is imported only here, when something is fetched: the other commands start without it.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import urljoin, urlsplit

from . import __version__

USER_AGENT = (f"report-claims/{__version__} (kb sources fetch: re-checks quoted figures against their sources; "
              f"python-httpx)")
TIMEOUT = 30.0  # seconds to connect, and between two reads; a whole response gets TOTAL_TIMEOUTS times that
TOTAL_TIMEOUTS = 4
RETRIES = 2
BACKOFF = 1.0  # seconds before the first retry, doubled for each next one
MAX_BYTES = 32 * 1024 * 1024  # a report's PDF is a few MB; arXiv's largest are around 30 MB
MAX_REDIRECTS = 5
ARXIV_MIRROR = "https://export.arxiv.org"  # the host arXiv asks programs to use
_RETRY_STATUSES = {429, 500, 502, 503, 504}


@dataclass
class Settings:
    timeout: float = TIMEOUT
    retries: int = RETRIES
    backoff: float = BACKOFF
    max_bytes: int = MAX_BYTES
    allow_local: bool = False
    arxiv_mirror: str = ARXIV_MIRROR


class FetchError(Exception):
    """Why a URL could not be read: kind is status (4xx/5xx), timeout, refused (not http(s), a private address,
    a redirect elsewhere), too-big or network; status is the HTTP status, when there was one."""

    def __init__(self, kind: str, message: str, status: Optional[int] = None, retry_after: Optional[float] = None):
        super().__init__(message)
        self.kind, self.message, self.status, self.retry_after = kind, message, status, retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in ("timeout", "network") or (self.kind == "status" and self.status in _RETRY_STATUSES)


@dataclass
class Response:
    url: str  # after redirects
    status: int  # 200, or 304 when the validators sent say the copy held is current
    headers: dict[str, str] = field(default_factory=dict)  # content-type, etag, last-modified, ...
    body: bytes = b""


def check_url(url: str, allow_local: bool) -> None:
    """Refuse a URL that is not http(s), or whose host is (or resolves to) a private, loopback, link-local or
    otherwise non-public address, unless allow_local. (The address is checked when resolved here; a host that
    resolves differently a moment later could still slip through, which is why CI also runs without secrets.)"""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise FetchError("refused", f"refused: only http and https URLs are fetched, not {parts.scheme or 'this'}:")
    host = parts.hostname
    if not host:
        raise FetchError("refused", f"refused: no host in {url}")
    if allow_local:
        return
    import ipaddress  # here, not at the top: every kb command imports this module for its options' defaults

    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                       type=socket.SOCK_STREAM)
        except OSError as e:
            raise FetchError("network", f"cannot resolve {host}: {e.strerror or e}") from None
        addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    for a in addresses:
        mapped = getattr(a, "ipv4_mapped", None)
        if not (mapped or a).is_global:
            raise FetchError("refused", f"refused: {host} is a private or loopback address ({a}); "
                                        f"--allow-local fetches it")


class Fetcher:
    """One HTTP client for a run of fetches (connections are reused)."""

    def __init__(self, settings: Optional[Settings] = None, sleep=time.sleep):
        import httpx

        self.settings = settings or Settings()
        self._sleep = sleep
        t = self.settings.timeout
        self.client = httpx.Client(timeout=httpx.Timeout(t), follow_redirects=False, headers={"User-Agent": USER_AGENT})

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> "Fetcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(self, url: str, etag: Optional[str] = None, last_modified: Optional[str] = None) -> Response:
        """GET a URL, retrying timeouts, network errors, 429 and 5xx with backoff. Sends the validators of the
        copy held, if any: a 304 comes back as a Response without a body. Raises FetchError."""
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        s = self.settings
        for attempt in range(s.retries + 1):
            try:
                return self._get_once(url, headers)
            except FetchError as e:
                if not e.retryable or attempt == s.retries:
                    raise
                wait = s.backoff * 2 ** attempt
                if e.retry_after is not None:
                    wait = max(wait, min(e.retry_after, 60.0))
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _get_once(self, url: str, headers: dict[str, str]) -> Response:
        import httpx

        s = self.settings
        current = url
        deadline = time.monotonic() + s.timeout * TOTAL_TIMEOUTS
        for _ in range(MAX_REDIRECTS + 1):
            check_url(current, s.allow_local)
            try:
                with self.client.stream("GET", current, headers=headers) as r:
                    if r.status_code in (301, 302, 303, 307, 308):
                        location = r.headers.get("location")
                        if not location:
                            raise FetchError("status", f"HTTP {r.status_code} without a Location", r.status_code)
                        target = urljoin(current, location)
                        scheme = urlsplit(target).scheme.lower()
                        if scheme not in ("http", "https"):
                            raise FetchError("refused", f"refused: {current} redirects to a {scheme}: URL "
                                                        f"({target[:80]}); only http(s) redirects are followed")
                        current = target
                        continue
                    kept = {k: r.headers[k] for k in ("content-type", "etag", "last-modified", "content-disposition")
                            if k in r.headers}
                    if r.status_code == 304:
                        return Response(current, 304, kept)
                    if r.status_code >= 400:
                        raise FetchError("status", f"HTTP {r.status_code} {r.reason_phrase}".strip(), r.status_code,
                                         _retry_after(r.headers.get("retry-after")))
                    length = r.headers.get("content-length")
                    if length and length.isdigit() and int(length) > s.max_bytes:
                        raise FetchError("too-big", f"the body is {int(length):,} bytes, more than the limit of "
                                                    f"{s.max_bytes:,} (--max-bytes)")
                    body = bytearray()
                    for chunk in r.iter_bytes():
                        body += chunk
                        if len(body) > s.max_bytes:
                            raise FetchError("too-big", f"the body is more than the limit of {s.max_bytes:,} bytes "
                                                        f"(--max-bytes); stopped reading")
                        if time.monotonic() > deadline:
                            raise FetchError("timeout", f"the response took more than "
                                                        f"{s.timeout * TOTAL_TIMEOUTS:g} s; stopped reading")
                    return Response(current, r.status_code, kept, bytes(body))
            except httpx.TimeoutException:
                raise FetchError("timeout", f"timed out after {s.timeout:g} s (--timeout)") from None
            except httpx.HTTPError as e:
                raise FetchError("network", f"{type(e).__name__}: {e}"[:300]) from None
        raise FetchError("refused", f"more than {MAX_REDIRECTS} redirects")


def _retry_after(value: Optional[str]) -> Optional[float]:
    try:
        return float(value) if value else None
    except ValueError:
        return None
