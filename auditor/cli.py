"""The `audit` command. Exit codes: 0 it ran, 1 --fail-on was met, 2 an input could not be read."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb import clock, locate
from kb.options import MAX_AGE_OPTION, TODAY_OPTION


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--claims", "claims_dir", default=None, type=click.Path(file_okay=False),
              help="The knowledge base to compare with (and whose claims a record's formulas may use) "
                   "[default: claims/ in the current folder or the nearest parent].")
@click.option("--db", "db_path", default=None, type=click.Path(dir_okay=False),
              help="The database `kb build` wrote from the knowledge base: the reports whose files have not changed "
                   "since are read from it, not from their files (much quicker on a large knowledge base). Ignored "
                   "when missing or built from another vocabulary or version [default: site/kb.db beside claims/].")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="text for a terminal, json for programs, markdown for a pull-request comment.")
@click.option("--fail-on", type=click.Choice(["partial", "absent"]),
              help="Exit 1 when any omission is at or below this level.")
@click.option("--explain", is_flag=True,
              help="Show every piece of evidence, how many units (claims, sentences, table rows) were read, and each "
                   "unit that had a cue of an omission's part but was dropped, with why (out of scope, negated, "
                   "nothing it needs nearby).")
@MAX_AGE_OPTION
@TODAY_OPTION
@click.version_option(package_name="report-claims")
def audit(files, claims_dir, db_path, fmt, fail_on, explain, max_age, today):
    """Audit training reports for the five recurring omissions.

    FILES are records in format v1 (.yaml, validated as `kb validate` does) or report texts (.md, .txt; .pdf with
    the pdf extra). For each omission (failed-runs, data-filtering, hp-search, ops-staffing, contamination) the
    verdict is disclosed, partial or absent, with its evidence and the questions still open; a record also gets
    hygiene findings and its declared disclosures checked. Each verdict names the rubric rule it applied
    (../shared/RUBRIC.md, as kb/vocabulary.yaml states it) and its evidence by line or claim id. Each verdict is compared with the reports already in
    the knowledge base.

    Exit status: 0 it ran; 1 with --fail-on, when an omission is at or below that level; 2 an input could not
    be read (missing, not UTF-8, not a valid record, or the knowledge base's vocabulary is not valid).
    """
    from kb.load import VocabularyError

    from .audit import LEVELS, Audit, audit_paths  # here, not above: kb.program.run sets the collector up first
    from .render import as_json, as_markdown, as_text

    where = locate.find(claims_dir)
    if where is None:
        click.echo(f"audit: no knowledge base to compare with (no claims/ folder in {Path.cwd()} or above it; give "
                   f"--claims DIR): verdicts only, without the cohort or similar reports", err=True)
    try:
        results = audit_paths(files, claims_dir=where.claims if where else None, today=clock.today(today),
                              max_age=max_age, db=db_path or (where.database if where else None), explain=explain)
    except VocabularyError as e:  # the knowledge base's own vocabulary: nothing can be judged without it
        for problem in e.problems:
            click.echo(f"audit: {problem}", err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(as_json(results))
    elif fmt == "markdown":
        click.echo(as_markdown(results))
    else:
        click.echo(as_text(results, colour=sys.stdout.isatty()), nl=False)
    if any(not isinstance(r, Audit) for r in results):
        sys.exit(2)
    if fail_on and any(r.worst() <= LEVELS[fail_on] for r in results):
        sys.exit(1)


def main() -> None:
    from kb.program import run

    run(audit, "audit")


if __name__ == "__main__":  # pragma: no cover
    main()
