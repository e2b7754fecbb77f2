"""The database `kb build` writes: every table declared once, with its columns, types and descriptions, its keys
and indexes, and the views. This module is the schema's one owner and depends on nothing else of the build:
the DDL (kb.db.write), the column descriptions of site/metadata.yaml (checked against these by a test; rewrite
them with `python -m kb.db.schema site/metadata.yaml`), the rows (kb.db.rows) and the readers (kb.db.read) all
come from here. Column types are explicit so Datasette sorts and filters figures as numbers and dates as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

# 3: columns reports.title_line, claims.not_citable_because; the claim_derivations view; verdicts keyed by provider
# 4: table reverify (the last kb reverify results), column claims.drift
# 5: an index of verdicts by provider and omission
SCHEMA_VERSION = "5"

TEXT, INTEGER, REAL = str, int, float
Key = Union[str, tuple[str, ...]]


@dataclass(frozen=True)
class Column:
    name: str
    type: type
    description: str


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    columns: list[Column]
    pk: Key
    foreign_keys: list[tuple[str, str, str]] = field(default_factory=list)  # (column, other table, other column)
    indexes: list[tuple[str, ...]] = field(default_factory=list)
    fts: tuple[str, ...] = ()  # columns of a full-text index (porter stemming)
    per_report: bool = True  # rows belong to one report (an update replaces them with the report's)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def types(self) -> dict[str, type]:
        return {c.name: c.type for c in self.columns}


# In the order they are created: a table's foreign keys point at tables above it.
TABLES: list[Table] = [
    Table(
        "reports",
        'One row per training report (or article) in the knowledge base.',
        [
            Column("id", TEXT, "The record's id, equal to its file name in claims/."),
            Column("title", TEXT, "The report's title."),
            Column("organization", TEXT, 'Who published the report.'),
            Column("published", TEXT, 'The date of the report (YYYY-MM-DD).'),
            Column("models", TEXT, 'The models the report covers (JSON list).'),
            Column("summary", TEXT, 'Why this report matters, in a paragraph.'),
            Column("claims", INTEGER, 'Number of claims recorded from this report.'),
            Column("sources", INTEGER, 'Number of sources the claims cite.'),
            Column("unsaid", TEXT, 'What the report does not say, in words (JSON list).'),
            Column("path", TEXT, 'The record file the row was built from.'),
            Column("title_line", INTEGER, "The line of the record file where the title is (for warnings about "
                                          "a report that looks like this one)."),
        ],
        pk='id',
    ),
    Table(
        "sources",
        'The documents claims are checked against. Primary is the report itself, its repository, logbook or model card; secondary is reporting that quotes it.',
        [
            Column("ref", TEXT, 'report/source id, as claims refer to it.'),
            Column("report", TEXT, 'The report whose record lists this source.'),
            Column("id", TEXT, 'The source id within its record.'),
            Column("title", TEXT, "The source's title."),
            Column("url", TEXT, 'Where the source is (http or https only).'),
            Column("path", TEXT, 'A file in this repository holding the source, where it has no public URL.'),
            Column("kind", TEXT, 'primary or secondary.'),
            Column("version", TEXT, 'The version read: arXiv vN, a commit, or the date a page shows.'),
            Column("retrieved", TEXT, "The day the source's text was read."),
            Column("sha256", TEXT, "The sha256 of the normalised text read."),
            Column("checked", TEXT, 'The day the link was last opened and found to hold.'),
            Column("age_days", INTEGER, 'Days between that check and the build.'),
            Column("note", TEXT, 'Notes on the source (how it was read, which version).'),
        ],
        pk='ref',
        foreign_keys=[('report', 'reports', 'id')],
        indexes=[('report',)],
    ),
    Table(
        "patterns",
        'The five patterns that repeat across training reports.',
        [
            Column("id", TEXT, "The pattern's id."),
            Column("title", TEXT, 'The pattern in a few words.'),
            Column("description", TEXT, 'The pattern in a sentence.'),
        ],
        pk='id',
        per_report=False,
    ),
    Table(
        "omissions",
        'The five recurring omissions, and the parts that make each one disclosed.',
        [
            Column("id", TEXT, "The omission's id."),
            Column("title", TEXT, 'The omission in a few words.'),
            Column("description", TEXT, 'What a report would have to say.'),
            Column("parts", TEXT, 'The parts that make it disclosed (JSON list).'),
            Column("questions", TEXT, 'For each part, the question a reader would put to the authors (JSON list).'),
        ],
        pk='id',
        per_report=False,
    ),
    Table(
        "claims",
        "Every quantified claim, with its figure, source, check date and status. A figure is citable when it is "
        "confirmed or secondary and its check is younger than the knowledge base's staleness limit, or derived "
        "from citable figures by a formula that checks out.",
        [
            Column("ref", TEXT, "report/claim, the claim's citable reference (as in kb cite REF)."),
            Column("report", TEXT, 'The report that makes the claim.'),
            Column("id", TEXT, 'The claim id within its record.'),
            Column("statement", TEXT, 'The claim in words.'),
            Column("figure", TEXT, 'The figure as a reader would write it ("2.788M GPU-hours").'),
            Column("value", REAL, 'The figure as a number (empty for ranges and claims without a figure).'),
            Column("low", REAL, 'The low end of the figure (equal to value when it is not a range).'),
            Column("high", REAL, 'The high end of the figure (equal to value when it is not a range).'),
            Column("value_text", TEXT, 'The figure exactly as written in the record.'),
            Column("bound", TEXT, 'exact, about, at-least or at-most.'),
            Column("unit", TEXT, 'The unit as written in the record.'),
            Column("unit_normalized", TEXT, "The vocabulary's unit the written unit was recognised as, if any."),
            Column("base_unit", TEXT, 'The base unit of value_base, low_base and high_base.'),
            Column("value_base", REAL, 'The figure in base units (e.g. 14.8 trillion tokens as 1.48e13 tokens).'),
            Column("low_base", REAL, 'The low end in base units.'),
            Column("high_base", REAL, 'The high end in base units.'),
            Column("status", TEXT, 'confirmed (checked in the original), secondary (from reporting that quotes it), unverified (stated, not confirmed), contradicted (the source says otherwise; see note) or derived (computed by formula).'),
            Column("citable", INTEGER, "1 when the figure may be cited (as kb cite decides: confirmed or secondary "
                                       "and checked within the staleness limit, or derived from citable figures)."),
            Column("not_citable_because", TEXT, "Why the figure may not be cited (as kb cite says it), when it may "
                                                "not."),
            Column("source", TEXT, 'The source the claim was checked against (report/source).'),
            Column("source_url", TEXT, "The source's URL."),
            Column("locator", TEXT, 'Where in the source (section, table, page).'),
            Column("quote", TEXT, "The source's words, verbatim."),
            Column("quote_kind", TEXT, "text (the source's sentences) or table (a table row, cells joined by |)."),
            Column("no_quote", TEXT, "Why a checked figure has no verbatim quote (read from a chart, say)."),
            Column("verified", TEXT, 'The day the figure was checked against the source.'),
            Column("age_days", INTEGER, 'Days between that check and the build.'),
            Column("note", TEXT, 'Notes; for a contradicted claim, what the source says instead.'),
            Column("formula", TEXT, 'For a derived claim, the arithmetic over other claims (recomputed on every build).'),
            Column("tolerance", REAL, 'Relative tolerance for the formula check.'),
            Column("patterns", TEXT, 'The patterns this claim supports (JSON list).'),
            Column("topics", TEXT, 'The omissions this claim discloses something about (JSON list).'),
            Column("citation", TEXT, 'A ready-to-paste citation with source, locator, check date and status.'),
            Column("drift", TEXT, "Why the figure has drifted, when it has: the last kb reverify did not find its "
                                  "quote in the source's current text (missing or moved), or, for a derived figure, "
                                  "in an input's. See table reverify."),
        ],
        pk='ref',
        foreign_keys=[('report', 'reports', 'id'), ('source', 'sources', 'ref')],
        indexes=[('report',), ('status',), ('unit',), ('verified',), ('source',), ('citable',)],
        fts=("statement", "quote", "note"),
    ),
    Table(
        "reverify",
        "The last kb reverify: for each quoted claim, whether its quote is still in its source's text. found (where), "
        "moved (only in another version), missing (in no text held: drift), source-changed (still there, but the "
        "source is a new version or another text than the record's sha256), unreachable (with the HTTP status).",
        [
            Column("claim", TEXT, "The quoted claim (report/claim)."),
            Column("report", TEXT, "The report whose record holds it."),
            Column("source", TEXT, "The source the quote was looked for in (report/source)."),
            Column("checked", TEXT, "The day of the check (YYYY-MM-DD)."),
            Column("result", TEXT, "found, moved, missing, source-changed or unreachable."),
            Column("version", TEXT, "The version of the text checked (arXiv vN, a commit, a page's date), when known; "
                                    "for moved, the version the quote was found in."),
            Column("found_in", TEXT, "The page or section where the quote was found."),
            Column("http_status", INTEGER, "The HTTP status of an unreachable source, when the server answered."),
            Column("detail", TEXT, "What was found, in words."),
        ],
        pk='claim',
        foreign_keys=[('claim', 'claims', 'ref'), ('report', 'reports', 'id'), ('source', 'sources', 'ref')],
        indexes=[('result',), ('report',)],
    ),
    Table(
        "claim_patterns",
        'Which claims support which pattern.',
        [
            Column("claim", TEXT, 'The supporting claim (report/claim).'),
            Column("pattern", TEXT, 'The pattern it supports.'),
            Column("report", TEXT, 'The report the claim comes from.'),
        ],
        pk=('claim', 'pattern'),
        foreign_keys=[('claim', 'claims', 'ref'), ('pattern', 'patterns', 'id'), ('report', 'reports', 'id')],
        indexes=[('pattern',)],
    ),
    Table(
        "claim_topics",
        'Which claims disclose something about which omission.',
        [
            Column("claim", TEXT, 'The claim (report/claim).'),
            Column("omission", TEXT, 'The omission it says something about.'),
            Column("report", TEXT, 'The report the claim comes from.'),
        ],
        pk=('claim', 'omission'),
        foreign_keys=[('claim', 'claims', 'ref'), ('omission', 'omissions', 'id'), ('report', 'reports', 'id')],
        indexes=[('omission',)],
    ),
    Table(
        "disclosures",
        "The reviewers' judgement of each report on each omission: disclosed, partial or absent, with the reason and the claims that are evidence.",
        [
            Column("report", TEXT, 'The report judged.'),
            Column("omission", TEXT, 'The omission judged.'),
            Column("status", TEXT, 'disclosed (its parts are given with figures), partial (mentioned, or only some parts), absent (nothing said).'),
            Column("note", TEXT, 'Why, with where in the report.'),
            Column("evidence", TEXT, 'The claims that are evidence (JSON list of report/claim).'),
            Column("locator", TEXT, 'Where in the report the evidence is.'),
        ],
        pk=('report', 'omission'),
        foreign_keys=[('report', 'reports', 'id'), ('omission', 'omissions', 'id')],
        indexes=[('omission', 'status')],
    ),
    Table(
        "verdicts",
        "For every report and omission, the reviewers' declared judgement next to the auditor's verdict from the report's claims; agree is 0 where they differ.",
        [
            Column("report", TEXT, 'The report.'),
            Column("omission", TEXT, 'The omission.'),
            Column("declared", TEXT, "The judgement recorded in the report's disclosures (empty when none was recorded)."),
            Column("audited", TEXT, "The auditor's verdict from the report's claims (disclosed, partial or absent)."),
            Column("agree", INTEGER, '1 when they agree, 0 when they differ, empty when nothing was declared.'),
            Column("evidence", TEXT, 'The claims the auditor took as evidence (JSON list).'),
            Column("missing", TEXT, 'The parts of the omission the auditor found no figure for (JSON list).'),
            Column("provider", TEXT, 'Which verdict provider produced the verdict (audit is the auditor).'),
        ],
        pk=('report', 'omission', 'provider'),
        foreign_keys=[('report', 'reports', 'id'), ('omission', 'omissions', 'id')],
        # covers the cohort counts of `audit FILE`, which otherwise read every row past its evidence
        indexes=[('provider', 'omission', 'report', 'declared', 'audited')],
    ),
    Table(
        "graph_nodes",
        "The pattern graph's nodes: reports, claims, sources, patterns and omissions. Ids are kind:key.",
        [
            Column("id", TEXT, 'The node id, kind:key (e.g. claim:llama-3-405b/unexpected-interruptions).'),
            Column("kind", TEXT, 'report, claim, source, pattern or omission.'),
            Column("key", TEXT, 'The id of the thing the node stands for.'),
            Column("label", TEXT, 'Its title or statement.'),
        ],
        pk='id',
        indexes=[('kind',)],
        per_report=False,
    ),
    Table(
        "graph_edges",
        "The pattern graph's typed edges: report states claim, claim cites source, claim supports pattern, claim derived_from claim, report discloses / partially / omits omission.",
        [
            Column("source", TEXT, 'The node the edge starts from.'),
            Column("target", TEXT, 'The node it points to.'),
            Column("relation", TEXT, 'states, cites, supports, derived_from, discloses, partially or omits.'),
            Column("evidence", TEXT, 'For a judgement edge, the claims that are evidence (comma-separated report/claim).'),
        ],
        pk=('source', 'target'),
        foreign_keys=[('source', 'graph_nodes', 'id'), ('target', 'graph_nodes', 'id')],
        indexes=[('target',), ('relation',)],
        per_report=False,
    ),
    Table(
        "charts",
        'The cross-report charts defined in the vocabulary; each is drawn at /charts/ID.',
        [
            Column("id", TEXT, "The chart's id (its page is /charts/ID)."),
            Column("pattern", TEXT, 'The pattern whose claims make the points.'),
            Column("title", TEXT, "The chart's title."),
            Column("description", TEXT, 'What the chart shows and which claims qualify.'),
            Column("x_base", TEXT, 'The base unit of the x axis.'),
            Column("x_label", TEXT, 'The x axis label.'),
            Column("x_log", INTEGER, '1 when the x axis is logarithmic.'),
            Column("y_base", TEXT, 'The base unit of the y axis.'),
            Column("y_label", TEXT, 'The y axis label.'),
            Column("y_log", INTEGER, '1 when the y axis is logarithmic.'),
        ],
        pk='id',
        foreign_keys=[('pattern', 'patterns', 'id')],
        per_report=False,
    ),
    Table(
        "chart_points",
        'The points of the cross-report charts (e.g. /charts/failure-scaling), one per report and chart, from the claims that carry both figures.',
        [
            Column("chart", TEXT, "The chart (an id from the vocabulary's charts)."),
            Column("report", TEXT, 'The report the point stands for.'),
            Column("x", REAL, "The x figure in the axis's base unit."),
            Column("y", REAL, "The y figure in the axis's base unit."),
            Column("x_claim", TEXT, 'The claim giving x.'),
            Column("y_claim", TEXT, 'The claim giving y.'),
            Column("x_figure", TEXT, 'The x figure as written.'),
            Column("y_figure", TEXT, 'The y figure as written.'),
        ],
        pk=('chart', 'report'),
        foreign_keys=[('chart', 'charts', 'id'), ('report', 'reports', 'id'), ('x_claim', 'claims', 'ref'), ('y_claim', 'claims', 'ref')],
    ),
    Table(
        "_files",
        'The record files this database was built from, as the build read them; the next build reads again only the files that differ, and one-record commands (kb validate FILE, audit FILE) take the rest of the knowledge base from here.',
        [
            Column("path", TEXT, 'The record file, relative to the claims folder.'),
            Column("sha256", TEXT, 'The sha256 of the bytes the build read.'),
            Column("stamp", TEXT, 'Size and modification time (size:mtime_ns) seen before reading; a file with the same stamp is not read again. Empty when the file was modified within two seconds of the build.'),
            Column("report", TEXT, 'The report the file holds.'),
            Column("checksum", TEXT, "sha256 over the report's claims (reference, figure as written, low, high), checked against the database after writing."),
            Column("claims", INTEGER, 'How many claims the report has.'),
        ],
        pk='path',
        foreign_keys=[('report', 'reports', 'id')],
    ),
    Table(
        "derived_checks",
        "Every derived claim's formula, recomputed on this build, against the figure the claim states.",
        [
            Column("claim", TEXT, 'The derived claim (report/claim).'),
            Column("report", TEXT, 'The report whose record holds it.'),
            Column("formula", TEXT, 'The formula over other claims.'),
            Column("computed", REAL, "What the formula gives with the claims' figures."),
            Column("stated", TEXT, 'The figure the claim states.'),
            Column("tolerance", REAL, 'Relative tolerance allowed.'),
            Column("within_tolerance", INTEGER, '1 when the computed figure agrees with the stated one.'),
            Column("inputs", TEXT, 'The claims the formula uses (JSON list).'),
            Column("error", TEXT, 'Why the formula could not be computed, if it could not.'),
        ],
        pk='claim',
        foreign_keys=[('claim', 'claims', 'ref'), ('report', 'reports', 'id')],
        indexes=[('report',)],
    ),
]

_BY_NAME = {t.name: t for t in TABLES}


def table(name: str) -> Table:
    return _BY_NAME[name]


META = "_meta"  # key/value: how and when the database was built (kb.db.write)

# Views. omission_matrix has a column per omission of the vocabulary, so it is made from the omission ids.
VIEWS: dict[str, str] = {
    "pattern_support": """select p.id as pattern, p.title,
  count(distinct cp.report) as reports,
  count(distinct cp.claim) as claims,
  (select group_concat(report, ', ') from (select distinct report from claim_patterns x
     where x.pattern = p.id order by report)) as report_ids
from patterns p left join claim_patterns cp on cp.pattern = p.id
group by p.id order by reports desc, claims desc""",
    # a derived claim and each claim its formula uses, as report/claim (the graph's node ids carry a kind prefix)
    "claim_derivations": """select s.key as claim, t.key as input
from graph_edges e join graph_nodes s on s.id = e.source join graph_nodes t on t.id = e.target
where e.relation = 'derived_from'""",
}

VIEW_DESCRIPTIONS = {
    "omission_matrix": "A row per report, a column per omission, with the reviewers' judgement. The same as a "
                       "heatmap on /omissions.",
    "pattern_support": "How many reports and claims back each pattern.",
    "claim_derivations": "Each derived claim and the claims its formula uses (report/claim).",
}


def omission_matrix_sql(omission_ids: list[str]) -> str:
    """A row per judged report, a column per omission."""
    cols = ",\n  ".join(f"max(case when d.omission = '{o}' then d.status end) as \"{o}\"" for o in omission_ids)
    return (
        "select r.id as report, r.title, r.organization,\n  " + cols + "\n"
        "from reports r left join disclosures d on d.report = r.id\n"
        "where exists (select 1 from disclosures x where x.report = r.id)\n"
        "group by r.id order by r.published"
    )


def check_site_metadata(metadata: dict) -> list[str]:
    """Where site/metadata.yaml's column descriptions differ from the schema's (empty when they agree)."""
    tables = metadata["databases"]["kb"]["tables"]
    out = []
    for t in TABLES:
        written = (tables.get(t.name) or {}).get("columns") or {}
        wanted = {c.name: c.description for c in t.columns}
        if written != wanted:
            out.append(f"{t.name}: columns differ from kb.db.schema")
    return out


def with_schema(metadata: dict) -> dict:
    """site/metadata.yaml's data with every table's columns described as the schema describes them."""
    tables = metadata["databases"]["kb"].setdefault("tables", {})
    for t in TABLES:
        tables.setdefault(t.name, {"description": t.description})["columns"] = {c.name: c.description
                                                                                 for c in t.columns}
    for name, description in VIEW_DESCRIPTIONS.items():
        tables.setdefault(name, {})["description"] = description
    return metadata


def _main(argv: Optional[list[str]] = None) -> None:
    import sys

    import yaml

    def block(dumper, text):  # multi-line text (the canned queries' SQL) as a literal block, as people write it
        style = "|" if "\n" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    yaml.add_representer(str, block, Dumper=yaml.SafeDumper)
    path = (argv or sys.argv[1:] or ["site/metadata.yaml"])[0]
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(with_schema(data), f, sort_keys=False, allow_unicode=True, width=120)


if __name__ == "__main__":  # pragma: no cover
    _main()
