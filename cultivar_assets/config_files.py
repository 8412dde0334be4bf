"""Reading the project's configuration files (settings, model registry, prompt and selection files):
strict YAML and short, exact error messages.

- A file is read as UTF-8; a file that is not names its first bad byte and its offset.
- A YAML mapping with a key written twice is refused, naming the key and both lines (PyYAML's
  ``safe_load`` keeps the last value silently; ours: a duplicate is almost always a mistake, e.g.
  two ``models:`` lists of which only the second would run).
- A YAML syntax error is one line: file, line, column, problem.
- Validation errors (pydantic) are one line per problem, ``key.path: message``, and never repeat
  the input value (a secret-bearing field must not echo what was typed into it; ours: no field
  echoes, so no field can be forgotten).
- JSON read by :func:`load_json_noting_repeated_keys` keeps a note of every object that writes a
  key twice (Python's ``json`` keeps the last value silently), so that its reader can refuse it
  by the object's place in the document (:func:`repeated_json_keys`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError


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


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if isinstance(error, yaml.constructor.ConstructorError) and "written twice" in problem:
        return problem
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = getattr(error, "context", None)
    return f"{where}{problem}" + (f" ({context})" if context else "")


def read_text_file(path: str | Path, what: str) -> str:
    """The file's text, read as UTF-8; :class:`ConfigFileError` naming ``what`` and the file."""
    path = Path(path)
    if path.is_dir():
        raise ConfigFileError(f"{what} {path} is a directory, not a file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigFileError(f"{what} {path} does not exist") from None
    except OSError as error:
        raise ConfigFileError(f"cannot read {what} {path}: {error.strerror or error}") from None
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
