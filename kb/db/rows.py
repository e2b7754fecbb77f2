"""The rows of every table of kb.db.schema, made from a validated knowledge base. They are made as they are
written, table by table: a large knowledge base's rows never all sit in memory. Each row has exactly its table's
columns (tests/test_schema.py)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from .. import graph, parallel, providers
from ..cite import Index, citation, figure
from ..load import LoadResult
from ..pipeline import Validation
from ..snapshot import relative_name, trusted_stamp
from ..units import index as unit_index
from . import checksum


class Verdicts:
    """Every report × omission: the declared judgement next to each provider's verdict. With a cache
    (kb.verdict_cache), a record whose provider, vocabulary and bytes are unchanged reads its verdicts from it;
    the providers audit only the others. Records are added one at a time (add), as they are validated; with
    `ahead`, auditing them starts at once in forked children (kb.parallel.Ahead), which work through them while
    this process validates the rest and writes the other tables, and this process joins in when the rows are
    asked for. Otherwise they are audited when the rows are asked for, half of them on the second core."""

    def __init__(self, vocabulary, cache=None, ahead: bool = False):
        self.vocabulary, self.cache = vocabulary, cache
        versions = providers.versions() if cache is not None else {}
        self.jobs = []
        for name, provider in providers.providers():
            audit = self._auditor(provider)
            job = {"name": name, "audit": audit, "version": versions.get(name), "found": {}, "keys": {},
                   "todo": [], "ahead": parallel.Ahead(audit) if ahead else None}
            self.jobs.append(job)

    @classmethod
    def of(cls, result, cache=None) -> "Verdicts":
        """For the records of a validation, all at once."""
        verdicts = cls(result.vocabulary, cache)
        for rec in result.loaded.records:
            verdicts.add(rec)
        return verdicts

    def add(self, rec) -> None:
        for job in self.jobs:
            if self.cache is not None and rec.digest:
                key = job["keys"][rec.report.id] = self.cache.key(job["version"], rec.digest)
                rows = self.cache.get(job["name"], key)
                if rows is not None:
                    job["found"][rec.report.id] = rows
                    continue
            job["todo"].append(rec)
            if job["ahead"] is not None:
                job["ahead"].add(rec)

    def close(self) -> None:
        """No more records will be added: auditing ahead starts on the last ones."""
        for job in self.jobs:
            if job["ahead"] is not None:
                job["ahead"].close()

    def stop(self) -> None:
        """Stop auditing ahead (the build failed)."""
        for job in self.jobs:
            if job["ahead"] is not None:
                job["ahead"].stop()

    def _auditor(self, provider):
        vocabulary = self.vocabulary

        def audit(some) -> list[dict]:
            # a provider reads the validation's vocabulary and records
            return list(provider(Validation(LoadResult(records=list(some)), None, vocabulary, [])))
        return audit

    def rows(self, result) -> Iterable[dict]:
        """The rows for the records of `result`, the validation the records added were part of."""
        declared = {(rec.report.id, o): d.status for rec in result.loaded.records
                    for o, d in rec.report.disclosures.items()}
        for job in self.jobs:
            found, todo = job["found"], job["todo"]
            if todo:
                fresh: dict[str, list[dict]] = {rec.report.id: [] for rec in todo}
                ahead = job["ahead"]
                for row in ahead.result() if ahead is not None else parallel.in_two(job["audit"], todo):
                    fresh[row["report"]].append(row)
                for report, rows in fresh.items():
                    if report in job["keys"]:
                        self.cache.put(job["name"], job["keys"][report], rows)
                found.update(fresh)
            for rec in result.loaded.records:
                for row in found[rec.report.id]:
                    key = (row["report"], row["omission"])
                    yield {"report": row["report"], "omission": row["omission"], "declared": declared.get(key),
                           "audited": row["status"],
                           "agree": None if key not in declared else int(declared[key] == row["status"]),
                           "evidence": json.dumps([f"{x}" for x in row.get("evidence", [])]),
                           "missing": json.dumps(row.get("missing", [])), "provider": job["name"]}


def chart_points(result) -> Iterable[dict]:
    """For each chart of the vocabulary and each report, the point made by its first claim on each axis."""
    units = unit_index(result.vocabulary)
    for chart in result.vocabulary.charts:
        for rec in result.loaded.records:
            axes: dict[str, Any] = {}
            for c in rec.report.claims:
                norm = units.normalize(c.unit)
                if chart.pattern not in c.patterns or norm is None or c.value is None:
                    continue
                for axis in ("x", "y"):
                    if norm.base == getattr(chart, axis).base and axis not in axes:
                        axes[axis] = (c, float(c.low) * norm.factor)
            if len(axes) == 2:
                (xc, x), (yc, y) = axes["x"], axes["y"]
                yield {"chart": chart.id, "report": rec.report.id, "x": x, "y": y,
                       "x_claim": f"{rec.report.id}/{xc.id}", "y_claim": f"{rec.report.id}/{yc.id}",
                       "x_figure": figure(xc), "y_figure": figure(yc)}


def table_rows(result, today: date, fs_now_ns: int, reverify=None, verdict_cache=None,
               verdicts: Optional[Verdicts] = None,
               digests: Optional[dict[str, tuple[str, int]]] = None) -> dict[str, Callable[[], Iterable[dict]]]:
    """For every table, a function giving its rows for the validated records (and the vocabulary). `fs_now_ns`
    is the file system's time now (kb.db.atomic.fs_clock), for the record files' stamps; `reverify` the last kb
    reverify results (kb.reverify.Results), if any; `verdict_cache` the verdicts kept between builds
    (kb.verdict_cache.VerdictCache), if any; `verdicts`: the Verdicts the records were added to as they were
    validated (else made here, from verdict_cache); `digests`: kb.db.checksum.of_records of the records, if made
    already."""
    verdicts = verdicts if verdicts is not None else Verdicts.of(result, verdict_cache)
    vocabulary = result.vocabulary
    checked = result.checked
    records = result.loaded.records

    def patterns():
        return ({"id": p.id, "title": p.title, "description": p.description} for p in vocabulary.patterns)

    def omissions():
        return ({"id": o.id, "title": o.title, "description": o.description,
                 "parts": json.dumps([p.description for p in o.parts]),
                 "questions": json.dumps([p.question for p in o.parts])} for o in vocabulary.omissions)

    def reports():
        for rec in records:
            r = rec.report
            yield {"id": r.id, "title": r.title, "organization": r.organization, "published": r.published.isoformat(),
                   "models": json.dumps(r.models), "summary": r.summary, "claims": len(r.claims),
                   "sources": len(r.sources), "unsaid": json.dumps(r.unsaid), "path": rec.path,
                   "title_line": rec.where("title")[0]}

    def sources():
        for rec in records:
            r = rec.report
            for s in r.sources:
                yield {"ref": f"{r.id}/{s.id}", "report": r.id, "id": s.id, "title": s.title, "url": s.url,
                       "path": s.path, "kind": s.kind, "version": s.version,
                       "retrieved": s.retrieved.isoformat() if s.retrieved else None, "sha256": s.sha256,
                       "checked": s.checked.isoformat(), "age_days": (today - s.checked).days, "note": s.note}

    def claims():
        units = unit_index(vocabulary)
        index = Index(result, today, reverify=reverify)
        for rec in records:
            r = rec.report
            for c in r.claims:
                ref = f"{r.id}/{c.id}"
                src = r.source(c.source) if c.source else None
                norm = units.normalize(c.unit)
                factor = norm.factor if norm else None
                single = c.value is not None and not c.is_range
                derived = checked.derived.get((r.id, c.id))
                ok, why = index.citable(ref)
                yield {
                    "ref": ref, "report": r.id, "id": c.id, "statement": c.statement, "figure": figure(c) or None,
                    "value": c.value if single else None,
                    "low": c.low if c.value is not None else None, "high": c.high if c.value is not None else None,
                    "value_text": c.value_text, "bound": c.bound, "unit": c.unit,
                    "unit_normalized": norm.unit if norm else None, "base_unit": norm.base if norm else None,
                    "value_base": c.value * factor if single and factor else None,
                    "low_base": c.low * factor if c.value is not None and factor else None,
                    "high_base": c.high * factor if c.value is not None and factor else None,
                    "status": c.status, "citable": int(ok), "not_citable_because": why or None,
                    "source": f"{r.id}/{c.source}" if c.source else None,
                    "source_url": src.url if src else None, "locator": c.locator, "quote": c.quote,
                    "quote_kind": c.quote_kind if c.quote else None, "no_quote": c.no_quote,
                    "verified": c.verified.isoformat() if c.verified else None,
                    "age_days": (today - c.verified).days if c.verified else None, "note": c.note,
                    "formula": c.formula, "tolerance": float(c.tolerance) if c.tolerance is not None else None,
                    "patterns": json.dumps(c.patterns), "topics": json.dumps(c.topics),
                    "citation": citation(r, c, src, derived.computed if derived else None),
                    "drift": index.drift(ref),
                }

    def reverified():
        if reverify is None:
            return
        for rec in records:
            r = rec.report
            for c in r.claims:
                found = reverify.applying(f"{r.id}/{c.id}", c, r.source(c.source) if c.source else None)
                if found is not None:
                    yield {"claim": found.ref, "report": r.id, "source": found.source, "checked": found.checked,
                           "result": found.result, "version": found.version, "found_in": found.where,
                           "http_status": found.status, "detail": found.detail}

    def claim_patterns():
        return ({"claim": f"{rec.report.id}/{c.id}", "pattern": p, "report": rec.report.id}
                for rec in records for c in rec.report.claims for p in c.patterns)

    def claim_topics():
        return ({"claim": f"{rec.report.id}/{c.id}", "omission": t, "report": rec.report.id}
                for rec in records for c in rec.report.claims for t in c.topics)

    def disclosures():
        return ({"report": rec.report.id, "omission": omission, "status": d.status, "note": d.note,
                 "evidence": json.dumps([f"{rec.report.id}/{x}" for x in d.claims]), "locator": d.locator}
                for rec in records for omission, d in rec.report.disclosures.items())

    def derived_checks():
        report_ids = {rec.report.id for rec in records}  # a set: a list made this quadratic
        return ({"claim": f"{report_id}/{claim_id}", "report": report_id, "formula": d.formula,
                 "computed": d.computed, "stated": d.stated, "tolerance": d.tolerance,
                 "within_tolerance": int(d.ok), "inputs": json.dumps(d.inputs), "error": d.error}
                for (report_id, claim_id), d in checked.derived.items() if report_id in report_ids)

    def charts():
        return ({"id": c.id, "pattern": c.pattern, "title": c.title, "description": c.description,
                 "x_base": c.x.base, "x_label": c.x.label, "x_log": int(c.x.log), "y_base": c.y.base,
                 "y_label": c.y.label, "y_log": int(c.y.log)} for c in vocabulary.charts)

    def files():
        sums = digests if digests is not None else checksum.of_records(records)
        claims_dir = Path(result.claims_dir or ".")
        return ({"path": relative_name(Path(rec.path), claims_dir), "sha256": rec.digest,
                 "stamp": trusted_stamp(rec.stamp, fs_now_ns), "report": rec.report.id,
                 "checksum": sums[rec.report.id][0], "claims": sums[rec.report.id][1]} for rec in records)

    return {"reports": reports, "sources": sources, "patterns": patterns, "omissions": omissions,
            "claims": claims, "claim_patterns": claim_patterns, "claim_topics": claim_topics,
            "disclosures": disclosures, "verdicts": lambda: verdicts.rows(result),
            "graph_nodes": lambda: graph.rows(result, "node"), "graph_edges": lambda: graph.rows(result, "edge"),
            "charts": charts, "chart_points": lambda: chart_points(result), "_files": files,
            "derived_checks": derived_checks, "reverify": reverified}
