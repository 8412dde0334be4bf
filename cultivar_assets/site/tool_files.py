"""Reading the JSON files the annotation tools download: the checks every such file gets.

The post-editing tool's annotation files (``construction/annotation/file.py``) and the error
analysis files (``error_analysis/file.py``) are validated the same way, with these pieces:

- :class:`Problem` (file, instance, field, what is wrong) and :class:`ToolFileError`, which
  carries *every* problem found in one file and says that nothing was read from it;
- :class:`ProblemCollector`: gathers a file's problems and raises once at a checkpoint;
- :func:`decode_json`: the bytes are UTF-8 (a leading byte-order mark is allowed) and complete,
  valid JSON (a truncated download is named as such) in which no object writes a key twice
  (JSON readers keep one of the two values; which one the annotator meant is unknown);
- :func:`check_header` and :func:`check_schema`: the file's ``format`` and ``schema_version``
  are the reader's, then every JSON Schema error, each located by the item's instance id. A
  schema's ``integer`` is a JSON number written without a decimal point (ours: JSON Schema
  would take ``3.0`` too; the tools never write one, and an id ``3.0`` is not the id ``3``);
- :func:`parse_timestamp`: ISO 8601 with a time zone, as naive UTC.

On these, one generic reader that both files use: a :class:`ToolFileKind` names a kind of file
(format, schema version, schema, error class, the field that identifies an item);
:func:`read_tool_bytes` reads a handed-in file (a directory, a missing file or anything but a
regular file is refused, and its :class:`ByteLimit`, else :data:`MAX_TOOL_FILE_BYTES`, is looked
up before the file is read and no more than it is read); :func:`parse_tool_document` runs the
checks every tool file gets, in this order: the byte limit, :func:`decode_json`,
:func:`check_header`, a reader's own checks of the raw document (optional),
:func:`check_schema`; :func:`check_item_ids` is the identity check of the items against their
task (no id twice, none the task lacks, every task id present).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema

from cultivar_assets.config_files import (
    ConfigFileError,
    load_json_noting_repeated_keys,
    not_a_regular_file,
    read_input_file,
    repeated_json_keys,
)

MAX_TOOL_FILE_BYTES = 64_000_000  # a handed-in file of a kind that sets no limit of its own


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file a tool downloaded."""

    file: str
    instance: int | str | None  # the item's instance id (or key), when it is in one item
    field: str  # e.g. "final.source", "task.task_id", "(file)"
    message: str

    def __str__(self) -> str:
        where = f"instance {self.instance}, " if self.instance is not None else ""
        return f"{self.file}: {where}{self.field}: {self.message}"


class ToolFileError(ValueError):
    """A file cannot be used; ``problems`` lists everything found wrong in it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        files = sorted({p.file for p in self.problems})
        head = (f"{', '.join(files)}: {len(self.problems)} problem"
                f"{'s' if len(self.problems) != 1 else ''}; nothing was read from this file")
        super().__init__(head + "\n" + "\n".join(f"  - {p}" for p in self.problems))


class ProblemCollector:
    """Collects the problems of one file; :meth:`fail` raises ``error`` when there are any."""

    def __init__(self, name: str, error: type[ToolFileError] = ToolFileError) -> None:
        self.name = name
        self.error = error
        self.problems: list[Problem] = []

    def add(self, field: str, message: str, instance: int | str | None = None) -> None:
        self.problems.append(Problem(self.name, instance, field, message))

    def fail(self) -> None:
        if self.problems:
            raise self.error(self.problems)


def json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), "?")


def _is_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Draft 2020-12 whose "integer" is a number written without a decimal point (module docstring).
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def schema_message(error: jsonschema.ValidationError) -> str:
    """A JSON Schema error in words an annotator can act on."""
    value, kind, expected = error.instance, error.validator, error.validator_value
    if kind == "minLength" and value == "":
        return "is empty"
    if kind == "type" and expected == "integer" and isinstance(value, float):
        fix = f" (write {int(value)})" if value.is_integer() else ""
        return f"must be an integer, not the number {value!r}{fix}"
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"must be {' or '.join(names)}, not {json_type(value)}"
    if kind == "const":
        return f"must be {json.dumps(expected)}, not {json.dumps(value, ensure_ascii=False)}"
    if kind == "enum":
        return (f"must be one of {', '.join(json.dumps(v) for v in expected)}, not "
                f"{json.dumps(value, ensure_ascii=False)}")
    if kind == "pattern":
        return f"{json.dumps(value, ensure_ascii=False)[:80]} does not have the expected form"
    if kind == "anyOf" and isinstance(value, str):
        return f"{json.dumps(value)[:80]} is not an ISO 8601 timestamp with a time zone, or null"
    if kind == "uniqueItems":
        return f"lists an entry more than once: {json.dumps(value, ensure_ascii=False)[:80]}"
    return error.message


MAX_JSON_DEPTH = 32  # ours: the tools' files nest 4 levels; far deeper is not one of them


def json_depth(document: Any) -> int:
    """How deeply arrays and objects nest in ``document`` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, depth = stack.pop()
        children = (value.values() if isinstance(value, dict)
                    else value if isinstance(value, list) else None)
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a handed-in file (None: it is a regular file, symbolic
    links followed)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    kind = not_a_regular_file(mode)
    if kind == "a directory":
        return "is a directory, not a file"
    return f"is {kind}, not a regular file" if kind else None


def decode_json(data: bytes, check: ProblemCollector, item_id: str = "instance_id") -> Any:
    """The JSON document in ``data``; an empty, non-UTF-8, truncated or invalid file fails, and
    so does one nested more than :data:`MAX_JSON_DEPTH` levels (which would otherwise stop the
    parser or the schema check with "maximum recursion depth exceeded") and one with an object
    that writes a key twice (named by its field, and by its item's ``item_id`` when it is in
    one of the ``items``)."""
    if not data.strip():
        check.add("(file)", "the file is empty")
        check.fail()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        check.add("(file)", f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
                  f"{error.start} cannot be decoded); save it as UTF-8, as the tool's "
                  "Download JSON does")
        check.fail()
    try:
        document = load_json_noting_repeated_keys(text)
    except RecursionError:
        document = None
        check.add("(file)", f"nests arrays or objects more than {MAX_JSON_DEPTH} levels deep: "
                  "it is not a file the tool wrote")
        check.fail()
    except json.JSONDecodeError as error:
        stripped = text.rstrip()
        if (error.pos >= len(stripped) or error.msg.startswith("Unterminated string")
                or not stripped.endswith(("}", "]"))):
            check.add("(file)", f"the JSON ends early (line {error.lineno}, column "
                      f"{error.colno}): the file is truncated; download it from the tool again")
        else:
            check.add("(file)", f"is not valid JSON: {error.msg} at line {error.lineno}, "
                      f"column {error.colno}")
        check.fail()
    if json_depth(document) > MAX_JSON_DEPTH:
        check.add("(file)", f"nests arrays or objects more than {MAX_JSON_DEPTH} levels deep: "
                  "it is not a file the tool wrote")
        check.fail()
    for path, key in repeated_json_keys(document):
        instance = None
        if len(path) >= 2 and path[0] == "items" and isinstance(document.get("items"), list):
            item = document["items"][path[1]]
            instance = item.get(item_id) if isinstance(item, dict) else None
            path = path[2:] if instance is not None else path
        check.add(".".join(map(str, (*path, key))), "is written twice in one object (a JSON "
                  "reader keeps one of the two values); keep the one you mean", instance)
    check.fail()
    return document


def check_header(document: Any, check: ProblemCollector, file_format: str,
                 schema_version: int, what: str) -> None:
    """The document is an object of ``file_format`` in ``schema_version`` (else: fail now)."""
    if not isinstance(document, dict):
        check.add("(file)", f"must hold a JSON object, not {json_type(document)}")
        check.fail()
    if document.get("format") != file_format:
        check.add("format", f"is {json.dumps(document.get('format'))[:80]}, not "
                  f"\"{file_format}\": this is not {what}")
        check.fail()
    version = document.get("schema_version")
    if not _is_integer(None, version) or version != schema_version:
        check.add("schema_version", f"is {json.dumps(version)[:80]}; this reader reads schema "
                  f"version {schema_version} only")
        check.fail()


def check_schema(document: dict, schema: dict, check: ProblemCollector,
                 item_id: str = "instance_id") -> None:
    """Every JSON Schema error of ``document`` (fail when there is one). Errors inside
    ``items[i]`` name the item by its ``item_id`` field when it has a usable one."""
    validator = _Validator(schema)
    items = document.get("items") if isinstance(document.get("items"), list) else []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.path))):
        path = list(error.path)
        instance = None
        if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
            item = items[path[1]] if path[1] < len(items) else None
            if isinstance(item, dict) and isinstance(item.get(item_id), int | str) and not (
                    isinstance(item.get(item_id), bool)):
                instance = item[item_id]
            field = f"items[{path[1]}]" + "".join(f".{p}" for p in path[2:])
        else:
            field = ".".join(str(p) for p in path) or "(top level)"
        check.add(field, schema_message(error), instance)
    check.fail()


def parse_timestamp(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp with a time zone as naive UTC; None stays None."""
    if value is None:
        return None
    return datetime.fromisoformat(value).astimezone(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class ToolFileKind:
    """One kind of file a tool downloads, as its reader checks it first."""

    file_format: str  # the file's "format"
    schema_version: int  # the only version the reader reads
    what: str  # the file in words, e.g. "a Cultivar annotation file"
    schema: Callable[[], dict]  # its JSON Schema
    error: type[ToolFileError]  # what the reader raises
    item_id: str = "instance_id"  # the field that names an item in messages


@dataclass(frozen=True)
class ByteLimit:
    """How many bytes a file may have, and what to say of a larger one (given its size)."""

    max_bytes: int
    too_large: Callable[[int], str]


def read_tool_bytes(path: str | Path, kind: ToolFileKind, limit: ByteLimit | None = None) -> bytes:
    """The bytes of the handed-in file at ``path``, read by
    :func:`~cultivar_assets.config_files.read_input_file`; a directory, a missing file, anything
    but a regular file (a FIFO, a device, a link to one) or one larger than ``limit`` (else
    :data:`MAX_TOOL_FILE_BYTES`; looked up before it is read) raises ``kind.error``. No more
    than one byte past the limit is read (a file that grew since is caught by the parser's
    limit)."""
    path = Path(path)
    if problem := file_problem(path):
        raise kind.error([Problem(str(path), None, "(file)", problem)])
    max_bytes = limit.max_bytes if limit is not None else MAX_TOOL_FILE_BYTES
    size = path.stat().st_size
    if limit is not None and size > limit.max_bytes:
        raise kind.error([Problem(str(path), None, "(file)", limit.too_large(size))])
    try:
        return read_input_file(path, "the file", max_bytes)
    except ConfigFileError as error:
        raise kind.error([Problem(str(path), None, "(file)", str(error))]) from None


def parse_tool_document(data: bytes, name: str, kind: ToolFileKind, *,
                        limit: ByteLimit | None = None,
                        before_schema: Callable[[Any, ProblemCollector], None] | None = None,
                        ) -> dict[str, Any]:
    """The JSON object in ``data`` after the checks every tool file gets (module docstring):
    the byte limit, UTF-8 and complete JSON, ``kind``'s format and schema version, then
    ``before_schema`` (a reader's own checks of the raw document, which fail on their own), then
    the schema. Any problem raises ``kind.error`` naming the file as ``name``."""
    check = ProblemCollector(name, kind.error)
    if limit is not None and len(data) > limit.max_bytes:
        check.add("(file)", limit.too_large(len(data)))
        check.fail()
    document = decode_json(data, check, kind.item_id)
    check_header(document, check, kind.file_format, kind.schema_version, kind.what)
    if before_schema is not None:
        before_schema(document, check)
    check_schema(document, kind.schema(), check, item_id=kind.item_id)
    return document


def check_item_ids(items: Sequence[dict[str, Any]], expected: Sequence[int | str],
                   check: ProblemCollector, *, field: str, noun: tuple[str, str], task_id: str,
                   list_at_most: int | None = None) -> list[dict[str, Any]]:
    """The identity of a file's items against its task's ``expected`` ids: an id written more
    than once, an id the task lacks, and the task's ids the file lacks (in ``expected``'s
    order; all of them, or the first ``list_at_most``) are problems, each named by ``field``
    and its id. ``noun`` is an item in words with its article and in the plural (``("an
    instance", "instances")``). Returns the items whose id is the task's and occurs once, in
    the file's order (the ones a reader compares with the task)."""
    known = set(expected)
    counts = Counter(item[field] for item in items)
    for key, count in sorted(counts.items()):
        if count > 1:
            check.add(field, f"occurs {count} times", key)
        if key not in known:
            check.add(field, f"is not {noun[0]} of task {task_id}", key)
    missing = [key for key in expected if key not in counts]
    if missing:
        shown = missing if list_at_most is None else missing[:list_at_most]
        more = " …" if len(shown) < len(missing) else ""
        check.add("items", f"{len(missing)} of the task's {noun[1]} are missing: "
                  f"{', '.join(map(str, shown))}{more}")
    return [item for item in items if item[field] in known and counts[item[field]] == 1]
