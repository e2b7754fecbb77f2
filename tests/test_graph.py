"""The pattern graph on a small hand-made knowledge base whose answers are known."""

from __future__ import annotations

import io
import json
import sqlite3

import networkx as nx
import pytest

from conftest import GOOD, replace
from kb.graph import build_graph, dependents, export, pattern_evidence, report_pattern_table, review, shared_omissions
from kb.pipeline import validate_files, validate_kb
from sitekb import SECOND, make_site

# A chain of derived figures: interruptions-per-week ← hours-between-interruptions ← (snapshot-days, unexpected-
# interruptions); and a third report whose formula uses the first report's claim.
CHAIN = replace(GOOD, "disclosures:", """\
  - id: interruptions-per-week
    statement: About 54 interruptions a week.
    value: 54
    bound: about
    unit: interruptions
    status: derived
    formula: 168 / hours-between-interruptions
    patterns: [failure-scaling]
disclosures:""")
THIRD = replace(replace(GOOD, "id: example-run", "id: third-run"), "formula: snapshot-days * 24 / unexpected-interruptions",
                "formula: example-run/snapshot-days * 24 / example-run/unexpected-interruptions")


@pytest.fixture
def g(tmp_path):
    claims, _ = make_site(tmp_path)
    (claims / "example-run.yaml").write_text(CHAIN)
    (claims / "third-run.yaml").write_text(THIRD)
    result = validate_kb(claims)
    assert result.errors == []
    return build_graph(result)


def test_nodes_and_typed_edges(g):
    kinds = {k: sum(1 for n in g if g.nodes[n]["kind"] == k) for k in ("report", "claim", "source", "pattern", "omission")}
    assert kinds == {"report": 4, "claim": 4 + 5 + 1 + 3, "source": 4, "pattern": 5, "omission": 5}
    rel = lambda u, v: g.edges[u, v]["relation"]  # noqa: E731
    assert rel("report:example-run", "claim:example-run/snapshot-days") == "states"
    assert rel("claim:example-run/snapshot-days", "source:example-run/paper") == "cites"
    assert rel("claim:second-run/mfu", "pattern:arch-is-infra") == "supports"
    assert rel("claim:example-run/hours-between-interruptions", "claim:example-run/snapshot-days") == "derived_from"
    assert rel("report:second-run", "omission:contamination") == "discloses"
    assert rel("report:second-run", "omission:failed-runs") == "omits"
    assert rel("report:example-run", "omission:ops-staffing") == "partially"


def test_the_evidence_for_a_pattern_and_its_strength(g):
    e = pattern_evidence(g, "failure-scaling")
    assert e.claims == ["example-run/interruptions-per-week", "example-run/unexpected-interruptions",
                        "second-run/failures-per-day", "second-run/job-gpus", "second-run/mfu",
                        "third-run/unexpected-interruptions"]
    assert e.reports == ["example-run", "second-run", "third-run"]
    assert e.strength == 3
    assert pattern_evidence(g, "staged-data-mix").strength == 0


def test_which_reports_back_which_patterns(g):
    t = report_pattern_table(g)
    assert t["example-run"]["failure-scaling"] == 2
    assert t["second-run"] == {"spike-layers": 1, "failure-scaling": 3, "staged-data-mix": 0,
                               "proxy-experiments": 0, "arch-is-infra": 1}
    assert sum(t["hostile-run"].values()) == 0


def test_what_a_correction_to_a_claim_touches_transitively(g):
    impact = dependents(g, "example-run/snapshot-days")
    assert impact.derived == ["example-run/hours-between-interruptions", "example-run/interruptions-per-week",
                              "third-run/hours-between-interruptions"]
    assert impact.patterns == ["failure-scaling"]  # through interruptions-per-week
    direct = dependents(g, "example-run/unexpected-interruptions")
    assert direct.verdicts == [("example-run", "ops-staffing", "partial")]


def test_omissions_shared_by_the_reports_behind_a_pattern(g):
    shared = shared_omissions(g, "failure-scaling")
    assert shared["ops-staffing"] == {"partial": 2, "absent": 1}
    assert shared["contamination"] == {"disclosed": 1}


def test_the_review_list(g):
    r = review(g)
    assert "second-run/old-check" in r.unlinked_claims and "second-run/mfu" not in r.unlinked_claims
    assert dict(r.weak_patterns) == {"spike-layers": 1, "staged-data-mix": 0, "proxy-experiments": 0,
                                     "arch-is-infra": 1}


@pytest.mark.parametrize("fmt", ["graphml", "json"])
def test_export_round_trips_through_networkx_readers(g, fmt):
    text = export(g, fmt)
    back = (nx.read_graphml(io.BytesIO(text.encode())) if fmt == "graphml"
            else nx.node_link_graph(json.loads(text), edges="edges"))
    assert set(back.nodes) == set(g.nodes)
    assert {(u, v, d["relation"]) for u, v, d in back.edges(data=True)} == \
           {(u, v, d["relation"]) for u, v, d in g.edges(data=True)}
    assert back.nodes["claim:second-run/mfu"]["kind"] == "claim"


def test_graph_commands_answer_from_the_terminal(tmp_path, kb):
    claims, _ = make_site(tmp_path)
    (claims / "example-run.yaml").write_text(CHAIN)
    r = kb("graph", "evidence", "failure-scaling", "--claims", claims, "--format", "json")
    assert json.loads(r.stdout)[0]["strength"] == 2
    assert "second-run/job-gpus" in json.loads(r.stdout)[0]["claims"]
    r = kb("graph", "impact", "example-run/snapshot-days", "--claims", claims)
    assert "derived figures: example-run/hours-between-interruptions, example-run/interruptions-per-week" in r.stdout
    r = kb("graph", "impact", "example-run/snapshot-day", "--claims", claims)
    assert r.exit_code == 1 and "did you mean 'example-run/snapshot-days'?" in r.stderr
    r = kb("graph", "table", "--claims", claims, "--format", "json")
    assert json.loads(r.stdout)["second-run"]["arch-is-infra"] == 1
    out = tmp_path / "g.graphml"
    assert kb("graph", "export", "--claims", claims, "-o", out).exit_code == 0
    assert nx.read_graphml(out).number_of_nodes() > 0


def test_the_graph_is_stored_for_datasette(tmp_path):
    import sqlite_utils

    from kb.store import build

    claims, site = make_site(tmp_path)
    build(claims, site / "kb.db")
    db = sqlite_utils.Database(site / "kb.db")
    assert db["graph_edges"].get(("claim:second-run/mfu", "pattern:arch-is-infra"))["relation"] == "supports"
    assert db["graph_nodes"].count == 3 + 9 + 3 + 5 + 5


def test_the_stored_graph_is_the_graph_the_questions_are_asked_of(tmp_path, g):
    """kb build writes the graph's tables without networkx; they hold exactly the nodes and edges of build_graph."""
    from kb.store import build

    claims = tmp_path / "claims"  # the knowledge base of the g fixture
    build(claims, tmp_path / "kb.db")
    conn = sqlite3.connect(tmp_path / "kb.db")
    nodes = {(n, k, key, label) for n, k, key, label in conn.execute("select id, kind, key, label from graph_nodes")}
    edges = {(u, v, rel, ev) for u, v, rel, ev in conn.execute("select source, target, relation, evidence from graph_edges")}
    assert nodes == {(n, d["kind"], d["key"], d.get("label", "")) for n, d in g.nodes(data=True)}
    assert edges == {(u, v, d["relation"], d.get("evidence") or None) for u, v, d in g.edges(data=True)}
    assert any(rel == "derived_from" for _, _, rel, _ in edges)
