"""Records made smaller once a build has validated them: a large knowledge base's records stay in memory until
the build ends, and most of a claim's memory is not its text. Each pydantic model carries its own set of the
field names it was given (700 bytes a claim), and every short value (a status, a unit, a source id, a locator)
is its own string. Here those become shared: one frozen set per distinct set of names, one string per distinct
short value.

Only for records nothing changes afterwards (kb build): a frozen set refuses what `model_copy(update=...)` or an
attribute assignment would do to it, so a change after compacting fails loudly instead of leaking into another
record.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

SHORT = 40  # characters: ids, statuses, units, locators; statements and quotes are left as they are


def compact_report(report: BaseModel, names: dict) -> None:
    """One record; `names`, the shared field-name sets so far (one dict for a whole knowledge base)."""
    _compact(report, names)


def _compact(model: BaseModel, names: dict) -> None:
    fields = frozenset(model.__pydantic_fields_set__)
    object.__setattr__(model, "__pydantic_fields_set__", names.setdefault(fields, fields))
    values = model.__dict__
    for key, value in values.items():
        values[key] = _value(value, names)


def _value(value: Any, names: dict) -> Any:
    if type(value) is str:
        return sys.intern(value) if len(value) <= SHORT else value
    if isinstance(value, BaseModel):
        _compact(value, names)
    elif type(value) is list:
        for i, item in enumerate(value):
            value[i] = _value(item, names)
    elif type(value) is dict:
        for k, item in value.items():
            value[k] = _value(item, names)
    return value
