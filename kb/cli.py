"""The `kb` command: a thin click layer over the library. Exit codes: 0 ok, 1 problems found, 2 bad input."""

from __future__ import annotations

import json
import socket
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import clock, locate
from .options import CACHE_OPTION, CLAIMS_OPTION, FORMAT_TEXT_JSON, MAX_AGE_OPTION, TODAY_OPTION
from .problems import plural, under_github_actions

if TYPE_CHECKING:
    from .cite import Index

# Each command imports what it uses when it runs: `kb validate FILE` does not pay for the build, the site,
# fetching or formatting (benchmarks/README.md: one record's commands against the import floor).

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
def progress_bar(label: str, minimum: int = 20):
    """A progress bar on a terminal (stderr), nothing otherwise; only for at least `minimum` items (a download
    is slow enough to show one for a single source)."""
    if not sys.stderr.isatty():
        yield None
        return

    def wrap(items):
        items = list(items)
        if len(items) < minimum:
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
    from .pipeline import validate_files, validate_kb
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


def _run_build(claims_dir: Path, db_path: Path, today, force: bool = False, cache=None) -> None:
    from .store import BuildError, build as run_build
    try:
        with progress_bar("Validating") as bar:
            result = run_build(claims_dir, db_path, today=clock.today(today), force=force, progress=bar,
                               on_stage=lambda s: _say(f"{s}..."), cache=cache)
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
@CACHE_OPTION
@TODAY_OPTION
def build(claims_dir, db_path, force: bool, cache_dir, today) -> None:
    """Validate the records, then write the SQLite database for Datasette.

    The database is written to a temporary file beside the target and renamed over it, so a failed build
    leaves the last good database in place. When nothing that goes into it changed since the last build,
    nothing is written; when a few record files changed (or only the day), the last database is updated.
    The last kb reverify results (in the cache folder) are stored with the claims (table reverify).

    Exit status: 0 built or up to date, 1 problems in the records or an unreadable reverify results file
    (nothing written), 2 no such folder.
    """
    where = _kb(claims_dir)
    _run_build(where.claims, Path(db_path) if db_path else where.database, today, force, cache_dir)


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
@CACHE_OPTION
@TODAY_OPTION
def serve(claims_dir, port: int, host: str, site_dir, cache_dir, today) -> None:
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
    _run_build(where.claims, site / "kb.db", today, cache=cache_dir)
    # Datasette takes 150 ms to import: only the command that serves imports it.
    from datasette.cli import cli as datasette_cli

    click.echo(f"serving {site}/ on http://{host}:{port}/", err=True)
    datasette_cli.main(["serve", str(site), "--host", host, "--port", str(port)], prog_name="datasette",
                       standalone_mode=True)


def _validated(claims_dir, today=None):
    """The whole knowledge base, validated, for commands that answer from it; exit 2 without a folder, 1 with
    problems in the records."""
    from .pipeline import validate_kb
    where = _kb(claims_dir)
    result = validate_kb(where.claims, today=clock.today(today))
    if result.errors:
        _echo_problems(result.errors, err=True)
        raise Failure(f"{plural(len(result.errors), 'problem')} in the records; fix them first (kb validate)")
    return result


def _index(claims_dir, max_age=None, today=None, cache=None) -> Index:
    """The knowledge base as a citable index, with the last kb reverify results (for drift warnings)."""
    from .cite import Index
    today = clock.today(today)
    validation = _validated(claims_dir, today)
    return Index(validation, today=today, max_age=max_age, reverify=_results(_kb(claims_dir), cache))


def _results(where: locate.Location, cache=None):
    from .reverify import Results, ResultsError
    from .sources import Cache, cache_dir

    try:
        return Results.load(Cache(cache_dir(where.root, cache)).results)
    except ResultsError as e:
        raise Failure(str(e), 2)


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
    from .cite import figure
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
@click.option("--strict", is_flag=True, help="Refuse a drifted figure too (one whose quote kb reverify no longer "
                                             "found in its source), not only warn.")
@MAX_AGE_OPTION
@CACHE_OPTION
@TODAY_OPTION
def cite(ref, claims_dir, fmt, search_text, allow, strict, max_age, cache_dir, today):
    """Cite a checked figure: REF is report/claim, e.g. llama-3-405b/unexpected-interruptions.

    Prints the figure as a reader would write it, the report, the source's title and URL, the locator, the
    check date and the status; a derived figure also cites its inputs and formula. A contradicted,
    unverified or stale claim is refused with the reason, unless --allow. A drifted figure (the last
    kb reverify did not find its quote in the source's current text) is cited with a warning on stderr, and
    refused with --strict.

    Exit status: 0 cited, 1 refused or unknown, 2 bad input.
    """
    from .cite import render_citation
    idx = _index(claims_dir, max_age, today, cache_dir)
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
    drift = idx.drift(ref)
    if drift and strict:
        raise Failure(f"{ref} has drifted: {drift} (without --strict it is cited with a warning)")
    if drift:
        click.echo(f"warning: {ref} has drifted: {drift}", err=True)
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
@click.option("--strict", is_flag=True, help="A drifted figure (KB405) is an error, not a warning.")
@CACHE_OPTION
@TODAY_OPTION
def check(docs, claims_dir, fmt, max_age, strict, cache_dir, today):
    """Check the figures a planning document cites with [text](kb:report/claim) links.

    Every kb: link must resolve; the number in the link text must match the knowledge base (unit-aware and
    tolerant of how people write numbers: 2.788M, 2,788K, 2.8 million; 43 min against 0.72 h); the claim must
    be citable (not contradicted, not unverified, checked within --max-age days). A figure whose quote the last
    kb reverify no longer found in its source is a warning (KB405), an error with --strict. Problems print as
    file:line:col: CODE: message, as GitHub annotations under Actions.

    Exit status: 0 every link checks out (warnings allowed without --strict), 1 problems found, 2 a document
    cannot be read.
    """
    from .docs import as_json_problems, check_document
    from .units import index as unit_index
    idx = _index(claims_dir, max_age, today, cache_dir)
    units = unit_index(idx.validation.vocabulary)
    problems, unreadable = [], False
    for doc in docs:
        try:
            text = Path(doc).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            click.echo(f"{doc}: cannot read: {getattr(e, 'strerror', None) or e}", err=True)
            unreadable = True
            continue
        problems += check_document(doc, text, idx, units, strict=strict)
    errors = [p for p in problems if p.severity == "error"]
    if fmt == "json":
        click.echo(as_json_problems(problems))
    else:
        _echo_problems(problems)
        click.echo(f"{plural(len(docs), 'document')}: {plural(len(errors), 'problem')}"
                   + (f", {plural(len(problems) - len(errors), 'warning')}" if len(problems) > len(errors) else ""),
                   err=True)
    sys.exit(2 if unreadable else 1 if errors else 0)


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
    from .docs import render_document
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
    from .fmt import format_text
    from .load import YamlError, load_vocabulary, record_files, vocabulary_path
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
    from .template import TemplateError, new_record_text
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
    from .model import record_json_schema
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
    from .cite import render_citation
    from .plan import PlanError, checkpoint_plan, failure_rate
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


# Sources and re-verification.


def fetch_options(f):
    """The options of every command that fetches sources (kb sources fetch, kb reverify)."""
    from .fetch import BACKOFF, MAX_BYTES, RETRIES, TIMEOUT

    options = [
        click.option("--allow-local", is_flag=True,
                     help="Fetch from private and loopback addresses too (refused by default: a record's URL must not "
                          "make the machine read its own network)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=TIMEOUT, show_default=True,
                     help="Seconds to wait for a connection and between two reads (a whole response gets 4 times "
                          "that)."),
        click.option("--retries", type=click.IntRange(0, 10), default=RETRIES, show_default=True,
                     help="Retries of a timeout, a network error, 429 or 5xx."),
        click.option("--backoff", type=click.FloatRange(min=0), default=BACKOFF, show_default=True,
                     help="Seconds before the first retry, doubled for each next one."),
        click.option("--max-bytes", type=click.IntRange(min=1), default=MAX_BYTES, show_default=True,
                     help="The largest body read; a larger one makes the source unreachable."),
        click.option("--arxiv-mirror", envvar="KB_ARXIV_MIRROR", default="https://export.arxiv.org",
                     show_default=True, help="Where arXiv's abstract pages and PDFs are read from (arXiv asks programs "
                                             "to use export.arxiv.org) [env: KB_ARXIV_MIRROR]."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _fetcher(allow_local, timeout, retries, backoff, max_bytes, arxiv_mirror):
    from .fetch import Fetcher, Settings

    return Fetcher(Settings(timeout=timeout, retries=retries, backoff=backoff, max_bytes=max_bytes,
                            allow_local=allow_local, arxiv_mirror=arxiv_mirror))


def _cache(where: locate.Location, cache_dir):
    from .sources import Cache, cache_dir as default_cache

    return Cache(default_cache(where.root, cache_dir))


def _chosen(validation, reports: tuple[str, ...]) -> list:
    """The records of the reports named (all when none is), or exit 2 naming an unknown one."""
    records = validation.loaded.records
    known = {rec.report.id: rec for rec in records}
    for r in reports:
        if r not in known:
            from rapidfuzz import process

            best = process.extractOne(r, list(known), score_cutoff=60)
            raise Failure(f"no report {r!r}" + (f"; did you mean {best[0]!r}?" if best else ""), 2)
    return [known[r] for r in dict.fromkeys(reports)] if reports else records


def _validated_or_2(claims_dir, today):
    """Like _validated, but records with problems are bad input here (exit 2): exit 1 means drift."""
    try:
        return _validated(claims_dir, today)
    except Failure as e:
        e.exit_code = 2
        raise


@cli.group()
def sources() -> None:
    """The sources' texts, kept in a cache outside claims/ for kb reverify: fetch, add, list.

    The cache is .cache/ beside claims/ (ignored by git), or --cache DIR, or $KB_CACHE.
    """


@sources.command(name="fetch")
@click.argument("reports", nargs=-1)
@CLAIMS_OPTION
@CACHE_OPTION
@fetch_options
@FORMAT_TEXT_JSON
@TODAY_OPTION
def sources_fetch(reports, claims_dir, cache_dir, allow_local, timeout, retries, backoff, max_bytes, arxiv_mirror,
                  fmt, today):
    """Download the current text of every source of the REPORTS (default: all) into the cache.

    Each URL is read with httpx (timeouts, retries with backoff, a size limit, http(s) only, redirects only to
    http(s), no private or loopback addresses unless --allow-local); arXiv papers as PDFs of their latest version
    (and of the version the record read, when another), GitHub files as raw text. HTML becomes text with a real
    HTML parser, PDFs with pypdf (the pdf extra); the text is normalised and kept with the fetch date, the HTTP
    validators (ETag, Last-Modified: an unchanged page is not downloaded again) and the version it resolved to.
    Sources kept in the repository (path:) are not fetched. Outcomes: new, changed, new-version, unchanged,
    unreachable (with the HTTP status or the reason).

    Exit status: 0 every source read, 1 some unreachable, 2 none could be read (or bad input).
    """
    from .sources import CacheError, fetch_all

    today = clock.today(today)
    where = _kb(claims_dir)
    records = _chosen(_validated_or_2(claims_dir, today), reports)
    cache = _cache(where, cache_dir)
    with _fetcher(allow_local, timeout, retries, backoff, max_bytes, arxiv_mirror) as fetcher, \
            progress_bar("Fetching", minimum=1) as bar:
        try:
            found = fetch_all([rec.report for rec in records], cache, fetcher, today, bar)
        except CacheError as e:
            raise Failure(str(e), 2)
    fetched = [f for f in found if f.outcome != "in-repository"]
    bad = [f for f in fetched if f.outcome == "unreachable"]
    if fmt == "json":
        click.echo(json.dumps({"cache": str(cache.folder), "fetched": [f.as_dict() for f in found]}, indent=2))
    else:
        for f in found:
            version = f" {f.version}" if f.version else ""
            why = f": {f.detail}" if f.detail else ""
            click.echo(f"{f.ref}: {f.outcome}{version}{why}")
        click.echo(f"{plural(len(fetched), 'source')} fetched into {cache.folder}: {len(bad)} unreachable", err=True)
    sys.exit(2 if fetched and len(bad) == len(fetched) else 1 if bad else 0)


@sources.command(name="add")
@click.argument("ref", metavar="REPORT/SOURCE")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--version", "version", help="The version of the copy (arXiv vN, a commit, the date it shows).")
@CLAIMS_OPTION
@CACHE_OPTION
@TODAY_OPTION
def sources_add(ref, file, version, claims_dir, cache_dir, today):
    """Put a copy of a source you read (a .txt, .md, .html or .pdf file) into the cache as its current text, as if
    fetched today: kb reverify --offline then checks the quotes against it. For a source that cannot be fetched
    (no network, a paywall, a page that needs a browser).

    Exit status: 0 added, 1 no such report or source (or one kept in the repository), 2 the file cannot be read.
    """
    from .sources import CacheError, add_copy
    from .sourcetext import SourceError

    today = clock.today(today)
    where = _kb(claims_dir)
    validation = _validated_or_2(claims_dir, today)
    report_id, _, source_id = ref.partition("/")
    found = next((rec.report for rec in validation.loaded.records if rec.report.id == report_id), None)
    source = found.source(source_id) if found else None
    if source is None:
        known = ", ".join(s.id for s in found.sources) if found else None
        raise Failure(f"no source {ref!r}" + (f" (the sources of {report_id}: {known})" if known else
                                              "; write REPORT/SOURCE, e.g. llama-3-405b/paper"))
    if not source.url:
        raise Failure(f"{ref} is kept in the repository ({source.path}): kb reverify reads it there")
    try:
        done = add_copy(found, source, _cache(where, cache_dir), Path(file), today, version)
    except OSError as e:
        raise Failure(f"{file}: cannot read: {e.strerror or e}", 2)
    except SourceError as e:
        raise Failure(f"{file}: {e}", 2)
    except CacheError as e:
        raise Failure(str(e), 2)
    click.echo(f"{ref}: {done.outcome} (sha256 {done.sha256}); kb reverify --offline {report_id} checks its quotes",
               err=True)


@sources.command(name="list")
@click.argument("reports", nargs=-1)
@CLAIMS_OPTION
@CACHE_OPTION
@FORMAT_TEXT_JSON
@TODAY_OPTION
def sources_list(reports, claims_dir, cache_dir, fmt, today):
    """What the cache holds of each source of the REPORTS (default: all): the last fetch (day, outcome), the
    version and the sha256 of the current text (what a record's version, retrieved and sha256 fields take).

    Exit status: 0 listed, 2 bad input.
    """
    from .sources import CacheError

    where = _kb(claims_dir)
    records = _chosen(_validated_or_2(claims_dir, clock.today(today)), reports)
    cache = _cache(where, cache_dir)
    rows = []
    for rec in records:
        for s in rec.report.sources:
            try:
                entry = cache.entry(rec.report.id, s)
            except CacheError as e:
                raise Failure(str(e), 2)
            last, current = entry.last or {}, entry.current()
            rows.append({"ref": f"{rec.report.id}/{s.id}", "url": s.url, "path": s.path,
                         "last": last.get("day"), "outcome": last.get("outcome"), "status": last.get("status"),
                         "error": last.get("error"), "version": current.version if current else None,
                         "sha256": current.sha256 if current else None,
                         "copies": len(entry.copies())})
    if fmt == "json":
        click.echo(json.dumps({"cache": str(cache.folder), "sources": rows}, indent=2))
        return
    for r in rows:
        if r["path"] and not r["url"]:
            click.echo(f"{r['ref']}: in the repository ({r['path']})")
        elif r["last"] is None:
            click.echo(f"{r['ref']}: not in the cache")
        else:
            parts = [f"{r['outcome']} on {r['last']}" + (f" ({r['error']})" if r["error"] else "")]
            parts += [f"version {r['version']}"] if r["version"] else []
            parts += [f"sha256 {r['sha256']}"] if r["sha256"] else []
            click.echo(f"{r['ref']}: {'; '.join(parts)}; {plural(r['copies'], 'text')} held")


@cli.command()
@click.argument("reports", nargs=-1)
@CLAIMS_OPTION
@click.option("--offline", is_flag=True, help="Check against the texts in the cache; fetch nothing.")
@click.option("--stamp", is_flag=True,
              help="Set verified to today on the claims whose quote was found and whose figure reads the same in "
                   "the quote (a minimal edit: comments and layout stay).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "markdown"]), default="text",
              show_default=True, help="text for people (GitHub annotations under Actions), json for programs, "
                                      "github for annotations, markdown for an issue or a job summary.")
@CACHE_OPTION
@fetch_options
@TODAY_OPTION
def reverify(reports, claims_dir, offline, stamp, fmt, cache_dir, allow_local, timeout, retries, backoff, max_bytes,
             arxiv_mirror, today):
    """Is every quote still in its source? For each quoted claim of the REPORTS (default: all), the quote is
    looked for in the source's current text (fetched now, or from the cache with --offline):

    \b
      found           the quote is there (where: page or section)
      moved           not in the current text, but in another version of it
      missing         in no text of the source: drift
      source-changed  still there, but the source is a new version or not the text of the record's sha256
      unreachable     the source could not be read (HTTP 4xx/5xx, timeout, refused, not in the cache)

    It never edits records on its own: --stamp sets verified to today on the claims found whose figure reads
    the same in their quote. The results are kept in the cache (reverify.json) for kb build, kb cite and
    kb check, which warn about a drifted figure (missing or moved).

    Exit status: 0 every quote found, 1 drift (any other result), 2 nothing could be checked (no quoted claim,
    no source could be read, or the records have problems).
    """
    from . import reverify as rv
    from .sources import CacheError
    from .stamp import StampError, stamp as stamp_file

    today = clock.today(today)
    where = _kb(claims_dir)
    validation = _validated_or_2(claims_dir, today)
    records = _chosen(validation, reports)
    cache = _cache(where, cache_dir)
    fetcher = None if offline else _fetcher(allow_local, timeout, retries, backoff, max_bytes, arxiv_mirror)
    try:
        with progress_bar("Re-verifying", minimum=1 if fetcher else 20) as bar:
            results, fetched = rv.reverify(records, cache, where.root, today, validation.vocabulary, fetcher, bar)
    except CacheError as e:
        raise Failure(str(e), 2)
    finally:
        if fetcher is not None:
            fetcher.close()
    rv.save(cache.results, results, today, {rec.report.id for rec in records} if reports else None)
    stamped: list[str] = []
    if stamp:
        # A claim without a figure has none to misread: its quote found is enough.
        wanted: dict[tuple[str, str], set[str]] = {}
        status = {f"{rec.report.id}/{c.id}": c.status for rec in records for c in rec.report.claims}
        for r in results:
            if r.result == "found" and r.figure_read is not False and status.get(r.ref) in ("confirmed", "secondary"):
                report, _, claim = r.ref.partition("/")
                wanted.setdefault((r.path, report), set()).add(claim)
        for (path, report), ids in wanted.items():
            try:
                stamped += [f"{report}/{i}" for i in stamp_file(Path(path), ids, today)]
            except StampError as e:
                click.echo(str(e), err=True)
    code = rv.exit_code(results)
    if fmt == "json":
        click.echo(rv.as_json(results, today, offline, fetched, stamped))
        sys.exit(code)
    if fmt == "markdown":
        click.echo(rv.as_markdown(results, today), nl=False)
    elif fmt == "github" or under_github_actions():
        for r in results:
            line = rv.as_annotation(r)
            if line:
                click.echo(line)
    else:
        for r in results:
            click.echo(rv.as_text(r))
    counted = ", ".join(f"{n} {k}" for k, n in rv.counts(results).items() if n)
    click.echo(f"{plural(len(results), 'quoted claim')} re-verified{' offline' if offline else ''}: "
               f"{counted or 'none'}; results kept in {cache.results}", err=True)
    if stamp:
        click.echo(f"stamped {plural(len(stamped), 'claim')}: verified {today}", err=True)
    sys.exit(code)


def main() -> None:
    from .program import run

    run(cli, "kb")


if __name__ == "__main__":  # pragma: no cover
    main()
