"""Datasette plugin for report-claims: status badges, safe links, the stylesheet.

Every value here comes from contributors' records, so everything is escaped; a link is made only for
http(s) URLs, never for other schemes.
"""

import json

from datasette import hookimpl
from markupsafe import Markup

STATUSES = {"confirmed", "secondary", "unverified", "contradicted", "derived", "disclosed", "partial", "absent"}
REF_COLUMNS = {"patterns": "patterns", "topics": "omissions", "evidence": "claims", "inputs": "claims"}


def _is_http(value):
    return isinstance(value, str) and value.startswith(("https://", "http://")) and not any(c.isspace() for c in value)


@hookimpl
def render_cell(value, column, table, database, datasette):
    if database != "kb" or not isinstance(value, str):
        return None
    if column in ("status", "declared", "audited") and value in STATUSES:
        return Markup('<span class="kb-status kb-{0}" title="{0}">{0}</span>').format(value)
    if column in ("url", "source_url") and _is_http(value):
        return Markup('<a href="{0}" rel="nofollow noopener noreferrer">{0}</a>').format(value)
    if column in REF_COLUMNS and value.startswith("["):
        try:
            items = json.loads(value)
        except ValueError:
            return None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            return None
        target = REF_COLUMNS[column]
        links = [
            Markup('<a href="{0}">{1}</a>').format(
                datasette.urls.row(database, target, _quote_pk(datasette, i)), i)
            for i in items
        ]
        return Markup(", ").join(links)
    if column == "drift" and table == "claims":  # the last kb reverify no longer found the quote
        return Markup('<span class="kb-status kb-drifted" title="{0}">drifted</span>').format(value)
    if column == "citation":
        return Markup('<span class="kb-citation">{0}</span>').format(value)
    return None


def _quote_pk(datasette, value):
    from datasette.utils import tilde_encode

    return tilde_encode(value)


@hookimpl
def extra_css_urls(database):
    return ["/static/kb.css"]


@hookimpl
def extra_template_vars(datasette):
    async def inner():
        # the staleness limit the build used (the vocabulary's stale_after_days), for pages that state it
        try:
            rows = await datasette.get_database("kb").execute(
                "select value from _meta where key = 'stale_after_days'")
            return {"stale_after_days": rows.first()[0] if rows.first() else "?"}
        except Exception:  # no database yet: the pages still render
            return {"stale_after_days": "?"}

    return inner


@hookimpl
def register_routes():
    return [
        (r"^/robots\.txt$", robots_txt),
        (r"^/omissions$", _busy_is_503(omissions_page)),
        (r"^/patterns/(?P<pattern>[a-z0-9-]+)$", _busy_is_503(pattern_page)),
        (r"^/graph$", _busy_is_503(graph_page)),
        (r"^/charts/(?P<chart>[a-z0-9-]+)$", _busy_is_503(chart_page)),
    ]


def _busy_is_503(page):
    """A page whose query was ended twice by the time limit says the server is busy (503), not a traceback."""

    async def serve(datasette, request):
        from datasette.database import QueryInterrupted
        from datasette.utils.asgi import Response

        try:
            return await page(datasette, request)
        except QueryInterrupted:
            return Response.text("The server is too busy to answer this page in time; try again in a moment.\n",
                                 status=503, headers={"Retry-After": "5"})

    return serve


ROBOTS = """\
# report-claims: pages are welcome; arbitrary SQL, exports and the raw database are not for crawlers.
User-agent: *
Disallow: /kb?sql=
Disallow: /kb.db
Disallow: /*.csv
Disallow: /*.json
Disallow: /-/
Allow: /
"""


async def robots_txt(datasette, request):
    from datasette.utils.asgi import Response

    return Response.text(ROBOTS)


async def _query(db, sql, params=None):
    """A query of these pages. They read a few rows per report, so only a server too busy to give them their
    time ends one at the SQL time limit: such a query is tried once more before the page gives up."""
    from datasette.database import QueryInterrupted

    try:
        return await db.execute(sql, params or {})
    except QueryInterrupted:
        return await db.execute(sql, params or {})


async def _rows(db, sql, params=None):
    return [dict(r) for r in (await _query(db, sql, params)).rows]


async def pattern_page(datasette, request):
    """One pattern: its evidence (claims and the reports they come from), its strength, shared omissions."""
    from datasette.utils.asgi import NotFound, Response

    db = datasette.get_database("kb")
    pattern_id = request.url_vars["pattern"]
    found = await _rows(db, "select id, title, description from patterns where id = :p", {"p": pattern_id})
    if not found:
        raise NotFound(f"No pattern {pattern_id}")
    claims = await _rows(db, """select c.ref, c.report, c.statement, c.figure, c.status, r.title as report_title
        from claim_patterns cp join claims c on c.ref = cp.claim join reports r on r.id = c.report
        where cp.pattern = :p order by r.published, c.ref""", {"p": pattern_id})
    reports = sorted({c["report"] for c in claims})
    shared = await _rows(db, """select o.id as omission, o.title,
          sum(d.status = 'absent') as absent, sum(d.status = 'partial') as partial,
          sum(d.status = 'disclosed') as disclosed
        from omissions o left join disclosures d on d.omission = o.id
          and d.report in (select distinct report from claim_patterns where pattern = :p)
        group by o.id order by o.rowid""", {"p": pattern_id})
    others = await _rows(db, "select id, title from patterns order by rowid")
    html = await datasette.render_template("pattern.html", {
        "pattern": found[0], "claims": claims, "reports": reports, "shared": shared, "patterns": others,
    }, request=request)
    return Response.html(html)


async def graph_page(datasette, request):
    """The pattern graph: patterns at the centre, reports around them, a report's claims on demand."""
    import math

    from datasette.utils.asgi import Response

    db = datasette.get_database("kb")
    patterns = await _rows(db, "select id, title from patterns order by rowid")
    reports = await _rows(db, "select id, title from reports order by published, id")
    links = await _rows(db, """select report, pattern, count(*) as claims from claim_patterns
        group by report, pattern""")
    claims = await _rows(db, """select c.ref, c.report, c.statement, c.figure, c.status,
          (select group_concat(pattern) from claim_patterns cp where cp.claim = c.ref) as patterns
        from claims c where c.ref in (select claim from claim_patterns)
          or c.ref in (select substr(target, 7) from graph_edges where relation = 'derived_from')
          or c.ref in (select substr(source, 7) from graph_edges where relation = 'derived_from')
        order by c.ref""")
    derived = await _rows(db, """select substr(source, 7) as source, substr(target, 7) as target
        from graph_edges where relation = 'derived_from'""")
    width, height = 1100, 1100  # room for a report's claims fanned out behind it
    cx, cy = width / 2, height / 2
    pos = {}
    for i, p in enumerate(patterns):
        a = 2 * math.pi * i / max(len(patterns), 1) - math.pi / 2
        p["x"], p["y"] = cx + 130 * math.cos(a), cy + 130 * math.sin(a)
        pos["pattern:" + p["id"]] = (p["x"], p["y"])
    for i, r in enumerate(reports):
        a = 2 * math.pi * i / max(len(reports), 1) - math.pi / 2 + 0.2
        r["x"], r["y"], r["angle"] = cx + 320 * math.cos(a), cy + 320 * math.sin(a), a
        pos["report:" + r["id"]] = (r["x"], r["y"])
    for link in links:
        link["x1"], link["y1"] = pos["report:" + link["report"]]
        link["x2"], link["y2"] = pos["pattern:" + link["pattern"]]
    html = await datasette.render_template("graph.html", {
        "patterns": patterns, "reports": reports, "links": links, "width": width, "height": height,
        "data": {"claims": claims, "derived": derived, "reports": {r["id"]: [r["x"], r["y"], r["angle"]]
                                                                     for r in reports},
                 "patterns": {p["id"]: [p["x"], p["y"]] for p in patterns}},
    }, request=request)
    return Response.html(html)


async def chart_page(datasette, request):
    """A cross-report chart drawn as SVG from the chart_points table; each point links to its claims."""
    import math

    from datasette.utils.asgi import NotFound, Response

    db = datasette.get_database("kb")
    chart_id = request.url_vars["chart"]
    found = await _rows(db, "select * from charts where id = :c", {"c": chart_id})
    if not found:
        raise NotFound(f"No chart {chart_id}")
    c = found[0]
    chart = {"id": c["id"], "title": c["title"], "description": c["description"], "pattern": c["pattern"],
             "x": {"label": c["x_label"], "log": bool(c["x_log"]), "base": c["x_base"]},
             "y": {"label": c["y_label"], "log": bool(c["y_log"]), "base": c["y_base"]}}
    points = await _rows(db, """select p.*, r.title as report_title from chart_points p
        join reports r on r.id = p.report where p.chart = :c order by p.x""", {"c": chart_id})
    width, height, margin = 760, 480, 70

    def scale(values, log, size, flip):
        values = [v for v in values if v > 0] if log else values
        if not values:
            return lambda v: 0, []
        lo, hi = min(values), max(values)
        if log:
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
            if lo == hi:
                hi = lo * 10
            f = lambda v: (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))  # noqa: E731
            ticks = [10 ** e for e in range(int(math.log10(lo)), int(math.log10(hi)) + 1)]
        else:
            lo, hi = 0, hi * 1.1 or 1
            f = lambda v: (v - lo) / (hi - lo)  # noqa: E731
            ticks = [lo + (hi - lo) * i / 5 for i in range(6)]
        span = size - 2 * margin
        to_px = (lambda v: height - margin - f(v) * span) if flip else (lambda v: margin + f(v) * span)
        return to_px, [(t, to_px(t)) for t in ticks]

    sx, xticks = scale([p["x"] for p in points], chart["x"]["log"], width, False)
    sy, yticks = scale([p["y"] for p in points], chart["y"]["log"], height, True)
    for p in points:
        p["px"], p["py"] = sx(p["x"]), sy(p["y"])
    html = await datasette.render_template("chart.html", {
        "chart": chart, "points": points, "width": width, "height": height, "margin": margin,
        "xticks": xticks, "yticks": yticks,
    }, request=request)
    return Response.html(html)


async def omissions_page(datasette, request):
    """The omission heatmap: reports × omissions, coloured by the recorded judgement."""
    from datasette.utils.asgi import Response

    db = datasette.get_database("kb")
    omissions = (await _query(db, "select id, title, description from omissions order by rowid")).rows
    reports = (await _query(db, 
        "select id, title, organization from reports where id in (select report from disclosures) "
        "order by published, id")).rows
    cells = await _rows(db, """select d.report, d.omission, d.status, d.note, v.audited
        from disclosures d left join verdicts v on v.report = d.report and v.omission = d.omission""")
    grid = {(c["report"], c["omission"]): c for c in cells}
    html = await datasette.render_template(
        "omissions.html", {"omissions": omissions, "reports": reports, "grid": grid}, request=request
    )
    return Response.html(html)
