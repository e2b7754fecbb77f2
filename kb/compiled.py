"""The record format's validators without pydantic's model machinery, for the commands that read one record.

`kb validate FILE` and `audit FILE` spent a third of their time importing pydantic's models and building their
validators (about 75 ms of 240). pydantic-core, which the models' validators run on, needs neither: given the
core schema pydantic builds from kb.model, it validates into plain classes. So `kb build` stores that schema in
the database it writes (as JSON, the Python functions and classes in it by name: `dump`), and a command that
opens the database (kb.snapshot) makes validators from it (`load`): the same schema, the same functions
(kb.values), the same values, into classes with the models' methods (kb.values too).

Only a valid record or vocabulary is taken from them: where they find a problem, kb.load validates again with
kb.model, so every message, position and stand-in is the models' own. A schema stored by another version of
pydantic-core (each pydantic release pins one, so it names pydantic's too), or naming a function or class this
code does not have, is not used (`load` returns None); one stored by other code of kb is never read, since the
database is used only when it was built by this code (kb.snapshot).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from pydantic_core import SchemaError, SchemaValidator, __version__ as CORE_VERSION

from . import values

MODELS = ("Report", "Vocabulary")  # what is validated: a record, a vocabulary
# The functions a schema may name: the models' validators (kb.values) and the default factories.
FUNCTIONS = {f.__name__: f for f in (values.parse_value, values.as_number, values.http_url, values.url_or_path,
                                     values.keep_written_value, values.no_repeats, values.unique_ids, list, dict)}
# The models' methods, by the name of the class that holds them.
METHODS = {c.__name__: c for c in (values.ClaimMethods, values.ReportMethods, values.OmissionMethods,
                                   values.VocabularyMethods)}
# Keys of a core schema that validation does not read: pydantic's own notes (JSON schema functions) and how to
# serialise, which the one-record commands never do.
UNUSED = ("metadata", "serialization")


def dump() -> str:
    """The core schemas of kb.model's records and vocabulary, and how to make their classes, as JSON."""
    from pydantic import BaseModel

    from . import model

    classes: dict[str, dict] = {}

    def encode(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: encode(v) for k, v in x.items() if k not in UNUSED}
        if isinstance(x, list):
            return [encode(v) for v in x]
        if x is None or isinstance(x, (str, int, float, bool)):
            return x
        if isinstance(x, type) and issubclass(x, BaseModel):
            describe(x)
            return {"$class": x.__name__}
        f = getattr(x, "__func__", x)  # a classmethod's function
        if FUNCTIONS.get(getattr(f, "__name__", None)) is f:
            return {"$function": f.__name__}
        raise TypeError(f"a core schema holds {x!r}, which kb.compiled cannot name")

    def describe(cls: type) -> None:
        if cls.__name__ in classes:
            return
        if getattr(model, cls.__name__, None) is not cls:
            raise TypeError(f"{cls!r} is not a model of kb.model")
        about: dict[str, Any] = {"methods": [b.__name__ for b in cls.__mro__ if METHODS.get(b.__name__) is b]}
        classes[cls.__name__] = about
        defaults = {name: p.get_default() for name, p in cls.__private_attributes__.items()}
        about["private"] = encode(defaults)
        # class variables that are models (Omission.rule_type), with their own schema, to be made as models are
        about["types"] = {name: encode(getattr(cls, name)) for name in sorted(cls.__class_vars__)
                          if isinstance(getattr(cls, name), type) and issubclass(getattr(cls, name), BaseModel)}
        if about["types"]:
            for t in about["types"].values():
                classes[t["$class"]]["schema"] = encode(getattr(model, t["$class"]).__pydantic_core_schema__)

    schemas = {name: encode(getattr(model, name).__pydantic_core_schema__) for name in MODELS}
    return json.dumps({"pydantic_core": CORE_VERSION, "schemas": schemas, "classes": classes},
                      separators=(",", ":"))  # not sorted: a model's fields are validated in order


class Plain:
    """A record's value as pydantic-core makes it for a model (its fields in __dict__, the model's slots)."""

    __slots__ = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    _private: dict = {}  # the private attributes' defaults
    _schema: Optional[dict] = None  # the class's own core schema, for making one from fields (Plain(**fields))
    _validator: Optional[SchemaValidator] = None

    def __init__(self, **fields: Any) -> None:
        """Validated as the model's __init__ validates (only classes the vocabulary makes: Omission.rules)."""
        cls = type(self)
        if cls._validator is None:
            cls._validator = SchemaValidator(cls._schema)
        cls._validator.validate_python(fields, self_instance=self)

    def model_post_init(self, context: Any) -> None:
        # what pydantic's init_private_attributes does for a model with private attributes
        if getattr(self, "__pydantic_private__", None) is None:
            object.__setattr__(self, "__pydantic_private__", dict(self._private))

    def __eq__(self, other: Any) -> Any:
        # as pydantic compares models: the same class, fields, private attributes and extra fields
        if not isinstance(other, Plain):
            return NotImplemented
        return (type(self) is type(other) and self.__dict__ == other.__dict__
                and self.__pydantic_private__ == other.__pydantic_private__
                and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {}))

    __hash__ = None  # type: ignore[assignment]  # as a model's

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


class Compiled:
    """Validators of a record and of a vocabulary, from the JSON `dump` wrote. Each raises pydantic-core's
    ValidationError (pydantic's) where the model would."""

    def __init__(self, text: str):
        data = json.loads(text)
        if data.get("pydantic_core") != CORE_VERSION:
            raise ValueError(f"stored by pydantic-core {data.get('pydantic_core')}, not {CORE_VERSION}")
        about = data["classes"]
        self.classes: dict[str, type] = {}
        for name, a in about.items():
            bases = tuple(METHODS[m] for m in a["methods"]) + (Plain,)
            self.classes[name] = type(name, bases, {"__slots__": (), "__module__": __name__})

        def decode(x: Any) -> Any:
            if isinstance(x, dict):
                if "$class" in x:
                    return self.classes[x["$class"]]
                if "$function" in x:
                    return FUNCTIONS[x["$function"]]
                return {k: decode(v) for k, v in x.items()}
            if isinstance(x, list):
                return [decode(v) for v in x]
            return x

        for name, a in about.items():
            cls = self.classes[name]
            cls._private = a["private"]
            cls._schema = decode(a["schema"]) if "schema" in a else None
            for attr, t in a["types"].items():
                setattr(cls, attr, decode(t))
        self._validators = {name: SchemaValidator(decode(s)) for name, s in data["schemas"].items()}

    def report(self, data: Any) -> Any:
        return self._validators["Report"].validate_python(data)

    def vocabulary(self, data: Any) -> Any:
        return self._validators["Vocabulary"].validate_python(data)


def load(text: Optional[str]) -> Optional[Compiled]:
    """The validators stored as `text`, or None where there are none this code can use."""
    if not text:
        return None
    try:
        return Compiled(text)
    except (ValueError, KeyError, TypeError, SchemaError):  # another version's schema, or a name this code does not have
        return None
