"""The validators kept in the database (kb.compiled) take what the models take, and make the same values.

`kb build` stores the core schema pydantic builds from kb.model; `kb validate FILE` and `audit FILE` validate
with it, without pydantic's models, and leave every record it refuses to the models (kb.load). So it must never
accept what the models refuse, and what it makes must be what the models make: the same fields, values, private
attributes and methods. Every record of the project, the labelled set, the fixtures, the hostile corpus and a
generated corpus is validated both ways; and the one-record commands are run with and without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from benchmarks.generate import generate
from conftest import CLAIMS, GOOD, REAL_CLAIMS, ROOT, VOCABULARY, replace
from kb import compiled
from kb.load import load_file, load_vocabulary, record_files
from kb.model import Report, Vocabulary
from kb.yaml12 import YamlError, parse_yaml, read_text

RECORDS = sorted({*record_files(REAL_CLAIMS), *record_files(CLAIMS), *(ROOT / "tests" / "audit_labelled" / "records").glob("*.yaml"),
                  *(ROOT / "tests" / "hostile").rglob("*.yaml"), ROOT / "tests" / "fixtures" / "good-record.yaml"})


@pytest.fixture(scope="module")
def validators() -> compiled.Compiled:
    made = compiled.load(compiled.dump())
    assert made is not None
    return made


def same(plain, model) -> None:
    """Plain (kb.compiled's) and model (kb.model's) hold the same values, as the same kind of thing."""
    if isinstance(model, BaseModel):
        assert isinstance(plain, compiled.Plain) and type(plain).__name__ == type(model).__name__
        assert list(plain.__dict__) == list(model.__dict__)
        assert plain.__pydantic_fields_set__ == model.__pydantic_fields_set__
        assert plain.__pydantic_private__ == model.__pydantic_private__
        assert plain.__pydantic_extra__ == model.__pydantic_extra__
        for k in model.__dict__:
            same(plain.__dict__[k], model.__dict__[k])
    elif isinstance(model, (list, tuple)):
        assert type(plain) is type(model) and len(plain) == len(model)
        for a, b in zip(plain, model):
            same(a, b)
    elif isinstance(model, dict):
        assert type(plain) is dict and list(plain) == list(model)
        for k in model:
            same(plain[k], model[k])
    else:
        assert type(plain) is type(model) and plain == model


def errors(e: ValidationError) -> list:
    return [{**x, "ctx": {k: str(v) for k, v in x.get("ctx", {}).items()}} for x in e.errors(include_url=False)]


def both(validate_plain, model: type, data) -> None:
    """The two validate data alike: the same values, or the same errors."""
    try:
        made = model.model_validate(data)
    except ValidationError as e:
        with pytest.raises(ValidationError) as plain_error:
            validate_plain(data)
        assert errors(plain_error.value) == errors(e)
        return
    same(validate_plain(data), made)


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_every_record_validates_alike(validators, path):
    try:
        data, _ = parse_yaml(read_text(path))
    except YamlError:
        return  # not a record's data at all: nothing is validated
    both(validators.report, Report, data)


def test_a_generated_corpus_validates_alike(validators, tmp_path):
    corpus = generate(tmp_path / "claims", 12, 40, style="long")
    for path in record_files(corpus.folder):
        both(validators.report, Report, parse_yaml(read_text(path))[0])


@pytest.mark.parametrize("change", [
    ("  - id: paper\n", "  - id: Paper\n"),  # not an id
    ("    value: 419\n", "    value: 1,419\n"),  # a figure with separators
    ("    value: 419\n", "    value: [3, 1]\n"),  # a range that is not ordered
    ("    status: confirmed\n", "    status: confirmd\n"),
    ("    kind: primary\n", "    kind: primary\n    colour: red\n"),  # an unknown field
    ("    url: https://example.org/report\n", "    url: ftp://example.org/report\n"),
    ("    url: https://example.org/report\n", "    path: ../outside.pdf\n"),
    ("    checked: 2026-08-02\n", "    checked: 2026-13-02\n"),
    ("    patterns: [failure-scaling]\n", "    patterns: [failure-scaling, failure-scaling]\n"),
])
def test_a_broken_record_is_refused_alike(validators, change):
    text = replace(GOOD, *change)
    both(validators.report, Report, parse_yaml(text)[0])


def test_vocabularies_validate_alike(validators):
    data = parse_yaml(read_text(VOCABULARY))[0]
    both(validators.vocabulary, Vocabulary, data)
    # every omission's default rule (every part given) is made as the model makes it
    for o in data["omissions"]:
        o.pop("disclosed", None)
    both(validators.vocabulary, Vocabulary, data)
    plain, model = validators.vocabulary(data), Vocabulary.model_validate(data)
    for a, b in zip(plain.omissions, model.omissions):
        same(a.rules, b.rules)
    data["omissions"][0]["parts"][0]["needs"] = ["no-such-part"]
    both(validators.vocabulary, Vocabulary, data)


def test_the_models_methods_are_the_plain_classes_methods(validators):
    data = parse_yaml(GOOD)[0]
    plain, model = validators.report(data), Report.model_validate(data)
    assert plain == validators.report(data) and plain != model
    c = plain.claims[0]
    assert (c.value_text, c.is_range, c.low, c.high) == (model.claims[0].value_text, model.claims[0].is_range,
                                                         model.claims[0].low, model.claims[0].high)
    assert plain.claim(c.id) is c and plain.source(plain.sources[0].id) is plain.sources[0]
    voc = validators.vocabulary(parse_yaml(read_text(VOCABULARY))[0])
    model_voc = load_vocabulary(VOCABULARY)
    assert voc.pattern_ids == model_voc.pattern_ids and voc.omission_ids == model_voc.omission_ids
    assert voc.omission(voc.omission_ids[0]).id == voc.omission_ids[0]


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_a_file_loads_alike_with_them(validators, path):
    """Problems, positions and stand-ins are the models' own: a record the validators refuse goes to them."""
    plain, model = load_file(path, compiled=validators), load_file(path)
    assert plain.problems == model.problems
    assert [r.salvaged for r in plain.records + plain.salvaged] == [r.salvaged for r in model.records + model.salvaged]
    for a, b in zip(plain.records + plain.salvaged, model.records + model.salvaged):
        if isinstance(a.report, compiled.Plain):
            same(a.report, b.report)
        else:  # refused by the validators: the models' record, with their stand-ins
            assert a.report == b.report


def test_only_validators_this_code_can_use_are_used():
    text = compiled.dump()
    assert compiled.load(None) is None and compiled.load("") is None and compiled.load("{") is None
    stored = json.loads(text)
    assert compiled.load(json.dumps({**stored, "pydantic_core": "0.0.1"})) is None
    renamed = text.replace('{"$function":"no_repeats"}', '{"$function":"os.system"}')
    assert renamed != text and compiled.load(renamed) is None


def test_one_record_commands_use_them_without_pydantics_models(tmp_path):
    """With a database built from the knowledge base, `kb validate FILE` and `audit FILE` validate with the
    stored validators, and import no pydantic model (what made them slow)."""
    from kb.store import build

    db = tmp_path / "kb.db"
    build(CLAIMS, db)
    one = sorted(record_files(CLAIMS))[0]
    script = f"""
import sys
from kb.pipeline import validate_files
from auditor.audit import audit_paths
v = validate_files([{str(one)!r}], {str(CLAIMS)!r}, db={str(db)!r})
assert v.loaded.records and not v.errors, v.problems
audited = audit_paths([{str(one)!r}], claims_dir={str(CLAIMS)!r}, db={str(db)!r})
assert audited[0].report
print(sorted(m for m in ("pydantic.main", "kb.model") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == "[]", out.stderr
