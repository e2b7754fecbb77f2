"""Audits → text for a terminal, JSON for programs, Markdown for a pull-request comment."""

from __future__ import annotations

import json
from typing import Union

from .audit import Audit, InputError

SYMBOLS = {"disclosed": "✔", "partial": "◐", "absent": "✘"}
COLOURS = {"disclosed": "green", "partial": "yellow", "absent": "red"}
JSON_VERSION = 1
EVIDENCE_SHOWN = 3  # per verdict in text output


def as_json(results: list[Union[Audit, InputError]]) -> str:
    """The stable JSON shape documented in the README (version 1)."""
    return json.dumps({
        "version": JSON_VERSION,
        "reports": [r.as_dict() for r in results if isinstance(r, Audit)],
        "errors": [{"message": str(e), "problems": [p.as_dict() for p in e.problems]}
                   for e in results if isinstance(e, InputError)],
    }, indent=2, ensure_ascii=False)


def _parts(e) -> str:
    """What a piece of evidence gives: each part, with its figure where it has one ("compute 40,000 GPU-hours")."""
    out = []
    for p in e.parts or [{"part": e.part, "cue": e.cue, "given": e.figure, "value": e.value, "kind": e.kind}]:
        what = f"{p['part']} {p['value']} ({p['kind']})" if p.get("value") else f"{p['part']} “{p['cue']}”"
        out.append(what if p.get("given") else f"{what} mentioned")
    return ", ".join(out) + (" (an admission it was not done)" if e.admission else "") + (
        f" (in {e.limited}: a mention at most)" if e.limited else "")


def _cut(text: str, width: int = 140) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width] + "…"


def _evidence_line(e, width: int = 140) -> str:
    if e.claim:
        where = e.claim + (f" (line {e.line})" if e.line else "")
    else:
        where = f"line {e.line}: “{_cut(e.sentence, width)}”"
    return f"{where} — {_parts(e)}"


def as_text(results: list[Union[Audit, InputError]], colour: bool = False) -> str:
    import click

    def style(text, status):
        return click.style(text, fg=COLOURS[status], bold=True) if colour else text

    out = []
    for r in results:
        if isinstance(r, InputError):
            out.append(f"error: {r}")
            out += [f"  {p}" for p in r.problems]
            out.append("")
            continue
        out.append(f"{r.file}: {r.title} ({r.input}, id {r.report})")
        explain = r.explained
        if explain:
            out.append(f"  read {explain.units} {'claims' if r.input == 'record' else 'sentences, rows and headings'}")
        for o, v in r.verdicts.items():
            declared = f" (declared {v.declared})" if v.declared and v.declared != v.status else ""
            cohort = f"  [{v.cohort['text']} in the knowledge base]" if v.cohort and v.cohort["of"] else ""
            out.append(f"  {style(SYMBOLS[v.status] + ' ' + v.status.ljust(9), v.status)} {o}{declared}{cohort}")
            out.append(f"      rule: {v.rule}")
            shown = v.evidence if explain else v.evidence[:EVIDENCE_SHOWN]
            for e in shown:
                out.append(f"      evidence: {_evidence_line(e)}")
            if len(v.evidence) > len(shown):
                out.append(f"      … and {len(v.evidence) - len(shown)} more (--explain or --format json shows all)")
            for m in v.missing:
                out.append(f"      missing {m['part']}: {m['question']}")
            for d in explain.for_omission(o) if explain else []:
                where = d.unit.claim or f"line {d.unit.line}: “{_cut(d.unit.text)}”"
                out.append(f"      dropped: {where} — {d.why}")
        if r.findings:
            out.append("  findings:")
            for f in r.findings:
                where = f"line {f.line}: " if f.line else ""
                what = f"{f.claim}: " if f.claim else f"{f.omission}: " if f.omission else ""
                out.append(f"    {f.kind}: {where}{what}{f.message}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _md(text: str) -> str:
    """Contributor text in a Markdown table cell or list: no markup, no HTML, no links."""
    return (text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("[", "\\[").replace("]", "\\]").replace("`", "\\`").replace("\n", " "))


def as_markdown(results: list[Union[Audit, InputError]]) -> str:
    out = []
    for r in results:
        if isinstance(r, InputError):
            out.append(f"### ⚠️ {_md(str(r))}\n")
            out += [f"- `{_md(str(p))}`" for p in r.problems]
            out.append("")
            continue
        out.append(f"### Audit: {_md(r.title)}\n")
        out.append(f"`{_md(r.file)}` · {r.input} · id `{r.report}`\n")
        out.append("| Omission | Verdict | Declared | Knowledge base | Missing |")
        out.append("| --- | --- | --- | --- | --- |")
        for o, v in r.verdicts.items():
            missing = "; ".join(_md(m["question"]) for m in v.missing) or "–"
            cohort = _md(v.cohort["text"]) if v.cohort and v.cohort["of"] else "–"
            out.append(f"| {o} | {SYMBOLS[v.status]} {v.status} | {v.declared or '–'} | {cohort} | {missing} |")
        out.append("")
        out.append("<details><summary>Evidence and rules</summary>\n")
        for o, v in r.verdicts.items():
            out.append(f"- **{o}**: {_md(v.rule)}")
            out += [f"  - {_md(_evidence_line(e))}" for e in v.evidence[:EVIDENCE_SHOWN]]
        out.append("\n</details>\n")
        if r.findings:
            out.append("<details><summary>Findings</summary>\n")
            for f in r.findings:
                where = f"line {f.line}: " if f.line else ""
                what = f"`{_md(f.claim)}` " if f.claim else f"{f.omission}: " if f.omission else ""
                out.append(f"- **{f.kind}** {where}{what}{_md(f.message)}")
            out.append("\n</details>\n")
    return "\n".join(out)
