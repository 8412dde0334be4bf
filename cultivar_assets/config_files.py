"""Reading the project's configuration files (settings, model registry, prompt and selection files):
strict YAML and short, exact error messages.

- UTF-8; a file that is not names its first bad byte and its offset.
- A YAML mapping with a key written twice is refused, naming the key and both lines (ours:
  PyYAML keeps the last value silently, and a duplicate, such as two ``models:`` lists, is almost
  always a mistake). A YAML syntax error is one line: file, line, column, problem.
- Validation errors (pydantic) are one line per problem, ``key.path: message``, and never repeat
  the input value (ours: no field echoes, so no secret-bearing field can be forgotten).
- JSON read by :func:`load_json_noting_repeated_keys` notes every object that writes a key twice,
  so that its reader can refuse it by the object's place (:func:`repeated_json_keys`).
- YAML aliases (``*name``) may repeat at most :data:`MAX_ALIAS_NODES` nodes in one document, and
  none may refer to a node that holds it; checked on the parsed nodes before any value is built.
- Every user-supplied file (these, submissions, annotation and error-annotation files, lm-eval
  samples, recorded answers) is read by :func:`read_input_file`: a regular file, at most a size
  limit of its kind (checked before reading), one-line errors.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

# --- how large a user-supplied file may be (bytes; read by read_input_file) ----------------------
MAX_CONFIG_BYTES = 16_000_000  # a settings file, models.yaml, a prompts or selection file


class ConfigFileError(ValueError):
    """A configuration file cannot be read; the message names the file and the problem."""


class _RepeatingObject(dict):
    """A JSON object that wrote a key more than once: its keys, the last value of each (as
    ``json`` keeps them), and ``repeated``, the keys written twice or more."""

    repeated: tuple[str, ...] = ()


def _note_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) == len(pairs):
        return document
    seen: set[str] = set()
    repeated: list[str] = []
    for key, _ in pairs:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    noted = _RepeatingObject(document)
    noted.repeated = tuple(repeated)
    return noted


def load_json_noting_repeated_keys(text: str) -> Any:
    """``json.loads(text)``, noting each object that writes a key twice
    (:func:`repeated_json_keys` lists them); raises what ``json.loads`` raises."""
    return json.loads(text, object_pairs_hook=_note_repeated_keys)


def repeated_json_keys(document: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every key written twice in one object of ``document`` (read by
    :func:`load_json_noting_repeated_keys`): (the path of the object from the top, as keys and
    list positions; the key), in document order; walked without recursion."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            found += [(path, key) for key in getattr(value, "repeated", ())]
            children = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        else:
            continue
        stack.extend((child, (*path, key)) for key, child in reversed(children))
    return found


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping key written twice."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            continue  # PyYAML reports unhashable keys itself
        line = key_node.start_mark.line + 1
        if key in seen and key != "<<":
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is written twice (lines {seen[key]} and {line}); "
                "only one may stay", key_node.start_mark)
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

MAX_ALIAS_NODES = 10_000  # nodes that aliases may repeat in one YAML document, all together


def _alias_problem(root: yaml.Node) -> str | None:
    """Why the aliases of the document under ``root`` are refused: one that refers to a node
    it is inside (a cycle), or aliases that repeat more than :data:`MAX_ALIAS_NODES` nodes in
    all; None when they are within bounds. Walked without recursion, each node once."""
    expanded: dict[int, int] = {}  # a node's size with every alias written out
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            continue
        if key in on_path:
            line = node.start_mark.line + 1 if node.start_mark else "?"
            return f"line {line}: an alias refers to a node that holds it (a cycle)"
        if key in expanded:
            continue
        on_path.add(key)
        stack.append((node, True))
        stack += [(child, False) for child in _children(node) if id(child) not in expanded]
    repeated = expanded[id(root)] - len(expanded)
    if repeated > MAX_ALIAS_NODES:
        return (f"its aliases (*name) would repeat {repeated} nodes, over the limit of "
                f"{MAX_ALIAS_NODES}: write the values out, or use fewer aliases")
    return None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _compose_checked_document(loader: _StrictLoader) -> yaml.Node:
    node = yaml.composer.Composer.compose_document(loader)
    problem = _alias_problem(node)
    if problem:
        raise yaml.composer.ComposerError(None, None, problem, None)
    return node


_StrictLoader.compose_document = _compose_checked_document  # aliases checked before building


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if isinstance(error, yaml.constructor.ConstructorError) and "written twice" in problem:
        return problem
    if mark is None and isinstance(error, yaml.composer.ComposerError):
        return problem  # the alias check's message says where itself
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = getattr(error, "context", None)
    return f"{where}{problem}" + (f" ({context})" if context else "")


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def not_a_regular_file(mode: int) -> str | None:
    """What a file of ``mode`` (``st_mode``) is when it is not a regular file, else None."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")


def read_input_file(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The bytes of the user-supplied file at ``path`` (``what`` names it in errors), read only
    when it is a regular file (symbolic links followed) of at most ``max_bytes`` bytes, both
    checked on the open file before anything is read; no more than ``max_bytes`` + 1 bytes are
    ever read (a file that grew past the limit since is refused too). Every refusal is one
    :class:`ConfigFileError` line naming the file: missing, unreadable, a directory, a FIFO or
    device, or too large. A FIFO is opened without waiting for a writer."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigFileError(f"{what} {path} does not exist") from None
    except OSError as error:
        raise ConfigFileError(f"cannot read {what} {path}: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        kind = not_a_regular_file(info.st_mode)
        if kind == "a directory":
            raise ConfigFileError(f"{what} {path} is a directory, not a file")
        if kind:
            raise ConfigFileError(f"{what} {path} is {kind}, not a regular file")
        if info.st_size > max_bytes:
            raise ConfigFileError(f"{what} {path} is {info.st_size} bytes, over the limit of "
                                  f"{max_bytes} bytes")
        parts: list[bytes] = []
        size = 0
        while size <= max_bytes:  # asks for the size stated (and one byte more), not the limit
            want = min(max(info.st_size + 1 - size, 1 << 16), max_bytes + 1 - size)
            chunk = os.read(fd, want)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        data = b"".join(parts)
    except OSError as error:
        raise ConfigFileError(f"cannot read {what} {path}: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ConfigFileError(f"{what} {path} grew past the limit of {max_bytes} bytes while "
                              "it was read")
    return data


def read_text_file(path: str | Path, what: str, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """The file's text, read as UTF-8 by :func:`read_input_file` (at most ``max_bytes``);
    :class:`ConfigFileError` naming ``what`` and the file."""
    path = Path(path)
    data = read_input_file(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigFileError(
            f"{what} {path} is not UTF-8: byte 0x{data[error.start]:02x} at offset {error.start}"
            " (save it as UTF-8)") from None


def load_yaml_text(text: str, where: str) -> Any:
    """A YAML document parsed strictly (see the module docstring); ``where`` names it in errors."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as error:
        raise ConfigFileError(f"{where}: {_yaml_problem(error)}") from None


def read_yaml_file(path: str | Path, what: str, *, allow_empty: bool = True) -> Any:
    """A YAML file read as UTF-8 and parsed strictly. An empty document is ``None``, or an error
    when ``allow_empty`` is false."""
    text = read_text_file(path, what)
    data = load_yaml_text(text, f"{what} {path}")
    if data is None and not allow_empty:
        raise ConfigFileError(f"{what} {path} is empty")
    return data


def validation_problems(error: ValidationError) -> list[str]:
    """One line per problem of a pydantic error: ``key.path: message``, no input values."""
    lines = []
    for item in error.errors(include_url=False, include_input=False):
        location = ".".join(str(part) for part in item.get("loc", ()) if part != "__root__")
        message = item.get("msg", "invalid")
        message = message.removeprefix("Value error, ")
        lines.append(f"{location}: {message}" if location else message)
    return lines


def validation_message(error: ValidationError, where: str) -> str:
    """``where`` and the problems of ``error``: one line when there is one problem."""
    problems = validation_problems(error)
    if len(problems) == 1:
        return f"{where}: {problems[0]}"
    return f"{where}: {len(problems)} problems:\n  " + "\n  ".join(problems)
