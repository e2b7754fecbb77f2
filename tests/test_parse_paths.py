"""The two ways to read a record file give the same: kb.fastyaml (rapidyaml's JSON, for the files it reads exactly)
and kb.yaml12 alone (libyaml), which reads every file the fast way declines.

"The same" is the same data, the same positions of the top-level fields (the ones a record keeps), and for a file
that is not valid the same problem: code, message, line and column (the fast way must have declined it). Checked
on every record in claims/ and in the fixture knowledge base, every hostile case, a generated corpus, targeted
cases, and texts generated and mutated at random (seeded, so every run checks the same ones).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from conftest import CLAIMS, GOOD, REAL_CLAIMS, ROOT

from kb import fastyaml, yaml12
from kb.fastyaml import declined, parse_record, read_fast
from kb.load import load_file, record_files
from kb.yaml12 import YamlError, parse_yaml, read_text

sys.path.insert(0, str(ROOT))
from benchmarks.generate import generate  # noqa: E402

HOSTILE = ROOT / "tests" / "hostile"


def outcome(parse, text: str) -> tuple:
    """What a way of reading makes of a text: its data and the top-level fields' positions, or its problem."""
    try:
        data, positions = parse(text)
    except YamlError as e:
        return ("problem", e.code, e.message, e.line, e.col)
    top = positions.top()
    return ("data", data, top.values, top.keys)


def exact(text: str) -> tuple:
    return outcome(lambda t: parse_yaml(t, lazy=True), text)


def fast(text: str) -> tuple:
    return outcome(parse_record, text)


def same_both_ways(text: str, where: str = "") -> bool:
    """Asserts both ways agree; True if the fast way took the text. A problem must have been declined."""
    slow = exact(text)
    assert fast(text) == slow, f"{where}: the fast way differs ({declined(text)})"
    taken = declined(text) is None
    assert not (taken and slow[0] == "problem"), f"{where}: the fast way took a text libyaml refuses"
    return taken


def texts_of(folder: Path) -> dict[str, str]:
    out = {}
    for f in record_files(folder):
        try:
            out[str(f)] = read_text(f)
        except YamlError:  # not readable as text (bytes, size): the same problem either way, before parsing
            continue
    return out


def test_rapidyaml_is_there():
    """Every other test here would pass with no fast way at all: make sure there is one."""
    assert fastyaml.ryml is not None
    assert declined(GOOD) is None


def test_every_record_of_the_fixture_knowledge_base_reads_the_same():
    texts = texts_of(CLAIMS)
    taken = [name for name, text in texts.items() if same_both_ways(text, name)]
    assert len(taken) >= len(texts) // 2  # the frozen records: most are plain enough for the fast way


def test_every_record_in_claims_reads_the_same():
    for name, text in texts_of(REAL_CLAIMS).items():
        same_both_ways(text, name)


def test_every_hostile_case_reads_the_same():
    files = sorted(HOSTILE.glob("*.yaml")) + sorted(HOSTILE.glob("*/*.yaml"))
    assert len(files) >= 40
    refused = 0
    for f in files:
        try:
            text = read_text(f)
        except YamlError:
            continue
        same_both_ways(text, f.name)
        refused += exact(text)[0] == "problem"
    assert refused >= 20  # the YAML-level cases: each declined by the fast way


def test_a_hundred_thousand_values_are_left_to_libyaml():
    head = GOOD.partition("claims:\n")[0]
    body = "".join(f"  - {{id: c{i}, statement: Claim {i}., value: {i}, unit: GPUs, status: unverified}}\n"
                   for i in range(20_000))
    text = head + "claims:\n" + body
    assert declined(text) == "near the limit of values"
    assert fast(text) == exact(text)
    assert exact(text)[1] == "KB109"


def test_a_generated_corpus_reads_the_same(tmp_path):
    generate(tmp_path / "claims", reports=30, claims=20, seed=3)
    texts = texts_of(tmp_path / "claims")
    assert len(texts) == 30
    taken = sum(same_both_ways(text, name) for name, text in texts.items())
    assert taken >= 27  # the generator writes plain records: nearly all go the fast way


# Targeted cases: (name, text, taken the fast way?). Each must read the same both ways; where the fast way takes
# it, its data is checked too (below).
RECORD = "id: x\ntitle: A title\n"
CASES = [
    ("version 3.10", RECORD + "value: 3.10\n", True),
    ("no", RECORD + "value: no\n", True),
    ("leading zero", RECORD + "value: 012\n", True),
    ("exponent", RECORD + "value: 1e25\n", True),
    ("double-quoted", RECORD + 'value: "quoted"\n', True),
    ("quoted number", RECORD + "value: '3.10'\n", True),
    ("decimal 0.5", RECORD + "value: 0.5\n", True),
    ("decimal .5", RECORD + "value: .5\n", False),
    ("decimal -.5", RECORD + "value: -.5\n", False),
    ("decimal 5.", RECORD + "value: 5.\n", False),
    ("1.0", RECORD + "value: 1.0\n", True),
    ("plus sign", RECORD + "value: +1\n", False),
    ("true", RECORD + "flag: true\n", False),
    ("quoted true", RECORD + "flag: 'true'\n", True),
    ("True", RECORD + "flag: True\n", True),
    ("nan and inf", RECORD + "a: .nan\nb: -.inf\n", False),
    ("multi-line plain", RECORD + "note: one\n  two\n\n  three\n", True),
    ("multi-line quoted", RECORD + "note: 'one\n  two'\n", True),
    ("block literal", RECORD + "note: |\n  one\n    two\n\nnext: x\n", True),
    ("block folded strip", RECORD + "note: >-\n  one\n  two\n\n  three\n", True),
    ("block keep", RECORD + "note: |+\n  one\n\n", True),
    ("block with indentation indicator", RECORD + "note: |2\n   one\n", False),
    ("block header with a comment", RECORD + "note:  | #- c\n  one\n", False),
    ("block at the end without a line break", RECORD + "note: >\n  one", False),
    ("empty value", RECORD + "note:\nnext: x\n", True),
    ("empty value at the end", RECORD + "note:", True),
    ("tilde", RECORD + "note: ~\n", False),
    ("quoted tilde", RECORD + "note: '~'\n", False),
    ("null", RECORD + "note: null\n", True),
    ("Null", RECORD + "note: Null\n", False),
    ("quoted empty", RECORD + "note: ''\n", False),
    ("comments", "# a record\n\n" + RECORD + "note: a # comment\nother: a#b\n# end\n", True),
    ("comment before a list", RECORD + "items:   # the list\n  # first\n\n  - a\n", True),
    ("list at column 1", RECORD + "items:\n- a\n- b: c\n  d: e\n", True),
    ("unicode", RECORD + "note: 2–3 × 10⁹ GPUs, ≈ 😀\n", True),
    ("CRLF", RECORD.replace("\n", "\r\n") + "note: x\r\n", False),
    ("BOM", "\ufeff" + RECORD, False),
    ("tab", RECORD + "note:\tx\n", False),
    ("tab in a quote", RECORD + 'note: "a\tb"\n', False),
    ("duplicate key", RECORD + "title: again\n", False),
    ("duplicate nested key", RECORD + "claims:\n  - id: a\n    id: b\n", False),
    ("anchor and alias", RECORD + "a: &x one\nb: *x\n", False),
    ("alias undefined", RECORD + "b: *x\n", False),
    ("tag", RECORD + "value: !!float 3\n", False),
    ("str tag", RECORD + "value: !!str 3\n", False),
    ("merge key", RECORD + "<<: {a: b}\n", False),
    ("list at the top", "- a\n- b\n", False),
    ("scalar at the top", "just text\n", False),
    ("empty file", "", False),
    ("only comments", "# nothing\n", False),
    ("document start", "---\n" + RECORD, False),
    ("two documents", RECORD + "---\nid: y\n", False),
    ("document end", RECORD + "...\n", False),
    ("directive", "%YAML 1.2\n---\n" + RECORD, False),
    ("flow list", RECORD + "models: [A 7B, 'B', \"C\"]  # three\n", True),
    ("empty flow list", RECORD + "models: []\n", True),
    ("flow mapping", RECORD + "d:\n  k: {status: partial, note: It's x., claims: [a, b]}\n", True),
    ("nested flow list", RECORD + "models: [[a]]\n", False),
    ("flow list over two lines", RECORD + "models: [a,\n  b]\n", False),
    ("flow list with a trailing comma", RECORD + "models: [a, ]\n", False),
    ("complex key in flow", RECORD + "models: [?a]\n", False),
    ("comment in a flow mapping", RECORD + "d: {n: In  #terrupted}\n", False),
    ("value starting with ]", RECORD + "a: ]x\n", False),
    ("key starting with ]", RECORD + "]a: x\n", False),
    ("reserved indicator", RECORD + "a: @x\n", False),
    ("prose with & and ?", RECORD + "a: R & D, Q&A?\nb: https://x.org/?a=1&b=2\n", True),
    ("key of 1,100 characters", RECORD + "k" * 1100 + ": x\n", False),
    ("quoted key", RECORD + '"a b": x\n', False),
    ("key with a space", RECORD + "a b: x\n", False),
    ("mapping value on the same line", RECORD + "a: b: c\n", False),
    ("bad indentation", RECORD + "a:\n    b: 1\n  c: 2\n", False),
    ("unclosed quote", RECORD + "a: 'x\n", False),
    ("escaped surrogate", RECORD + 'a: "\\ud800"\n', False),
    ("escapes", RECORD + 'a: "x\\ny\\"z\\\\"\n', True),
    ("control character", RECORD + "a: x\x07y\n", False),
    ("NEL", RECORD + "a: x\x85y\n", False),
    ("deep nesting", "a:\n" + "".join(" " * (2 * i) + f"k{i}:\n" for i in range(1, 30)) + " " * 60 + "x: 1\n", False),
]


@pytest.mark.parametrize("name,text,taken", CASES, ids=[c[0] for c in CASES])
def test_targeted_case(name, text, taken):
    assert same_both_ways(text, name) == taken, declined(text)


def test_what_the_fast_way_makes_of_the_figures():
    data, _ = parse_record(RECORD + "a: 3.10\nb: no\nc: 012\nd: 1e25\ne: \"quoted\"\nf: ~x\ng: null\nh:\n"
                                    "i: [0.5, '1.0', -0]\n")
    assert data == {"id": "x", "title": "A title", "a": "3.10", "b": "no", "c": "012", "d": "1e25", "e": "quoted",
                    "f": "~x", "g": None, "h": None, "i": ["0.5", "1.0", "-0"]}


def test_positions_below_the_top_come_from_libyaml_when_asked():
    """A file read the fast way finds a deeper value's position by reading the text again with libyaml."""
    data, positions = parse_record(GOOD)
    full = parse_yaml(GOOD)[1]
    assert isinstance(positions, yaml12.LazyPositions) and declined(GOOD) is None
    for loc in full.values:
        assert positions.find(loc) == full.find(loc), loc
    for loc in full.keys:
        assert positions.find(loc, prefer_key=True) == full.find(loc, prefer_key=True), loc


def test_load_file_reads_a_plain_record_without_libyaml(tmp_path, monkeypatch):
    p = tmp_path / "example-run.yaml"
    p.write_text(GOOD, encoding="utf-8")

    def no_libyaml(text):
        raise AssertionError("libyaml was asked")

    monkeypatch.setattr(yaml12, "compose", no_libyaml)
    result = load_file(p)
    assert not result.problems and result.records[0].report.id == "example-run"
    assert result.records[0].summary().title == "An Example Training Report"  # its line: no second parse


def test_a_few_files_are_read_with_libyaml_and_a_knowledge_base_the_fast_way(tmp_path, monkeypatch):
    """Importing rapidyaml costs about as much as reading four records with libyaml, so `kb validate FILE` and
    `audit FILE` read their file with kb.yaml12 alone; from FAST_PARSE_MIN_FILES files on, the fast way."""
    import subprocess

    from kb.load import FAST_PARSE_MIN_FILES, load_paths

    folder = tmp_path / "claims"
    generate(folder, reports=FAST_PARSE_MIN_FILES, claims=5, seed=3)
    files = record_files(folder)
    asked = []
    monkeypatch.setattr(fastyaml, "parse_record", lambda text: asked.append(1) or parse_yaml(text, lazy=True))
    few = load_paths(files[:FAST_PARSE_MIN_FILES - 1])
    assert not asked and len(few.records) == FAST_PARSE_MIN_FILES - 1
    many = load_paths([folder])
    assert len(asked) == len(many.records) == FAST_PARSE_MIN_FILES

    # and rapidyaml is not even imported for one file
    code = ("import sys; from kb.pipeline import validate_files; "
            f"v = validate_files([{str(files[0])!r}], None); "
            "print(len(v.loaded.records), 'ryml' in sys.modules, 'kb.fastyaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "False", "False"]


def test_a_record_with_a_problem_has_its_line_either_way(tmp_path, monkeypatch):
    text = GOOD.replace("    value: 54\n", "    value: 54 days or so\n")
    p = tmp_path / "example-run.yaml"
    p.write_text(text, encoding="utf-8")
    by_fast = load_file(p).problems
    monkeypatch.setattr(fastyaml, "ryml", None)
    assert declined(text) == "rapidyaml is not installed"
    by_libyaml = load_file(p).problems
    assert by_fast == by_libyaml and by_fast and by_fast[0].line == 26


def test_loading_a_knowledge_base_gives_the_same_records_and_problems(tmp_path, monkeypatch):
    """load_paths end to end, the fixture records, a generated corpus and a few hostile cases together: the same
    records, summaries (with the line of each title) and problems with rapidyaml as without."""
    from kb.load import load_paths

    folder = tmp_path / "claims"
    generate(folder, reports=8, claims=10, seed=5)
    for f in list(CLAIMS.glob("*.yaml")) + [HOSTILE / "duplicate-key-in-claim.yaml", HOSTILE / "tag-float.yaml",
                                            HOSTILE / "date-impossible.yaml", HOSTILE / "top-level-list.yaml"]:
        (folder / f.name).write_bytes(f.read_bytes())

    def loaded():
        result = load_paths([folder])
        return ([(r.path, r.report.model_dump(), r.summary(), r.salvaged) for r in result.records + result.salvaged],
                result.problems)

    by_fast = loaded()
    monkeypatch.setattr(fastyaml, "ryml", None)
    assert loaded() == by_fast
    assert len(by_fast[0]) >= 15 and len(by_fast[1]) >= 4


def test_rapidyaml_says_nothing_on_stderr(capfd):
    text = RECORD + "a: b: c\n"
    assert declined(text).startswith("rapidyaml")
    with pytest.raises(YamlError):
        parse_record(text)
    assert capfd.readouterr().err == ""


# Texts made at random: records with one to three small edits (characters YAML gives a meaning, lines indented,
# repeated or removed), and small records built from pieces that have parted the two parsers before.
EDITS = list(" :-#'\"[]{},&*!|>?%@`\n~.0123456789eE+_aZ\\/<") + [
    "\t", "\r", "  ", "- ", ": ", "\n  ", "\n- ", "|-\n", ">\n", "  #", "null", "~", "true", "0.", ".5", "---\n"]


def _edited(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    if rng.random() < 0.7:
        at = rng.randrange(0, max(1, len(lines) - 40))
        lines = lines[:3] + lines[at:at + 40]
    text = "\n".join(lines)
    for _ in range(rng.choice([1, 1, 2, 3])):
        i, op = rng.randrange(len(text) + 1), rng.random()
        if op < 0.4:
            text = text[:i] + rng.choice(EDITS) + text[i:]
        elif op < 0.6:
            text = text[:i] + text[i + rng.randint(1, 3):]
        elif op < 0.8:
            text = text[:i] + rng.choice(EDITS) + text[i + 1:]
        else:
            lines = text.split("\n")
            j, how = rng.randrange(len(lines)), rng.random()
            if how < 0.3:
                lines[j] = " " + lines[j]
            elif how < 0.6:
                lines[j] = lines[j][1:]
            elif how < 0.8:
                lines.insert(j, lines[j])
            else:
                del lines[j]
            text = "\n".join(lines)
    return text


WORDS = ["x", "3.10", "no", "012", "1e25", "0.5", ".5", "5.", "-.5", "0.", "-1", "+1", "1_000", "True", "true",
         "null", "~", "a b", "a:b", "a #b", "a#b", "it's", "R&D", "50 %", "a,b", "x [y]", "x]", "é", "😀", "a\\b",
         'a"b', "1:30", "2024-01-01", "http://x.y/?a=1&b=2", "x  ", "1.0", "1.e5", "-", "? x", ": x", "@x", "*x",
         "&x", "!x", "|", ">", ".inf", "nan", "0x1F", "00.5", ""]


def _built(rng: random.Random, indent: int = 0, depth: int = 0) -> str:
    def scalar(indent: int) -> str:
        word, r = rng.choice(WORDS), rng.random()
        if r < 0.35:
            return " " + word
        if r < 0.5:
            escape = rng.choice(["", "", "\\n", "\\t", "\\\\", '\\"', "\\/", "\\ ", "\\N", "\\0", "\\e"])
            return ' "' + word.replace("\\", "\\\\").replace('"', '\\"') + escape + '"'
        if r < 0.6:
            return " '" + word.replace("'", "''") + "'"
        if r < 0.75:
            header = rng.choice(["|", "|-", "|+", ">", ">-", ">+", "|2", " | # c"])
            body = ["" if rng.random() < 0.15 else " " * (indent + 2) + rng.choice(["", " ", "\t"]) * (rng.random() < 0.1)
                    + rng.choice(WORDS) for _ in range(rng.randint(0, 4))]
            return " " + header + "\n" + "\n".join(body) + rng.choice(["", "\n", "\n\n"])
        if r < 0.85:
            quote = rng.choice(["", "'", '"'])
            joint = "\n" + " " * (indent + rng.choice([0, 1, 2, 4])) + rng.choice(["", "\n"])
            return " " + quote + joint.join(rng.choice(WORDS) for _ in range(rng.randint(2, 4))) + quote
        if r < 0.95:
            items = [rng.choice([rng.choice(WORDS), f"'{rng.choice(WORDS)}'"]) for _ in range(rng.randint(0, 3))]
            return " [" + rng.choice([", ", ","]).join(items) + rng.choice(["]", ", ]", "]  # c"])
        return ""

    out = []
    for k in range(rng.randint(1, 4)):
        key = rng.choice(["id", "title", "value", "note", f"k{k}"]) if rng.random() < 0.9 else \
            rng.choice(["a b", "'q'", "~", "null", "<<", "true"])
        pad = " " * indent
        if rng.random() < 0.1:
            out.append(pad + rng.choice(["# comment", "", "  # c"]))
        if depth < 3 and rng.random() < 0.25:
            out.append(pad + key + ":" + rng.choice(["", " # c"]))
            if rng.random() < 0.5:
                out.append(_built(rng, indent + rng.choice([1, 2, 4]), depth + 1))
            else:
                at = indent + rng.choice([0, 2])
                for _ in range(rng.randint(1, 3)):
                    out.append(" " * at + ("-" + scalar(at + 2) if rng.random() < 0.5
                                           else "- " + _built(rng, at + 2, depth + 1).lstrip(" ")))
        else:
            out.append(pad + key + ":" + scalar(indent))
    return "\n".join(out)


def test_edited_records_read_the_same():
    rng = random.Random(18)
    seeds = list(texts_of(CLAIMS).values()) + [GOOD]
    taken = 0
    for n in range(3000):
        taken += same_both_ways(_edited(rng.choice(seeds), rng), f"edit {n}")
    assert taken >= 200  # enough of them go the fast way for the comparison to mean something


def test_built_records_read_the_same():
    rng = random.Random(2)
    taken = 0
    for n in range(8000):
        text = _built(rng) + rng.choice(["\n", "", "\n# end\n"])
        if rng.random() < 0.15:
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice([" ", "\n", ":", "-", "#", "'", '"', "[", "]", ",", "|"]) + text[i:]
        taken += same_both_ways(text, f"built {n}:\n{text}")
    assert taken >= 800


def test_reading_a_record_the_fast_way_again_and_again_keeps_no_memory():
    """rapidyaml's emit_json_malloc never frees its buffer: 40 KB a record, 70 MB over a 100,000-claim build."""
    text = (Path(__file__).parent / "fixtures" / "kb" / "claims" / "llama-3-405b.yaml").read_text(encoding="utf-8")
    assert fastyaml.read_fast(text) is not None  # this record is read the fast way

    def resident_kb() -> int:
        return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS"))

    for _ in range(50):
        fastyaml.read_fast(text)
    before = resident_kb()
    for _ in range(1000):
        fastyaml.read_fast(text)
    assert resident_kb() - before < len(text.encode()) * 1000 // 1024 // 4  # under a quarter of one copy a read


def test_positions_of_a_file_not_kept_in_memory_are_read_again_from_the_file(tmp_path):
    path = tmp_path / "example-run.yaml"
    path.write_text(GOOD, encoding="utf-8")
    text, digest, _ = yaml12.read_text_and_digest(path)
    _, kept = parse_yaml(text)
    again = yaml12.FilePositions(path, digest, kept.top())
    assert again.find(("claims", 2, "formula")) == kept.find(("claims", 2, "formula")) != (None, None)
    path.write_text(GOOD + "\n# edited since\n", encoding="utf-8")  # not the text that was read: no line
    changed = yaml12.FilePositions(path, digest, kept.top())
    assert changed.find(("claims", 2, "formula")) == (None, None)
    assert changed.find(("title",)) == kept.find(("title",))  # the top-level fields' positions were kept


def test_a_quoted_key_is_found_where_its_pattern_finds_it():
    """A quoted key sends a file to libyaml; it is looked for with str.find (a long text's many quotes made the
    pattern slow), at the same places as the pattern, on every record and on seeded strings."""
    rng = random.Random(17)
    pieces = ["'", '"', ":", " ", "\n", "a", "':", '":', "x: y"]
    texts = [p.read_text(encoding="utf-8") for p in sorted(CLAIMS.glob("*.yaml")) + sorted(REAL_CLAIMS.glob("*.yaml"))]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(5000)]
    for text in texts:
        m = fastyaml._QUOTED_KEY.search(text)
        assert fastyaml._quoted_key(text) == (m.end() if m else None), repr(text)
