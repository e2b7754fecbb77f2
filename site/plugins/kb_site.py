"""Datasette plugin for report-claims: status badges, safe links, the site's own pages (a reading view of the
claims, the omission heatmap, the pattern graph, patterns and charts) and the citation box.

Every value here comes from contributors' records, so everything is escaped; a link is made only for
http(s) URLs, never for other schemes.
"""

import json
import re
from urllib.parse import quote, urlencode, urlsplit

from datasette import hookimpl
from markupsafe import Markup

STATUSES = {"confirmed", "secondary", "unverified", "contradicted", "derived", "disclosed", "partial", "absent"}
REF_COLUMNS = {"patterns": "patterns", "topics": "omissions", "evidence": "claims", "inputs": "claims"}
# Columns of query results that hold a claim's report/claim reference: each links to the claim's page.
CLAIM_REF_COLUMNS = {"ref", "claim", "x_claim", "y_claim", "what"}
URL_COLUMNS = {"url", "source_url"}
NAV = [("/", "home"), ("/claims", "claims"), ("/omissions", "omissions"), ("/graph", "graph"),
       ("/patterns", "patterns"), ("/charts", "charts")]


def _is_http(value):
    return isinstance(value, str) and value.startswith(("https://", "http://")) and not any(c.isspace() for c in value)


def short_url(url, limit=48):
    """host/path of an http(s) URL, cut to `limit` characters: the full URL stays in the link and its title."""
    parts = urlsplit(url)
    text = (parts.netloc + parts.path).rstrip("/") or url
    return text if len(text) <= limit else text[: limit - 1] + "…"


def claim_url(datasette, ref):
    return datasette.urls.row("kb", "claims", _quote_pk(datasette, ref))


def _url_link(value):
    return Markup('<a class="kb-url" href="{0}" title="{0}" rel="nofollow noopener noreferrer">{1}</a>').format(
        value, short_url(value))


@hookimpl
def render_cell(value, column, table, database, datasette):
    if database != "kb" or not isinstance(value, str):
        return None
    if column in ("status", "declared", "audited") and value in STATUSES:
        return Markup('<span class="kb-status kb-{0}" title="{0}">{0}</span>').format(value)
    if column in URL_COLUMNS and _is_http(value):
        return _url_link(value)
    # In query results (table is None) a claim reference links to the claim; tables link their keys already.
    if table is None and column in CLAIM_REF_COLUMNS and re.fullmatch(r"[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*", value):
        return Markup('<a href="{0}">{1}</a>').format(claim_url(datasette, value), value)
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
def extra_template_vars(template, database, table, view_name, request, datasette):
    """The staleness limit the build used, for pages that state it; the nav bar; the citation decision for a
    claim's page; examples for canned queries."""

    async def inner():
        out = {"kb_nav": NAV}
        try:
            # the staleness limit the build used (the vocabulary's stale_after_days), for pages that state it
            rows = await datasette.get_database("kb").execute(
                "select value from _meta where key = 'stale_after_days'")
            out["stale_after_days"] = rows.first()[0] if rows.first() else "?"
        except Exception:  # no database yet: the pages still render
            out["stale_after_days"] = "?"
        if request is None or database != "kb":
            return out
        db = datasette.get_database("kb")
        if view_name == "row" and table == "claims":
            from datasette.utils import tilde_decode

            ref = tilde_decode(request.url_vars.get("pks", ""))
            out["kb_cite"] = await cite_decision(db, ref)
        if template.startswith("query"):
            name = request.path.rstrip("/").rsplit("/", 1)[-1]
            out["kb_examples"] = await query_examples(db, name)
        return out

    return inner


# The citation decision is kb build's, made by kb cite's rule: the `citable` column and, when a claim may not be
# cited, kb cite's reason in `not_citable_because`.


_NAMED = re.compile(r"(?<![\w/-])([a-z0-9][a-z0-9-]*(?:/[a-z0-9][a-z0-9-]*)?)(?![\w/-])")


async def correcting_claims(db, ref):
    """The citable claims a refused claim's note names, by id in the same record or as report/claim: where
    the records point a reader who would have cited it (a contradicted claim's note says what the source says
    instead, and names the claim that has it)."""
    rows = await _rows(db, "select report, note from claims where ref = :r", {"r": ref})
    if not rows or not rows[0]["note"]:
        return []
    report, note = rows[0]["report"], rows[0]["note"]
    named = [t if "/" in t else f"{report}/{t}" for t in _NAMED.findall(note)]
    named = [r for r in dict.fromkeys(named) if r != ref]
    if not named:
        return []
    found = await _rows(db, """select ref, statement, figure, status, citation from claims
        where citable = 1 and ref in (select value from json_each(:refs))""", {"refs": json.dumps(named)})
    order = {r: i for i, r in enumerate(named)}
    return sorted(found, key=lambda r: order[r["ref"]])


async def cite_decision(db, ref):
    rows = await _rows(db, "select citable, not_citable_because from claims where ref = :r", {"r": ref})
    if not rows:
        return None
    citable = bool(rows[0]["citable"])
    why = "" if citable else (rows[0]["not_citable_because"] or "kb cite refuses it")
    return {"citable": citable, "why": why, "instead": [] if citable else await correcting_claims(db, ref)}


# Canned queries: the values a parameter can take, as links, so a query never opens on a bare box.

async def query_examples(db, name):
    if name == "claims_for_pattern":
        return {"pattern": [r["id"] for r in await _rows(db, "select id from patterns order by rowid")]}
    if name == "reports_omitting":
        return {"omission": [r["id"] for r in await _rows(db, "select id from omissions order by rowid")]}
    if name == "stale_checks":
        return {"days": ["90", "180", "365"]}
    if name == "claim_impact":
        # the claims whose correction touches most derived figures
        rows = await _rows(db, """select substr(target, 7) as claim, count(*) as n from graph_edges
            where relation = 'derived_from' group by target order by n desc, target limit 4""")
        return {"claim": [r["claim"] for r in rows]}
    return {}


@hookimpl
def register_routes():
    return [
        (r"^/robots\.txt$", robots_txt),
        (r"^/claims$", _busy_is_503(claims_page)),
        (r"^/omissions$", _busy_is_503(omissions_page)),
        (r"^/patterns$", _busy_is_503(patterns_index)),
        (r"^/patterns/(?P<pattern>[a-z0-9-]+)$", _busy_is_503(pattern_page)),
        (r"^/graph$", _busy_is_503(graph_page)),
        (r"^/graph/report/(?P<report>[a-z0-9-]+)\.json$", _busy_is_503(graph_report_json)),
        (r"^/charts$", _busy_is_503(charts_index)),
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


async def _page(datasette, request, template, context):
    from datasette.utils.asgi import Response

    return Response.html(await datasette.render_template(template, context, request=request))


# Evidence for a pattern: the claims by which a report backs it with figures of its own. A confirmed claim
# counts; so does a citable derived figure computed only from the report's own claims. Contradicted and
# unverified claims do not, nor does the article (its figures are unverified, or derived from the reports'),
# and a report counts once however many claims it has.
EVIDENCE_SQL = """select cp.pattern, cp.report, cp.claim from claim_patterns cp join claims c on c.ref = cp.claim
  where c.status = 'confirmed' or (c.status = 'derived' and c.citable = 1 and not exists (
    select 1 from derived_checks d, json_each(d.inputs) i
    where d.claim = c.ref and substr(i.value, 1, length(c.report) + 1) != c.report || '/'))"""

PATTERNS_SQL = f"""select p.id, p.title, p.description,
    (select count(distinct e.report) from ({EVIDENCE_SQL}) e where e.pattern = p.id) as strength,
    (select count(*) from ({EVIDENCE_SQL}) e where e.pattern = p.id) as evidence,
    (select count(*) from claim_patterns cp where cp.pattern = p.id) as claims,
    (select count(distinct cp.report) from claim_patterns cp where cp.pattern = p.id) as reports
  from patterns p order by p.rowid"""


# The reading view of the claims: the columns a reader wants, a search ranked by relevance.

PAGE_SIZE = 50
READING_FILTERS = {"status": "c.status = :status", "report": "c.report = :report", "citable": "c.citable = :citable"}


def fts_query(text):
    """Words as FTS5 phrases (as Datasette's escape_fts): a user's quotes and operators are not syntax."""
    words = [w.replace('"', "") for w in text.split()]
    return " ".join(f'"{w}"' for w in words if w)


async def claims_page(datasette, request):
    db = datasette.get_database("kb")
    q = request.args.get("q", "").strip()
    chosen = {k: request.args.get(k) for k in READING_FILTERS if request.args.get(k)}
    try:
        page = max(1, int(request.args.get("page", "1")))
    except ValueError:
        page = 1
    where = [READING_FILTERS[k] for k in chosen]
    params = dict(chosen)
    join = ""
    if q and fts_query(q):
        join = "join (select rowid as id, rank from claims_fts where claims_fts match :q) f on f.id = c.rowid"
        params["q"] = fts_query(q)
    where_sql = ("where " + " and ".join(where)) if where else ""
    order = "f.rank, c.ref" if join else "r.published, c.report, c.rowid"
    rows = await _rows(db, f"""select c.ref, c.report, r.title as report_title, c.statement, c.figure, c.status,
          c.citable, s.title as source_title, s.url as source_url, c.locator, c.verified
        from claims c {join} join reports r on r.id = c.report left join sources s on s.ref = c.source
        {where_sql} order by {order} limit {PAGE_SIZE + 1} offset {(page - 1) * PAGE_SIZE}""", params)
    total = (await _rows(db, f"select count(*) as n from claims c {join} {where_sql}", params))[0]["n"]
    others = [READING_FILTERS[k] for k in chosen if k != "status"]  # a status's count under the other filters
    statuses = await _rows(db, f"""select c.status as value, count(*) as n from claims c {join}
        {("where " + " and ".join(others)) if others else ""} group by c.status order by n desc""", params)
    reports = await _rows(db, "select id, title from reports order by published, id")

    def link(**changes):
        args = {"q": q, **chosen, "page": page, **changes}
        args = {k: v for k, v in args.items() if v not in (None, "") and not (k == "page" and v == 1)}
        return "/claims" + ("?" + urlencode(args) if args else "")

    full = "/kb/claims" + ("?" + urlencode({"_search": q}) if q else "")
    for k, v in chosen.items():
        full += ("&" if "?" in full else "?") + urlencode({k: v})
    return await _page(datasette, request, "kb-claims.html", {
        "q": q, "chosen": chosen, "rows": rows[:PAGE_SIZE], "total": total, "page": page,
        "more": len(rows) > PAGE_SIZE, "statuses": statuses, "reports": reports, "link": link,
        "full_table": full, "by_relevance": bool(join), "claim_url": lambda ref: claim_url(datasette, ref),
        "is_http": _is_http, "short_url": short_url,
    })


async def patterns_index(datasette, request):
    db = datasette.get_database("kb")
    patterns = await _rows(db, PATTERNS_SQL)
    charts = await _rows(db, "select id, title, pattern from charts order by rowid")
    return await _page(datasette, request, "kb-patterns.html", {"patterns": patterns, "charts": charts})


async def pattern_page(datasette, request):
    """One pattern: its evidence (claims and the reports they come from), its strength, shared omissions."""
    from datasette.utils.asgi import NotFound

    db = datasette.get_database("kb")
    pattern_id = request.url_vars["pattern"]
    found = [p for p in await _rows(db, PATTERNS_SQL) if p["id"] == pattern_id]
    if not found:
        raise NotFound(f"No pattern {pattern_id}")
    claims = await _rows(db, f"""select c.ref, c.report, c.statement, c.figure, c.status, r.title as report_title,
          c.ref in (select claim from ({EVIDENCE_SQL}) e where e.pattern = :p) as evidence
        from claim_patterns cp join claims c on c.ref = cp.claim join reports r on r.id = c.report
        where cp.pattern = :p order by evidence desc, r.published, c.ref""", {"p": pattern_id})
    backing = sorted({c["report_title"] for c in claims if c["evidence"]})
    shared = await _rows(db, f"""select o.id as omission, o.title,
          sum(d.status = 'absent') as absent, sum(d.status = 'partial') as partial,
          sum(d.status = 'disclosed') as disclosed
        from omissions o left join disclosures d on d.omission = o.id
          and d.report in (select report from ({EVIDENCE_SQL}) e where e.pattern = :p)
        group by o.id order by o.rowid""", {"p": pattern_id})
    charts = await _rows(db, "select id, title from charts where pattern = :p order by rowid", {"p": pattern_id})
    others = await _rows(db, "select id, title from patterns order by rowid")
    return await _page(datasette, request, "pattern.html", {
        "pattern": found[0], "claims": claims, "backing": backing, "shared": shared, "charts": charts,
        "patterns": others, "claim_url": lambda ref: claim_url(datasette, ref),
    })


async def graph_page(datasette, request):
    """The pattern graph, drawn in the browser by Cytoscape.js: patterns and the reports that back them;
    a click focuses a pattern's or a report's neighbourhood."""
    db = datasette.get_database("kb")
    patterns = await _rows(db, PATTERNS_SQL)
    reports = await _rows(db, """select id, title, organization from reports
        where id in (select report from claim_patterns) order by published, id""")
    links = await _rows(db, f"""select cp.report, cp.pattern, count(*) as claims,
          count(e.claim) as evidence
        from claim_patterns cp left join ({EVIDENCE_SQL}) e on e.claim = cp.claim and e.pattern = cp.pattern
        group by cp.report, cp.pattern order by cp.report, cp.pattern""")
    return await _page(datasette, request, "graph.html", {
        "patterns": patterns, "reports": reports,
        "data": {"patterns": patterns, "reports": reports, "links": links},
    })


async def graph_report_json(datasette, request):
    """A report's claims that support a pattern, for the graph's focus on that report."""
    from datasette.utils.asgi import NotFound, Response

    db = datasette.get_database("kb")
    report = request.url_vars["report"]
    if not await _rows(db, "select 1 from reports where id = :r", {"r": report}):
        raise NotFound(f"No report {report}")
    claims = await _rows(db, f"""select c.ref, c.id, c.statement, c.figure, c.status,
          (select json_group_array(pattern) from claim_patterns x where x.claim = c.ref) as patterns,
          c.ref in (select claim from ({EVIDENCE_SQL}) e) as evidence
        from claims c where c.report = :r and c.ref in (select claim from claim_patterns)
        order by c.rowid""", {"r": report})
    for c in claims:
        c["patterns"] = json.loads(c["patterns"])
        c["url"] = claim_url(datasette, c["ref"])
    return Response.json({"report": report, "claims": claims})


# Charts: the points come from chart_points (what kb build found in the claims); how a chart is drawn is the
# site's choice, in metadata.yaml (plugins: kb_site: charts), e.g. failures per day divided by the GPU count.

CHART_POINTS_SQL = """select p.report, r.title as report_title, p.x, p.y, p.x_claim, p.y_claim,
    p.x_figure, p.y_figure, yc.unit as y_unit, yc.statement as y_statement, yc.status as y_status,
    yc.citation as y_citation, xc.citation as x_citation, yc.citable * xc.citable as citable
  from chart_points p join reports r on r.id = p.report
    join claims yc on yc.ref = p.y_claim join claims xc on xc.ref = p.x_claim
  where p.chart = :c order by p.x, p.report"""


def _chart_shown(datasette, chart_id):
    return (datasette.plugin_config("kb_site") or {}).get("charts", {}).get(chart_id, {})


async def charts_index(datasette, request):
    db = datasette.get_database("kb")
    charts = await _rows(db, """select c.id, c.title, c.description, c.pattern,
        (select count(*) from chart_points p where p.chart = c.id) as points from charts c order by c.rowid""")
    for c in charts:
        c.update({k: v for k, v in _chart_shown(datasette, c["id"]).items() if k in ("title", "description")})
    return await _page(datasette, request, "kb-charts.html", {"charts": charts})


async def chart_page(datasette, request):
    """A cross-report chart drawn by Vega-Lite from the chart_points rows; each point links to its claim."""
    from datasette.utils.asgi import NotFound

    db = datasette.get_database("kb")
    chart_id = request.url_vars["chart"]
    found = await _rows(db, "select * from charts where id = :c", {"c": chart_id})
    if not found:
        raise NotFound(f"No chart {chart_id}")
    c = found[0]
    shown = _chart_shown(datasette, chart_id)
    per_x = shown.get("measure") == "y per x"
    points = await _rows(db, CHART_POINTS_SQL, {"c": chart_id})
    for p in points:
        p["url"] = claim_url(datasette, p["y_claim"])
        p["x_url"] = claim_url(datasette, p["x_claim"])
        # what the y figure counts: its unit as written, less the axis's "per day" (series of one measure)
        p["series"] = re.sub(r"\s*(per|/)\s*day$", "", p["y_unit"] or "") or c["y_label"]
        p["value"] = p["y"] / p["x"] if per_x and p["x"] else p["y"]
    chart = {"id": c["id"], "title": shown.get("title", c["title"]), "pattern": c["pattern"],
             "description": shown.get("description", c["description"]),
             "x": {"label": c["x_label"], "log": bool(c["x_log"])},
             "y": {"label": shown.get("y_label", c["y_label"]), "log": bool(c["y_log"])},
             "per_x": per_x, "series_title": shown.get("series_title", "Counted")}
    return await _page(datasette, request, "chart.html", {"chart": chart, "points": points,
                                                          "spec_data": {"chart": chart, "points": points}})


async def omissions_page(datasette, request):
    """The omission heatmap: reports × omissions, coloured by the recorded judgement."""
    db = datasette.get_database("kb")
    omissions = (await _query(db, "select id, title, description from omissions order by rowid")).rows
    reports = (await _query(db,
        "select id, title, organization from reports where id in (select report from disclosures) "
        "order by published, id")).rows
    cells = await _rows(db, """select d.report, d.omission, d.status, d.note, v.audited
        from disclosures d left join verdicts v on v.report = d.report and v.omission = d.omission""")
    grid = {(c["report"], c["omission"]): c for c in cells}
    return await _page(datasette, request, "omissions.html",
                       {"omissions": omissions, "reports": reports, "grid": grid})
