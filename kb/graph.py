"""Checked records → a networkx graph of reports, claims, sources, patterns and omissions, and the questions it
answers: the evidence for a pattern, which reports back which patterns, what a correction to a claim touches,
which omissions the reports behind a pattern share, and what to review.

Node ids are prefixed by kind ("report:llama-3-405b", "claim:llama-3-405b/unexpected-interruptions") so a
report and a claim can never collide. Edge relations:

    report  -states->        claim
    claim   -cites->         source
    claim   -supports->      pattern
    claim   -derived_from->  claim      (one edge per reference in the formula)
    report  -discloses|partially|omits-> omission   (the recorded judgement; evidence = claims)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional

if TYPE_CHECKING:  # networkx costs start-up time; it is imported where a graph is built
    import networkx as nx

    from .pipeline import Validation

VERDICT_RELATION = {"disclosed": "discloses", "partial": "partially", "absent": "omits"}
RELATION_VERDICT = {v: k for k, v in VERDICT_RELATION.items()}
KINDS = ("report", "claim", "source", "pattern", "omission")


def node_id(kind: str, key: str) -> str:
    return f"{kind}:{key}"


def key_of(node: str) -> str:
    return node.split(":", 1)[1]


Nodes = dict[str, dict]
Edges = dict[tuple[str, str], dict]


def _parts(validation: "Validation", nodes: bool = True, edges: bool = True):
    """The graph as a stream: ("node", id, attrs) and ("edge", (source, target), attrs), nodes before the edges
    that need them (only the nodes, or only the edges, if asked). A node or edge given twice has its attributes
    merged."""
    vocab = validation.vocabulary
    if vocab is not None and nodes:
        for p in vocab.patterns:
            yield "node", node_id("pattern", p.id), dict(kind="pattern", label=p.title, key=p.id)
        for o in vocab.omissions:
            yield "node", node_id("omission", o.id), dict(kind="omission", label=o.title, key=o.id)
    claims: set[str] = set()
    for rec in validation.loaded.records:
        r = rec.report
        rn = node_id("report", r.id)
        if nodes:
            yield "node", rn, dict(kind="report", label=r.title, key=r.id, organization=r.organization,
                                   published=r.published.isoformat())
            for s in r.sources:
                yield "node", node_id("source", f"{r.id}/{s.id}"), dict(
                    kind="source", label=s.title, key=f"{r.id}/{s.id}", url=s.url or s.path or "", source_kind=s.kind)
        for c in r.claims:
            ref = f"{r.id}/{c.id}"
            cn = node_id("claim", ref)
            claims.add(cn)
            if nodes:
                yield "node", cn, dict(kind="claim", label=c.statement, key=ref, report=r.id, status=c.status,
                                       value=c.value_text or "", unit=c.unit or "")
            if edges:
                yield "edge", (rn, cn), dict(relation="states")
                if c.source:
                    yield "edge", (cn, node_id("source", f"{r.id}/{c.source}")), dict(relation="cites")
                for p in c.patterns:
                    yield "edge", (cn, node_id("pattern", p)), dict(relation="supports")
        if edges:
            for omission, d in r.disclosures.items():
                yield "edge", (rn, node_id("omission", omission)), dict(
                    relation=VERDICT_RELATION[d.status], evidence=",".join(f"{r.id}/{x}" for x in d.claims),
                    note=d.note or "")
    if validation.checked is not None and edges:
        for (report_id, claim_id), check in validation.checked.derived.items():
            cn = node_id("claim", f"{report_id}/{claim_id}")
            if cn not in claims:
                continue
            for ref in check.inputs:
                target = node_id("claim", ref)
                if target in claims:
                    yield "edge", (cn, target), dict(relation="derived_from")


def elements(validation: "Validation") -> tuple[Nodes, Edges]:
    """The graph's nodes and edges with their attributes, in plain dicts."""
    nodes: Nodes = {}
    edges: Edges = {}
    for kind, key, attrs in _parts(validation):
        (nodes if kind == "node" else edges).setdefault(key, {}).update(attrs)
    return nodes, edges


def build_graph(validation: "Validation") -> "nx.DiGraph":
    """The graph of a validated knowledge base (records that failed validation are not in it)."""
    import networkx as nx

    nodes, edges = elements(validation)
    g = nx.DiGraph()
    g.add_nodes_from(nodes.items())
    g.add_edges_from((u, v, d) for (u, v), d in edges.items())
    return g


def _edges(g: "nx.DiGraph", relation: str, source: Optional[str] = None, target: Optional[str] = None):
    edges = g.out_edges(source, data=True) if source else g.in_edges(target, data=True) if target else g.edges(data=True)
    return [(u, v, d) for u, v, d in edges if d.get("relation") == relation]


@dataclass
class Evidence:
    pattern: str
    title: str
    claims: list[str]
    reports: list[str]

    @property
    def strength(self) -> int:
        """The number of independent reports backing the pattern."""
        return len(self.reports)

    def as_dict(self) -> dict:
        return {"pattern": self.pattern, "title": self.title, "strength": self.strength, "reports": self.reports,
                "claims": self.claims}


def pattern_evidence(g: "nx.DiGraph", pattern: str) -> Evidence:
    """The claims that support a pattern, the reports they come from, and its strength."""
    pn = node_id("pattern", pattern)
    if pn not in g:
        raise KeyError(pattern)
    claims = sorted(key_of(u) for u, _, _ in _edges(g, "supports", target=pn))
    reports = sorted({g.nodes[node_id("claim", c)]["report"] for c in claims})
    return Evidence(pattern, g.nodes[pn]["label"], claims, reports)


def patterns(g: "nx.DiGraph") -> list[str]:
    return [g.nodes[n]["key"] for n in g if g.nodes[n]["kind"] == "pattern"]


def reports(g: "nx.DiGraph") -> list[str]:
    return sorted(g.nodes[n]["key"] for n in g if g.nodes[n]["kind"] == "report")


def report_pattern_table(g: "nx.DiGraph") -> dict[str, dict[str, int]]:
    """For each report, how many of its claims support each pattern (0 where none)."""
    table = {r: {p: 0 for p in patterns(g)} for r in reports(g)}
    for u, v, _ in _edges(g, "supports"):
        table[g.nodes[u]["report"]][key_of(v)] += 1
    return table


@dataclass
class Impact:
    """What a correction to one claim touches."""

    claim: str
    derived: list[str] = field(default_factory=list)  # claims computed from it, directly or not
    patterns: list[str] = field(default_factory=list)  # patterns it (or a claim derived from it) supports
    verdicts: list[tuple[str, str, str]] = field(default_factory=list)  # (report, omission, status) citing it

    def as_dict(self) -> dict:
        return {"claim": self.claim, "derived": self.derived, "patterns": self.patterns,
                "verdicts": [{"report": r, "omission": o, "status": s} for r, o, s in self.verdicts]}


def dependents(g: "nx.DiGraph", claim_ref: str) -> Impact:
    """Derived figures (transitively), pattern support and recorded verdicts that rest on a claim."""
    import networkx as nx

    cn = node_id("claim", claim_ref)
    if cn not in g:
        raise KeyError(claim_ref)
    derived_view = nx.subgraph_view(g, filter_edge=lambda u, v: g.edges[u, v].get("relation") == "derived_from")
    derived = sorted(key_of(n) for n in nx.ancestors(derived_view, cn))
    touched = [cn] + [node_id("claim", d) for d in derived]
    pats = sorted({key_of(v) for n in touched for _, v, _ in _edges(g, "supports", source=n)})
    verdicts = []
    refs = {key_of(n) for n in touched}
    for u, v, d in g.edges(data=True):
        if d.get("relation") in RELATION_VERDICT and refs & set(filter(None, d.get("evidence", "").split(","))):
            verdicts.append((key_of(u), key_of(v), RELATION_VERDICT[d["relation"]]))
    return Impact(claim_ref, derived, pats, sorted(verdicts))


def shared_omissions(g: "nx.DiGraph", pattern: str) -> dict[str, Counter]:
    """For the reports backing a pattern: per omission, how many of them disclose, partially disclose or omit it."""
    backing = pattern_evidence(g, pattern).reports
    out: dict[str, Counter] = {g.nodes[n]["key"]: Counter() for n in g if g.nodes[n]["kind"] == "omission"}
    for r in backing:
        for _, v, d in g.out_edges(node_id("report", r), data=True):
            if d.get("relation") in RELATION_VERDICT:
                out[key_of(v)][RELATION_VERDICT[d["relation"]]] += 1
    return out


@dataclass
class Review:
    unlinked_claims: list[str]  # claims that support no pattern (derived and figure-less claims included)
    weak_patterns: list[tuple[str, int]]  # patterns backed by fewer than two reports

    def as_dict(self) -> dict:
        return {"unlinked_claims": self.unlinked_claims,
                "weak_patterns": [{"pattern": p, "reports": n} for p, n in self.weak_patterns]}


def review(g: "nx.DiGraph") -> Review:
    unlinked = sorted(g.nodes[n]["key"] for n in g if g.nodes[n]["kind"] == "claim"
                      and not _edges(g, "supports", source=n))
    weak = [(p, pattern_evidence(g, p).strength) for p in patterns(g)]
    return Review(unlinked, [(p, n) for p, n in weak if n < 2])


def export(g: "nx.DiGraph", fmt: str) -> str:
    """The graph as GraphML or node-link JSON, readable by networkx's own readers."""
    import json

    import networkx as nx

    if fmt == "graphml":
        return "\n".join(nx.generate_graphml(g))
    if fmt == "json":
        return json.dumps(nx.node_link_data(g, edges="edges"), indent=1)
    raise ValueError(f"unknown format {fmt!r}")


def rows(validation: "Validation", kind: str) -> Iterable[dict]:
    """The rows of graph_nodes (kind "node") or graph_edges ("edge"), made one by one: what `kb build` stores.
    networkx is needed only to ask the graph questions, and a large graph's dicts would all sit in memory.
    A part given twice (a formula using a claim twice) is one row, as it is one edge in networkx."""
    seen: set = set()
    for k, key, d in _parts(validation, nodes=kind == "node", edges=kind == "edge"):
        if key in seen:
            continue
        seen.add(key)
        if kind == "node":
            yield {"id": key, "kind": d["kind"], "key": d["key"], "label": d.get("label", "")}
        else:
            yield {"source": key[0], "target": key[1], "relation": d["relation"], "evidence": d.get("evidence") or None}
