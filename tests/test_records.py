"""Reading records: YAML 1.2 meanings, strictness, hostile input, and how problems are reported.

Each test writes a record with one thing wrong and shows what `kb validate` says about it.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest

from conftest import GOOD, replace
from kb.load import load_file
from kb.yaml12 import YamlError, parse_yaml
from kb.model import parse_number


def only_problem(result) -> str:
    lines = [l for l in result.stdout.splitlines() if l.strip()]
    assert len(lines) == 1, result.stdout
    return lines[0]


def test_a_good_record_validates_cleanly(kb, write, kb_dir):
    write(GOOD)
    r = kb("validate", "--claims", kb_dir, "--strict")
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    assert "1 file, 1 record, 3 claims: 0 errors, 0 warnings" in r.stderr


# YAML 1.2 meanings: a value is never silently changed.


@pytest.mark.parametrize(
    "written, expected",
    [("1e25", 1e25), ("3.8e25", 3.8e25), ("3.10", 3.1), ("419", 419), ("14.8T", 14_800_000_000_000),
     ("2.788M", 2_788_000), ("119K", 119_000), ("-0.5", -0.5), ("'419'", 419)],
)
def test_figures_read_as_numbers_with_yaml_1_2_meanings(write, written, expected):
    path = write(replace(GOOD, "value: 419", f"value: {written}"))
    result = load_file(path)
    assert result.problems == []
    claim = result.records[0].report.claims[0]
    assert claim.value == expected
    assert isinstance(claim.value, type(expected))
    assert claim.value_text == written.strip("'")


def test_text_fields_keep_what_was_written(write):
    # PyYAML (YAML 1.1) would read `no` as False and `3.10` as 3.1; here a text field keeps the text.
    text = replace(GOOD, "locator: Sec. 3.3.4", "locator: 3.10")
    text = replace(text, "unit: days", "unit: no")
    result = load_file(write(text))
    claims = result.records[0].report.claims
    assert claims[0].locator == "3.10"
    assert claims[1].unit == "no"


@pytest.mark.parametrize(
    "written, says",
    [
        ("1,082,990", "write it without separators (1082990)"),
        ("1_000", "without underscores"),
        ("012", "leading zero"),
        ("12:30", "base-60"),
        ("38-43", "write a range as [low, high]"),
        ("no", "is not a figure"),
        ("true", "is not a figure"),
        (".inf", "is not a figure"),
        ("[43, 38]", "range is not ordered"),
        ("[1, 2, 3]", "a range is [low, high]"),
    ],
)
def test_ambiguous_or_wrong_figures_are_rejected_with_a_reason(kb, write, kb_dir, written, says):
    write(replace(GOOD, "value: 419", f"value: {written}"))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 1
    line = only_problem(r)
    assert line.startswith(f"{kb_dir}/example-run.yaml:15:12: ")
    assert says in line
    assert line.endswith("(claims.0.value)")


def test_parse_number_keeps_integers_integral():
    assert parse_number("1082990") == 1082990 and isinstance(parse_number("1082990"), int)
    assert isinstance(parse_number("1e3"), float)


# Strictness: duplicates, tags, unknown fields.


def test_duplicate_keys_are_rejected_naming_both_lines(kb, write, kb_dir):
    write(replace(GOOD, "    unit: interruptions\n", "    unit: interruptions\n    value: 420\n"))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 1
    assert only_problem(r) == (
        f"{kb_dir}/example-run.yaml:17:5: KB107: duplicate key 'value': first at line 15, again at line 17"
    )


@pytest.mark.parametrize(
    "tagged",
    ["!!python/object/apply:os.system ['echo hacked']", "!!python/name:os.system", "!custom 419", "!!binary aGk=",
     "!!int 419", "!!timestamp 2024-01-01"],
)
def test_unsafe_and_unknown_tags_are_rejected(kb, write, kb_dir, tagged):
    write(replace(GOOD, "value: 419", f"value: {tagged}"))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 1
    assert "is not allowed" in only_problem(r)
    assert ":15:12:" in only_problem(r)


def test_an_explicit_string_tag_is_allowed(write):
    result = load_file(write(replace(GOOD, "locator: Sec. 3.3.4", "locator: !!str 3.10")))
    assert result.records[0].report.claims[0].locator == "3.10"


def test_unknown_fields_are_rejected_with_a_suggestion(kb, write, kb_dir):
    write(replace(GOOD, "    source: paper\n    locator", "    sorce: paper\n    locator"))
    r = kb("validate", "--claims", kb_dir)
    line = only_problem(r)
    assert line == (f"{kb_dir}/example-run.yaml:17:5: KB201: unknown field 'sorce'; did you mean 'source'? "
                    "(claims.0.sorce)")


def test_a_wrong_status_suggests_the_closest(kb, write, kb_dir):
    write(replace(GOOD, "status: confirmed", "status: confirmd"))
    assert "did you mean 'confirmed'?" in only_problem(kb("validate", "--claims", kb_dir))


def test_a_missing_field_points_at_the_mapping_that_lacks_it(kb, write, kb_dir):
    write(replace(GOOD, "    statement: 419 unexpected interruptions in a 54-day snapshot.\n", ""))
    line = only_problem(kb("validate", "--claims", kb_dir))
    assert line == f"{kb_dir}/example-run.yaml:13:5: KB202: missing required field 'statement' (claims.0.statement)"


def test_merge_keys_are_refused(kb, write, kb_dir):
    write(replace(GOOD, "    status: confirmed\n    patterns", "    <<: {status: confirmed}\n    patterns"))
    assert "merge keys" in only_problem(kb("validate", "--claims", kb_dir))


# Hostile input: bounded, fast, clear.

ALIAS_BOMB = "\n".join(
    [f"a0: &a0 [{', '.join(['lol'] * 9)}]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
) + "\n"


def test_an_alias_bomb_fails_fast_and_small(kb, write, kb_dir):
    # 9**10 values once expanded; refused before expanding anything.
    write(ALIAS_BOMB)
    r = kb("validate", "--claims", kb_dir)  # refused before expanding: it returns at all (tests/hostile times it)
    assert r.exit_code == 1
    assert "alias bomb" in only_problem(r)
    tracemalloc.start()
    kb("validate", "--claims", kb_dir)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100 * 1024 * 1024


def test_a_recursive_alias_is_refused():
    with pytest.raises(YamlError, match="recursive"):
        parse_yaml("a: &a [1, *a]\n")


def test_deep_nesting_is_refused():
    with pytest.raises(YamlError, match="nested deeper than"):
        parse_yaml("[" * 1000 + "]" * 1000)


def test_invalid_utf8_is_unreadable_exit_2_with_line(kb, write, kb_dir):
    write(GOOD.encode() .replace(b"Example Lab", b"Example \xff Lab"))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 2
    assert only_problem(r) == f"{kb_dir}/example-run.yaml:3:23: KB102: not valid UTF-8 (byte 0xff)"


def test_a_nul_byte_is_refused_with_its_line(kb, write, kb_dir):
    write(replace(GOOD, "Example Lab", "Example\x00Lab"))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 1
    assert only_problem(r) == f"{kb_dir}/example-run.yaml:3:22: KB105: contains a NUL byte"


def test_control_characters_are_refused_with_their_line(kb, write, kb_dir):
    write(replace(GOOD, "Example Lab", "Example\x07Lab"))
    line = only_problem(kb("validate", "--claims", kb_dir))
    assert line.startswith(f"{kb_dir}/example-run.yaml:3:22: ")
    assert "not allowed" in line


def test_a_syntax_error_names_file_and_line(kb, write, kb_dir):
    write(replace(GOOD, "models: [Example 7B]", "models: [Example 7B"))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 1
    assert only_problem(r).startswith(f"{kb_dir}/example-run.yaml:6:")


def test_a_five_megabyte_line_is_refused_as_too_long(kb, write, kb_dir):
    write(replace(GOOD, "statement: 419 unexpected", "statement: " + "x" * 5_000_000 + " 419 unexpected"))
    r = kb("validate", "--claims", kb_dir)
    assert "too long: 5,000,051 characters, at most 2,000" in only_problem(r)


@pytest.mark.parametrize("field, old", [("value", "value: 419"), ("id", "id: example-run"),
                                        ("status", "status: confirmed"), ("url", "url: https://example.org/report")])
def test_a_message_quotes_at_most_about_eighty_characters_of_a_value(kb, write, kb_dir, field, old):
    write(replace(GOOD, old, f"{field}: " + "9" * 5_000_000))
    r = kb("validate", "--claims", kb_dir)
    assert r.exit_code == 1
    assert 0 < len(r.stdout) < 1000 * len(r.stdout.splitlines())
    assert all(len(line) < 400 for line in r.stdout.splitlines()), r.stdout[:2000]
    assert "5,000,000 characters" in r.stdout


def test_an_unclosed_quote_names_the_line_where_it_opened(kb, write, kb_dir):
    write(replace(GOOD, "statement: 419 unexpected interruptions in a 54-day snapshot.",
                  'statement: "419 unexpected interruptions in a 54-day snapshot.'))
    problem = only_problem(kb("validate", "--claims", kb_dir))
    assert problem.startswith(f"{kb_dir}/example-run.yaml:{len(GOOD.splitlines()) + 1}:")  # found at the end
    assert "(while scanning a quoted scalar that starts at line 14, column 16)" in problem


def test_a_missing_path_is_exit_2(kb, kb_dir):
    r = kb("validate", "--claims", kb_dir, kb_dir / "nope.yaml")
    assert r.exit_code == 2
    assert "no such file or folder" in r.stdout


def test_an_empty_file_and_a_list_are_not_records(kb, write, kb_dir):
    write("", name="empty")
    write("- 1\n- 2\n", name="listy")
    out = kb("validate", "--claims", kb_dir).stdout
    assert f"{kb_dir}/empty.yaml:1:1: KB114: the file is empty" in out
    assert f"{kb_dir}/listy.yaml:1:1: KB115: a record is a mapping of fields, got a list" in out


def test_two_documents_in_one_file_are_refused(kb, write, kb_dir):
    write(GOOD + "---\nid: other\n")
    assert "expected a single document" in only_problem(kb("validate", "--claims", kb_dir))


# Reporting.


def test_every_problem_of_every_file_in_one_run(kb, write, kb_dir):
    def other(name: str) -> str:  # another report, not a near duplicate of the first
        return replace(replace(GOOD, "id: example-run", f"id: {name}"), "organization: Example Lab",
                       f"organization: {name.title()} Lab").replace("An Example Training Report", f"The {name} Report")

    write(replace(replace(GOOD, "status: confirmed", "status: confirmd"), "kind: primary", "kind: primry"))
    write(other("second-run"), name="second-run")
    write(replace(other("third-run"), "value: 419", "value: lots"), name="third-run")
    r = kb("validate", "--claims", kb_dir)
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    assert [l.split(":")[0].rsplit("/", 1)[1] for l in lines] == ["example-run.yaml", "example-run.yaml",
                                                                   "third-run.yaml"]
    assert "3 files, 1 record, 3 claims: 3 errors" in r.stderr


def test_values_that_are_not_valid_do_not_hide_the_files_other_problems(kb, write, kb_dir):
    text = replace(GOOD, "id: example-run", "id: 9-example-run")  # an id may not start with a digit
    text = replace(text, "value: 419", "value: 1,024")  # a figure a reader could take two ways
    text = replace(text, "    source: paper\n    locator", "    source: papr\n    locator")  # no such source
    text = replace(text, "value: 54", "value: -54")  # negative days
    write(text)
    r = kb("validate", "--claims", kb_dir, "--format", "json")
    found = [(p["line"], p["field"], p["message"][:30]) for p in json.loads(r.stdout)["problems"]]
    assert found == [
        (1, "id", "'9-example-run' is not a valid"),
        (15, "claims.0.value", "'1,024' is not a figure (a num"),
        (17, "claims.0.source", "source 'papr' is not defined i"),
        (26, "claims.1.value", "-54 days is impossible: below "),
    ]
    # nothing is said of the stand-ins: the id is not compared with the file name, the formula that uses the
    # figure that is not valid is not reported, no claim is said to lack a figure
    messages = " ".join(p["message"] for p in json.loads(r.stdout)["problems"])
    assert "must equal the file name" not in messages and "formula" not in messages


def test_github_annotations_under_actions(kb, write, kb_dir):
    write(replace(GOOD, "status: confirmed", "status: confirmd"))
    r = kb("validate", "--claims", kb_dir, env={"GITHUB_ACTIONS": "true"})
    line = only_problem(r)
    assert line.startswith(f"::error file={kb_dir}/example-run.yaml,line=21,col=13,title=KB203::'confirmd' is not one of")
    assert line.endswith("(claims.0.status)")


def test_json_format_gives_problems_as_data(kb, write, kb_dir):
    write(replace(GOOD, "status: confirmed", "status: confirmd"))
    r = kb("validate", "--claims", kb_dir, "--format", "json")
    data = json.loads(r.stdout)
    assert r.exit_code == 1
    assert data["ok"] is False and data["files"] == 1
    (p,) = data["problems"]
    assert (p["line"], p["col"], p["field"], p["severity"]) == (21, 13, "claims.0.status", "error")


def test_validate_one_file_against_the_knowledge_base(kb, write, kb_dir, tmp_path):
    # A new record outside the folder may use claims of reports already in the knowledge base.
    write(GOOD)
    new = tmp_path / "new-run.yaml"
    text = replace(GOOD, "id: example-run", "id: new-run")
    text = replace(text, "formula: snapshot-days * 24 / unexpected-interruptions",
                   "formula: example-run/snapshot-days * 24 / example-run/unexpected-interruptions")
    new.write_text(text)
    r = kb("validate", "--claims", kb_dir, new)
    assert r.exit_code == 0, r.output
    assert "1 file, 1 record" in r.stderr


def test_help_documents_exit_codes(kb):
    r = kb("validate", "--help")
    assert r.exit_code == 0
    assert "Exit status: 0 no problems, 1 problems found, 2 a path cannot be read" in " ".join(r.stdout.split())


def test_record_files_are_the_yaml_files_of_a_folder_in_path_order(tmp_path):
    """*.yaml and *.yml at any depth; names starting with _ or . skipped (the vocabulary, the template, hidden
    folders); links to files kept, links that lead nowhere kept (to be reported), links to folders not followed."""
    import os

    from kb.load import record_files

    root = tmp_path / "claims"
    (root / "b" / "c").mkdir(parents=True)
    (root / "_drafts").mkdir()
    (root / ".git").mkdir()
    for name in ["z.yaml", "a.yml", "b/c/deep.yaml", "b/m.yaml", "_vocabulary.yaml", "_drafts/x.yaml",
                 ".git/y.yaml", "notes.md", "b/.hidden.yaml"]:
        (root / name).write_text("id: x\n")
    os.symlink(root / "z.yaml", root / "link.yaml")
    os.symlink(root / "missing.yaml", root / "dangling.yaml")
    os.symlink(root / "loop.yaml", root / "loop.yaml")
    os.symlink(root / "b", root / "folder-link")
    got = [p.relative_to(root).as_posix() for p in record_files(root)]
    assert got == ["a.yml", "b/c/deep.yaml", "b/m.yaml", "dangling.yaml", "link.yaml", "loop.yaml", "z.yaml"]
    assert record_files(root / "z.yaml") == [root / "z.yaml"]


@pytest.mark.parametrize("title", ['"<the report\'s own title>"', '"\\x3cthe report\'s own title\\x3e"',
                                   '"\\u003cthe report\'s own title>"'])
def test_a_placeholder_is_found_however_its_angle_brackets_are_written(kb, write, kb_dir, title):
    """A file whose text has neither "<" nor a backslash cannot hold a placeholder, and is not searched for one;
    an escaped bracket still makes one."""
    write(GOOD.replace("title: An Example Training Report", f"title: {title}"))
    r = kb("validate", "--claims", kb_dir, "--format", "json")
    assert r.exit_code == 1
    assert "is a placeholder from the template" in r.stdout


@pytest.mark.parametrize("change", [None, ("    value: 419\n", "    value: 1,419\n"), ("  - id: paper\n", "  - id: Paper\n")])
def test_positions_found_in_the_first_parse_are_those_found_later(write, change):
    """`audit FILE` names every claim's line, so it asks for every position at once (all_positions): the same
    record, problems and positions as finding them when first asked for, by parsing the text again."""
    path = write(replace(GOOD, *change) if change else GOOD)
    later, at_once = load_file(path), load_file(path, all_positions=True)
    assert at_once.problems == later.problems
    a, b = (r.records + r.salvaged for r in (at_once, later))
    assert [x.report for x in a] == [x.report for x in b]
    for x, y in zip(a, b):
        for loc in [(), ("title",), ("sources", 0, "url"), *(("claims", i) for i in range(3)),
                    ("claims", 1, "value"), ("disclosures", "ops-staffing")]:
            assert x.where(*loc) == y.where(*loc) and x.where(*loc, key=True) == y.where(*loc, key=True)
