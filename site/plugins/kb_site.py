"""Datasette plugin for report-claims: status badges, safe links, the stylesheet.

Every value here comes from contributors' records, so everything is escaped; a link is made only for
http(s) URLs, never for other schemes.
"""

import json

from datasette import hookimpl
from markupsafe import Markup, escape

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
def register_routes():
    return [(r"^/omissions$", omissions_page)]


async def omissions_page(datasette, request):
    """The omission heatmap: reports × omissions, coloured by the recorded judgement."""
    from datasette.utils.asgi import Response

    db = datasette.get_database("kb")
    omissions = (await db.execute("select id, title, description from omissions order by rowid")).rows
    reports = (await db.execute(
        "select id, title, organization from reports where id in (select report from disclosures) "
        "order by published, id")).rows
    cells = (await db.execute("select report, omission, status, note from disclosures")).rows
    grid = {(c["report"], c["omission"]): c for c in cells}
    html = await datasette.render_template(
        "omissions.html", {"omissions": omissions, "reports": reports, "grid": grid}, request=request
    )
    return Response.html(html)
