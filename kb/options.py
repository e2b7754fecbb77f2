"""Command-line options shared by `kb` and `audit` (a module of their own: `audit` starts without kb's CLI)."""

from __future__ import annotations

import click

from . import clock


class Day(click.ParamType):
    name = "DATE"

    def convert(self, value, param, ctx):
        if hasattr(value, "isoformat"):  # already a date (a default)
            return value
        try:
            return clock.parse_day(value, "--today")
        except clock.ClockError as e:
            self.fail(str(e), param, ctx)


CLAIMS_OPTION = click.option(
    "--claims", "claims_dir", default=None, type=click.Path(file_okay=False),
    help="The knowledge base's records folder [default: claims/ in the current folder or the nearest parent].")
TODAY_OPTION = click.option(
    "--today", type=Day(), envvar=clock.ENV, default=None,
    help="The day dates are judged against: stale checks, citability, dates in the future (YYYY-MM-DD) "
         "[default: $KB_TODAY, else the system's date].")
FORMAT_TEXT_JSON = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="text for people, json for programs.")
MAX_AGE_OPTION = click.option(
    "--max-age", type=click.IntRange(0), default=None,
    help="A check older than this many days is stale [default: the vocabulary's stale_after_days].")
