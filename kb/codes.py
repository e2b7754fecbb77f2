"""Every problem the program reports has a stable code, like a linter's rule ids: KB1xx reading a file, KB2xx the
record format, KB3xx the checks beyond it, KB4xx planning documents. Code that reacts to a problem matches its
code, never its message. This module is the one list; README's table of codes is checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    id: str
    summary: str
    unreadable: bool = False  # the file cannot be read at all: commands exit 2, not 1


CODES: dict[str, Code] = {}


def _code(id: str, summary: str, unreadable: bool = False) -> str:
    assert id not in CODES, id
    CODES[id] = Code(id, summary, unreadable)
    return id


def unreadable(code: str) -> bool:
    return CODES[code].unreadable


# Reading a file.
CANNOT_READ = _code("KB101", "the file cannot be read (missing, a link that leads nowhere, no permission)", True)
NOT_UTF8 = _code("KB102", "the file is not valid UTF-8", True)
TOO_BIG = _code("KB103", "the file is larger than a record may be", True)
NOT_A_FILE = _code("KB104", "a path given is a folder where a record file was expected, or does not exist", True)
NUL_BYTE = _code("KB105", "the file contains a NUL byte")
YAML_SYNTAX = _code("KB106", "the text is not valid YAML (with where an unclosed quote or bracket opened)")
DUPLICATE_KEY = _code("KB107", "a key is written twice in one mapping")
TAG = _code("KB108", "an explicit tag other than !!str, !!seq or !!map")
TOO_MANY_VALUES = _code("KB109", "too many values, or an alias that expands into too many (an alias bomb)")
TOO_DEEP = _code("KB110", "nested too deeply")
ALIAS_LOOP = _code("KB111", "an alias refers to a value that contains it")
MERGE_KEY = _code("KB112", "a YAML 1.1 merge key (<<)")
KEY_NOT_SCALAR = _code("KB113", "a mapping key that is a list or a mapping")
EMPTY = _code("KB114", "the file is empty")
NOT_A_MAPPING = _code("KB115", "the file is not a mapping of fields")

# The record format (and the vocabulary's).
UNKNOWN_FIELD = _code("KB201", "a field the format does not have (with the closest one)")
MISSING_FIELD = _code("KB202", "a required field is missing")
NOT_ONE_OF = _code("KB203", "a value that is not one of those allowed (with the closest one)")
NOT_A_DATE = _code("KB204", "a date not written YYYY-MM-DD")
NOT_AN_ID = _code("KB205", "an id that is not lowercase words joined by hyphens, starting with a letter")
TOO_LONG = _code("KB206", "a text longer than the field allows")
WRONG_TYPE = _code("KB207", "a value of the wrong kind (a list where text is expected, ...)")
NOT_A_FIGURE = _code("KB208", "a figure a reader could take two ways (1,024; 012; 12:30; 38-43) or that is not one")
BAD_URL = _code("KB209", "a URL that is not http(s), or a source path outside the repository")
PLACEHOLDER = _code("KB210", "a value left as the template's <placeholder>")
SCHEMA = _code("KB299", "another value the format does not allow")

# Checks beyond the format.
ID_NOT_FILE_NAME = _code("KB301", "the record's id differs from its file name")
DUPLICATE_REPORT = _code("KB302", "two records use the same report id")
DUPLICATE_SOURCE = _code("KB303", "a source id is used twice in a record")
DUPLICATE_CLAIM = _code("KB304", "a claim id is used twice in a record")
UNDEFINED_SOURCE = _code("KB305", "a claim names a source the record does not define")
FUTURE_DATE = _code("KB306", "a date after today")
BEFORE_PUBLICATION = _code("KB307", "a check date before the report was published")
NO_SOURCE = _code("KB308", "a claim that is not derived names no source (a warning)")
NO_CHECK_DATE = _code("KB309", "a confirmed, secondary or contradicted claim without a check date")
NO_QUOTE = _code("KB310", "a confirmed claim without a quote or the reason it has none (an error with --strict)")
CONTRADICTED_WITHOUT_NOTE = _code("KB311", "a contradicted claim that does not say what the source says instead")
DERIVED_WITHOUT_FORMULA = _code("KB312", "a derived claim without a formula")
DERIVED_WITHOUT_VALUE = _code("KB313", "a derived claim without a stated figure to check the formula against")
FORMULA_NOT_DERIVED = _code("KB314", "a formula on a claim that is not derived")
UNKNOWN_PATTERN = _code("KB315", "a pattern id the vocabulary does not have")
UNKNOWN_OMISSION = _code("KB316", "an omission id the vocabulary does not have")
UNIT_TYPO = _code("KB317", "a unit a letter or two away from one the vocabulary knows")
OUT_OF_RANGE = _code("KB318", "a figure outside its unit's range (a negative count, 120 percent)")
DISCLOSURE_CLAIM = _code("KB319", "a disclosure names a claim the record does not have")
DOES_NOT_ADD_UP = _code("KB320", "a derived figure that does not agree with its formula")
FORMULA = _code("KB321", "a formula that cannot be computed (unknown reference, division by zero, syntax)")
FORMULA_CYCLE = _code("KB322", "formulas that refer to each other in a cycle")
LOOKS_LIKE = _code("KB323", "a report that looks like another one already in the knowledge base (a warning)")
REPEATED_CLAIM = _code("KB324", "a claim that repeats another claim of the same record (a warning)")
VERSION_MISMATCH = _code("KB325", "a source's version disagrees with the version in its URL")
TABLE_ROW_QUOTE = _code("KB326", "a quote that is a table row (cells joined by bars) not marked quote_kind: table")

# Planning documents (kb check).
MALFORMED_LINK = _code("KB401", "a kb: link that is not [text](kb:report/claim) on one line")
UNKNOWN_CLAIM = _code("KB402", "a kb: link to a claim the knowledge base does not have")
NOT_CITABLE = _code("KB403", "a cited claim that may not be cited (contradicted, unverified, stale)")
FIGURE_MISMATCH = _code("KB404", "the figure in a link's text disagrees with the claim's")
DRIFTED = _code("KB405", "a cited claim whose quote is no longer found in its source (a warning; an error with --strict)")
