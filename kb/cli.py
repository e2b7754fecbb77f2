"""The `kb` command: a thin click layer over the library. Exit codes: 0 ok, 1 problems found, 2 bad input."""

from __future__ import annotations

import json
import socket
import sys
from contextlib import contextmanager
from pathlib import Path

import click

from . import clock, locate
from .options import CLAIMS_OPTION, FORMAT_TEXT_JSON, MAX_AGE_OPTION, TODAY_OPTION
from .cite import Index, figure, render_citation
from .docs import as_json_problems, check_document, render_document
from .fmt import format_text
from .load import YamlError, load_vocabulary, record_files, vocabulary_path
from .model import record_json_schema
from .pipeline import validate_files, validate_kb
from .plan import PlanError, checkpoint_plan, failure_rate
from .problems import plural, under_github_actions
from .store import BuildError, build as run_build
from .template import TemplateError, new_record_text
from .units import index as unit_index

# Exit status of `kb serve` when the port is taken (documented in --help and the README).
PORT_BUSY = 2


class Failure(click.ClickException):
    """A command that ends with a message on stderr and an exit status: 1 problems found, 2 bad input."""

    def __init__(self, message: str, exit_code: int = 1):
        ctx = click.get_current_context(silent=True)
        super().__init__(f"{ctx.command_path}: {message}" if ctx else message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(self.format_message(), err=True)


@click.group(name="kb", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="report-claims")
def cli() -> None:
    """report-claims: the quantified claims of large-model training reports, checked, with sources.

    Records live in claims/ (one YAML file per report, format v1), found in the current folder or the nearest
    parent, as git finds a repository. Start with `kb validate`.
    """


@contextmanager
def progress_bar(label: str):
    """A progress bar on a terminal (stderr), nothing otherwise."""
    if not sys.stderr.isatty():
        yield None
        return

    def wrap(items):
        items = list(items)
        if len(items) < 20:
            return items
        return _iter_bar(items, label)

    yield wrap


def _iter_bar(items, label):
    with click.progressbar(items, label=label, file=sys.stderr) as bar:
        yield from bar


def _kb(claims_dir, must_exist: bool = True) -> locate.Location:
    """The knowledge base a command works on, or exit 2 naming what was looked for."""
    found = locate.find(claims_dir)
    if found is None:
        raise Failure(f"no knowledge base here: no claims/ folder in {Path.cwd()} or any folder above it; give "
                      f"--claims DIR", 2)
    if must_exist and not found.claims.is_dir():
        raise Failure(f"{found.claims}: no such folder", 2)
    return found


def _echo_problems(problems, err: bool = False) -> None:
    github = under_github_actions()
    for p in problems:
        click.echo(p.github() if github else str(p), err=err)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@CLAIMS_OPTION
@click.option(
    "--db", "db_path", default=None, type=click.Path(dir_okay=False),
    help="With PATHS: the database `kb build` wrote from the knowledge base, read for the records whose files have "
         "not changed since (much quicker on a large knowledge base); ignored when missing or built from another "
         "vocabulary or version [default: site/kb.db beside claims/].")
@FORMAT_TEXT_JSON
@click.option("--strict", is_flag=True, help="Treat warnings (a claim without source, a near duplicate) as problems.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the units that are kept as written (not normalized).")
@TODAY_OPTION
def validate(paths: tuple[str, ...], claims_dir, db_path, fmt: str, strict: bool, verbose: bool, today) -> None:
    """Check record files: every problem in every file, as file:line:col: CODE: message (field).

    PATHS are files or folders (default: the knowledge base's claims/ folder). Records already in the knowledge
    base serve as context, so a formula may refer to their claims (and a new report is compared with them).
    Under GitHub Actions (GITHUB_ACTIONS=true) problems are printed as ::error annotations. The problem codes
    (KB101 ...) are listed in CONTRIBUTING.md.

    Exit status: 0 no problems, 1 problems found, 2 a path cannot be read (missing, not UTF-8) or no knowledge
    base was found.
    """
    where = _kb(claims_dir, must_exist=not paths)
    with progress_bar("Validating") as bar:
        if paths:
            result = validate_files(paths, where.claims, today=clock.today(today), progress=bar,
                                    db=db_path or where.database)
        else:
            result = validate_kb(where.claims, today=clock.today(today), progress=bar)
    failing = [p for p in result.problems if p.severity == "error" or strict]
    code = 2 if result.unreadable else 1 if failing else 0
    units = result.checked.unnormalized_units if result.checked else {}
    if fmt == "json":
        click.echo(json.dumps({
            "ok": code == 0, "files": result.loaded.files, "records": len(result.loaded.records),
            "claims": result.claims, "problems": [p.as_dict() for p in result.problems],
            "units_not_normalized": dict(units),
        }, indent=2, default=str))
        sys.exit(code)
    _echo_problems(result.problems)
    if units:
        if verbose:
            listed = ", ".join(f"{u!r}" for u in sorted(units))
            click.echo(f"note: units kept as written (not in the vocabulary, so not normalized): {listed}", err=True)
        else:
            click.echo(f"note: {plural(len(units), 'unit')} kept as written (not in the vocabulary, so not "
                       f"normalized); --verbose lists them", err=True)
    errors = len(result.errors)
    click.echo(f"{plural(result.loaded.files, 'file')}, {plural(len(result.loaded.records), 'record')}, "
               f"{plural(result.claims, 'claim')}: {plural(errors, 'error')}, "
               f"{plural(len(result.problems) - errors, 'warning')}", err=True)
    sys.exit(code)


DB_OPTION = click.option(
    "--db", "db_path", default=None, type=click.Path(dir_okay=False),
    help="The SQLite database to write [default: site/kb.db beside claims/].")


def _say(message: str) -> None:
    if sys.stderr.isatty():
        click.echo(message, err=True)


def _counts(counts: dict) -> str:
    names = [("reports", "report"), ("claims", "claim"), ("sources", "source"), ("patterns", "pattern"),
             ("omissions", "omission"), ("claim_patterns", "pattern link"), ("claim_topics", "topic link"),
             ("disclosures", "disclosure"), ("derived_checks", "derived check")]
    return ", ".join(plural(counts.get(k, 0), label) for k, label in names)


def _run_build(claims_dir: Path, db_path: Path, today, force: bool = False) -> None:
    try:
        with progress_bar("Validating") as bar:
            result = run_build(claims_dir, db_path, today=clock.today(today), force=force, progress=bar,
                               on_stage=lambda s: _say(f"{s}..."))
    except BuildError as e:
        _echo_problems(e.problems, err=True)
        raise Failure(str(e))
    if result.skipped:
        click.echo(f"{result.db_path} is up to date ({_counts(result.counts)})", err=True)
        return
    if result.updated:
        u = result.updated
        names = ", ".join(u[:5]) + (f" and {len(u) - 5} more" if len(u) > 5 else "")
        click.echo(f"updated {result.db_path}: {plural(len(u), 'report')} ({names}) rewritten; "
                   f"now {_counts(result.counts)}", err=True)
    elif result.refreshed:
        click.echo(f"updated {result.db_path}: the checks' ages and citability as of {result.today}; "
                   f"now {_counts(result.counts)}", err=True)
    else:
        click.echo(f"wrote {result.db_path}: {_counts(result.counts)}", err=True)
    click.echo(f"checked: all {plural(result.counts.get('claims', 0), 'claim')} of the records are in the database "
               f"(checksum {result.checksum[:16]})", err=True)


@cli.command()
@CLAIMS_OPTION
@DB_OPTION
@click.option("--force", is_flag=True, help="Rebuild from scratch even when nothing changed.")
@TODAY_OPTION
def build(claims_dir, db_path, force: bool, today) -> None:
    """Validate the records, then write the SQLite database for Datasette.

    The database is written to a temporary file beside the target and renamed over it, so a failed build
    leaves the last good database in place. When nothing that goes into it changed since the last build,
    nothing is written; when a few record files changed (or only the day), the last database is updated.

    Exit status: 0 built or up to date, 1 problems in the records (nothing written), 2 no such folder.
    """
    where = _kb(claims_dir)
    _run_build(where.claims, Path(db_path) if db_path else where.database, today, force)


def _port_free(host: str, port: int) -> bool:
    if port == 0:
        return True
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return True  # an unknown host is Datasette's to report
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError:
            return False
    return True


@cli.command()
@CLAIMS_OPTION
@click.option("--port", default=8001, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--site", "site_dir", default=None, type=click.Path(file_okay=False),
              help="The Datasette configuration directory; the database is built at SITE/kb.db "
                   "[default: site/ beside claims/].")
@TODAY_OPTION
def serve(claims_dir, port: int, host: str, site_dir, today) -> None:
    """Build the knowledge base if any record changed, then serve it with Datasette.

    Open http://127.0.0.1:8001/ to browse, facet, search and export the claims, and /omissions for the
    omission heatmap. Stop with Ctrl-C.

    Exit status: 0 stopped, 1 problems in the records (nothing served), 2 no such folder or the port is busy.
    """
    where = _kb(claims_dir)
    site = Path(site_dir) if site_dir else where.site
    if not _port_free(host, port):
        raise Failure(f"port {port} on {host} is busy (another server?); stop it or pick another with --port",
                      PORT_BUSY)
    _run_build(where.claims, site / "kb.db", today)
    # Datasette takes 150 ms to import: only the command that serves imports it.
    from datasette.cli import cli as datasette_cli

    click.echo(f"serving {site}/ on http://{host}:{port}/", err=True)
    datasette_cli.main(["serve", str(site), "--host", host, "--port", str(port)], prog_name="datasette",
                       standalone_mode=True)


def _validated(claims_dir, today=None):
    """The whole knowledge base, validated, for commands that answer from it; exit 2 without a folder, 1 with
    problems in the records."""
    where = _kb(claims_dir)
    result = validate_kb(where.claims, today=clock.today(today))
    if result.errors:
        _echo_problems(result.errors, err=True)
        raise Failure(f"{plural(len(result.errors), 'problem')} in the records; fix them first (kb validate)")
    return result


def _index(claims_dir, max_age=None, today=None) -> Index:
    today = clock.today(today)
    return Index(_validated(claims_dir, today), today=today, max_age=max_age)


@cli.group()
def graph() -> None:
    """Questions for the pattern graph: evidence, table, impact, shared, review, export.

    The graph links reports, claims, sources, the five patterns and the five omissions (see kb/graph.py).
    Exit status: 0 answered, 1 the records have problems or the id is unknown, 2 bad input.
    """


def _load_graph(claims_dir):
    # networkx takes 200 ms to import: only the graph's questions import it (kb.graph imports it lazily too).
    from .graph import build_graph

    return build_graph(_validated(claims_dir))


def _unknown(kind: str, key: str, choices) -> None:
    from rapidfuzz import process

    best = process.extractOne(key, list(choices), score_cutoff=60)
    raise Failure(f"no {kind} {key!r}" + (f"; did you mean {best[0]!r}?" if best else ""))


@graph.command()
@click.argument("pattern", required=False)
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
def evidence(pattern, claims_dir, fmt):
    """The claims and reports behind a pattern (or every pattern), and its strength: the number of
    independent reports backing it."""
    from .graph import pattern_evidence, patterns

    g = _load_graph(claims_dir)
    if pattern and pattern not in patterns(g):
        _unknown("pattern", pattern, patterns(g))
    found = [pattern_evidence(g, p) for p in ([pattern] if pattern else patterns(g))]
    if fmt == "json":
        click.echo(json.dumps([e.as_dict() for e in found], indent=2))
        return
    for e in found:
        click.echo(f"{e.pattern}: {e.title}: strength {e.strength} "
                   f"({'report' if e.strength == 1 else 'reports'}: {', '.join(e.reports) or 'none'})")
        for c in e.claims:
            click.echo(f"  {c}: {g.nodes['claim:' + c]['label']}")


@graph.command()
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
def table(claims_dir, fmt):
    """Which reports back which patterns: a report × pattern table of supporting claims."""
    from .graph import report_pattern_table

    t = report_pattern_table(_load_graph(claims_dir))
    if fmt == "json":
        click.echo(json.dumps(t, indent=2))
        return
    pats = list(next(iter(t.values()), {}))
    width = max([len(r) for r in t] + [6])
    click.echo(" " * width + "  " + "  ".join(f"{p:>17}" for p in pats))
    for r, row in t.items():
        click.echo(f"{r:<{width}}  " + "  ".join(f"{(row[p] or '·')!s:>17}" for p in pats))


@graph.command()
@click.argument("ref")
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
def impact(ref, claims_dir, fmt):
    """What a correction to a claim touches: figures derived from it (transitively), the patterns it
    supports, and the recorded verdicts that cite it. REF is report/claim."""
    from .graph import dependents

    g = _load_graph(claims_dir)
    try:
        found = dependents(g, ref)
    except KeyError:
        _unknown("claim", ref, [g.nodes[n]["key"] for n in g if g.nodes[n]["kind"] == "claim"])
    if fmt == "json":
        click.echo(json.dumps(found.as_dict(), indent=2))
        return
    click.echo(f"A correction to {ref} touches:")
    click.echo(f"  derived figures: {', '.join(found.derived) or 'none'}")
    click.echo(f"  patterns: {', '.join(found.patterns) or 'none'}")
    verdicts = [f"{r} on {o} ({s})" for r, o, s in found.verdicts]
    click.echo(f"  verdicts: {', '.join(verdicts) or 'none'}")


@graph.command()
@click.argument("pattern")
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
def shared(pattern, claims_dir, fmt):
    """Which omissions the reports behind a pattern share: per omission, how many of them disclose,
    partially disclose or omit it."""
    from .graph import patterns, shared_omissions

    g = _load_graph(claims_dir)
    if pattern not in patterns(g):
        _unknown("pattern", pattern, patterns(g))
    found = shared_omissions(g, pattern)
    if fmt == "json":
        click.echo(json.dumps({o: dict(c) for o, c in found.items()}, indent=2))
        return
    for o, c in found.items():
        parts = ", ".join(f"{c[s]} {s}" for s in ("absent", "partial", "disclosed") if c[s])
        click.echo(f"{o}: {parts or 'not judged'}")


@graph.command()
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
def review(claims_dir, fmt):
    """A review list: claims that support no pattern, and patterns backed by fewer than two reports."""
    from .graph import review as run_review

    found = run_review(_load_graph(claims_dir))
    if fmt == "json":
        click.echo(json.dumps(found.as_dict(), indent=2))
        return
    click.echo(f"patterns with weak evidence (fewer than two reports): "
               f"{', '.join(f'{p} ({n})' for p, n in found.weak_patterns) or 'none'}")
    click.echo(f"claims that support no pattern: {len(found.unlinked_claims)}")
    for c in found.unlinked_claims:
        click.echo(f"  {c}")


@graph.command(name="export")
@CLAIMS_OPTION
@click.option("--format", "fmt", type=click.Choice(["graphml", "json"]), default="graphml", show_default=True,
              help="GraphML, or node-link JSON (networkx's node_link_data).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here, not stdout.")
def export_graph(claims_dir, fmt, output):
    """The whole graph as GraphML or node-link JSON."""
    from .graph import export

    text = export(_load_graph(claims_dir), fmt)
    if output:
        Path(output).write_text(text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text)


def _search_output(idx: Index, text: str, fmt: str) -> None:
    found = idx.search(text)
    if fmt == "json":
        click.echo(json.dumps([{"ref": ref, "score": score, "figure": figure(idx.claims[ref].claim),
                                "statement": idx.claims[ref].claim.statement,
                                "status": idx.claims[ref].claim.status} for ref, score in found], indent=2))
        return
    if not found:
        raise Failure(f"no claim matches {text!r}")
    for ref, score in found:
        c = idx.claims[ref].claim
        click.echo(f"{ref}  [{c.status}] {figure(c) or '-'}: {c.statement}  ({score:.0f})")


@cli.command()
@click.argument("ref", required=False)
@CLAIMS_OPTION
@click.option("--format", "fmt", type=click.Choice(["markdown", "text", "bibtex", "json"]), default="markdown",
              show_default=True, help="How to write the citation.")
@click.option("--search", "search_text", metavar="TEXT", help="Find claims by fuzzy match instead of citing one.")
@click.option("--allow", is_flag=True, help="Cite even a contradicted, unverified or stale claim.")
@MAX_AGE_OPTION
@TODAY_OPTION
def cite(ref, claims_dir, fmt, search_text, allow, max_age, today):
    """Cite a checked figure: REF is report/claim, e.g. llama-3-405b/unexpected-interruptions.

    Prints the figure as a reader would write it, the report, the source's title and URL, the locator, the
    check date and the status; a derived figure also cites its inputs and formula. A contradicted,
    unverified or stale claim is refused with the reason, unless --allow.

    Exit status: 0 cited, 1 refused or unknown, 2 bad input.
    """
    idx = _index(claims_dir, max_age, today)
    if search_text is not None:
        _search_output(idx, search_text, "json" if fmt == "json" else "text")
        return
    if not ref:
        raise click.UsageError("give REF (report/claim) or --search TEXT")
    if idx.get(ref) is None:
        hint = idx.suggest(ref)
        raise Failure(f"no claim {ref!r}" + (f"; did you mean {hint!r}?" if hint else "; try kb cite --search TEXT"))
    ok, why = idx.citable(ref)
    if not ok and not allow:
        raise Failure(f"{ref} cannot be cited: {why} (use --allow to cite it anyway)")
    click.echo(render_citation(idx, ref, fmt))


@cli.command()
@click.argument("text")
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
def search(text, claims_dir, fmt):
    """Fuzzy search over the claims: statement, figure and reference (rapidfuzz).

    Exit status: 0 found, 1 nothing matched.
    """
    _search_output(_index(claims_dir), text, fmt)


@cli.command()
@click.argument("docs", nargs=-1, required=True, type=click.Path())
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
@MAX_AGE_OPTION
@TODAY_OPTION
def check(docs, claims_dir, fmt, max_age, today):
    """Check the figures a planning document cites with [text](kb:report/claim) links.

    Every kb: link must resolve; the number in the link text must match the knowledge base (unit-aware and
    tolerant of how people write numbers: 2.788M, 2,788K, 2.8 million; 43 min against 0.72 h); the claim must
    be citable (not contradicted, not unverified, checked within --max-age days). Problems print as
    file:line:col: CODE: message, as GitHub annotations under Actions.

    Exit status: 0 every link checks out, 1 problems found, 2 a document cannot be read.
    """
    idx = _index(claims_dir, max_age, today)
    units = unit_index(idx.validation.vocabulary)
    problems, unreadable = [], False
    for doc in docs:
        try:
            text = Path(doc).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            click.echo(f"{doc}: cannot read: {getattr(e, 'strerror', None) or e}", err=True)
            unreadable = True
            continue
        problems += check_document(doc, text, idx, units)
    if fmt == "json":
        click.echo(as_json_problems(problems))
    else:
        _echo_problems(problems)
        click.echo(f"{plural(len(docs), 'document')}: {plural(len(problems), 'problem')}", err=True)
    sys.exit(2 if unreadable else 1 if problems else 0)


@cli.command()
@click.argument("doc", type=click.Path(exists=True, dir_okay=False))
@CLAIMS_OPTION
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here, not stdout.")
@TODAY_OPTION
def render(doc, claims_dir, output, today):
    """Write DOC with its kb: links turned into links to the sources, and a footnote per figure with the
    source, locator, check date and status.

    Exit status: 0 written, 1 problems in the records, 2 bad input.
    """
    idx = _index(claims_dir, today=today)
    try:
        text = Path(doc).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise Failure(f"{doc}: cannot read: {e}", 2)
    out = render_document(text, idx)
    if output:
        Path(output).write_text(out, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(out, nl=False)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@CLAIMS_OPTION
@click.option("--check", "check_only", is_flag=True, help="Change nothing; exit 1 if a file is not formatted.")
def fmt(paths, claims_dir, check_only):
    """Rewrite records in one canonical key order and style, so diffs stay small.

    Values and comments are kept exactly as written: whole key blocks are moved, never re-serialised.
    PATHS are files or folders (default: the knowledge base's claims/ folder).

    Exit status: 0 formatted (or, with --check, nothing to change), 1 a file would change (--check) or is
    not valid YAML, 2 a path cannot be read.
    """
    where = locate.find(claims_dir) if paths else _kb(claims_dir)
    try:
        order = load_vocabulary(vocabulary_path(where.claims if where else None)).omission_ids
    except Exception:  # a broken vocabulary is kb validate's to report; keep the written order
        order = []
    files = [f for p in (paths or [where.claims]) for f in record_files(p)]
    changed, failed, unreadable = [], False, False
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            click.echo(f"{f}: cannot read: {getattr(e, 'strerror', None) or e}", err=True)
            unreadable = True
            continue
        try:
            new = format_text(text, order)
        except YamlError as e:
            where_ = f":{e.line}:{e.col}" if e.line else ""
            click.echo(f"{f}{where_}: {e.code}: {e.message}", err=True)
            failed = True
            continue
        if new != text:
            changed.append(f)
            if check_only:
                click.echo(f"{f}: not formatted (run kb fmt {f})")
            else:
                f.write_text(new, encoding="utf-8")
                click.echo(f"formatted {f}", err=True)
    if check_only:
        click.echo(f"{plural(len(files), 'file')}, {len(changed)} to format", err=True)
    sys.exit(2 if unreadable else 1 if failed or (check_only and changed) else 0)


@cli.command(name="new")
@click.argument("report_id")
@CLAIMS_OPTION
@click.option("--title", help="The report's title.")
@click.option("--organization", help="Who published the report.")
@click.option("--url", help="The report's URL (http or https).")
def new_record(report_id, claims_dir, title, organization, url):
    """Start a record: write CLAIMS/REPORT_ID.yaml from the template, with the editor modeline.

    Then replace every <placeholder> (kb validate names each one left), and run
    `kb validate --strict CLAIMS/REPORT_ID.yaml` and `kb fmt`.

    Exit status: 0 written, 1 the id exists or is not a valid id, or the URL is not http(s).
    """
    where = _kb(claims_dir, must_exist=False)
    target = where.claims / f"{report_id}.yaml"
    if target.exists() or target.with_suffix(".yml").exists():
        raise Failure(f"{target} exists already; choose another id")
    try:
        text = new_record_text(report_id, where.claims, title, organization, url)
    except TemplateError as e:
        raise Failure(str(e))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    click.echo(f"wrote {target}: replace every <placeholder>, then kb validate --strict {target}", err=True)


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here, not stdout.")
def schema(output):
    """The JSON Schema of record format v1, generated from the models (committed as
    schema/record-v1.schema.json for editors)."""
    text = json.dumps(record_json_schema(), indent=2) + "\n"
    if output:
        Path(output).write_text(text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


@cli.group()
def plan() -> None:
    """Planning arithmetic from cited figures."""


@plan.command()
@click.option("--gpus", required=True, type=click.IntRange(1), help="GPUs in the planned job.")
@click.option("--save-minutes", required=True, type=click.FloatRange(min=0, min_open=True),
              help="Minutes one checkpoint save takes.")
@click.option("--basis", default="llama-3-405b/unexpected-interruptions-per-gpu-day",
              show_default=True, help="The claim giving failures per GPU-day (report/claim).")
@CLAIMS_OPTION
@FORMAT_TEXT_JSON
@TODAY_OPTION
def checkpoint(gpus, save_minutes, basis, claims_dir, fmt, today):
    """Plan a checkpoint interval: scale a cited failure rate (per GPU-day) to --gpus, then give the MTBF,
    the Young and Daly intervals and the expected loss to saving and recomputation, citing the basis.

    Exit status: 0 planned, 1 the basis is unknown, not citable or not a per-GPU-day rate.
    """
    idx = _index(claims_dir, today=today)
    try:
        rate = failure_rate(idx, basis)
    except PlanError as e:
        raise Failure(str(e))
    p = checkpoint_plan(gpus, save_minutes, rate, basis)
    if fmt == "json":
        click.echo(json.dumps({**p.as_dict(), "citation": render_citation(idx, basis, "text")}, indent=2))
        return
    click.echo(f"Failure rate: {p.rate_per_gpu_day:.3g} per GPU-day (kb:{basis})")
    click.echo(f"At {gpus:,} GPUs: {p.failures_per_day:.3g} failures per day, MTBF {p.mtbf_hours:.2f} h "
               f"({p.mtbf_hours * 60:.0f} min)")
    click.echo(f"Checkpoint every {p.young_minutes:.0f} min (Young; Daly: {p.daly_minutes:.0f} min) "
               f"with a {save_minutes:g}-minute save")
    click.echo(f"Expected loss to saving and recomputation: {p.expected_loss_percent:.1f}% of wall-clock time")
    click.echo(f"Basis: {render_citation(idx, basis, 'text').splitlines()[0]}")


def main() -> None:
    cli(prog_name="kb")


if __name__ == "__main__":  # pragma: no cover
    main()
