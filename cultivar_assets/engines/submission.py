"""Submitted outputs: translations produced elsewhere, read and validated here (ours).

A *submission* is a manifest (YAML or JSON) and one JSONL file of hypotheses
(``docs/evaluating-models.md``, "Submitting outputs"). Each line of the JSONL file is one
object: ``{"test_set": "cultivar_deu_Latn_Germany", "id": 3, "hypothesis": "..."}``, or with
``locale`` and ``side`` (``cultivar``: the localised source; ``flores``: the original one) in
place of ``test_set``: ``{"locale": "deu_Latn_Germany", "side": "flores", "id": 3, ...}``.
Or one TSV file (its name ends in ``.tsv``: the manifest's ``outputs``, or ``outputs.tsv``
beside a manifest that names none when there is no ``outputs.jsonl``): the header
``test_set<TAB>id<TAB>hypothesis``, then one line of those three fields per hypothesis
(:func:`tsv_lines`; no quoting or escapes, so a hypothesis holds no tab and no line break).

:func:`read_submission` reads both files and checks everything it can before anything is
written; :func:`check_coverage` checks the hypotheses against the benchmark's test sets. Both
raise one :class:`SubmissionError` that lists every problem with its file and line. Neither
writes anything.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from cultivar_assets.config_files import (
    ConfigFileError,
    load_json_noting_repeated_keys,
    load_yaml_text,
    read_input_file,
    repeated_json_keys,
)
from cultivar_assets.data.testsets import TestSet
from cultivar_assets.registry import UnknownEntryError
from cultivar_assets.secrets import misplaced_secrets
from cultivar_assets.specs import MODEL_ID_MAX_LENGTH, MODEL_ID_PATTERN, ModelType

# Our limits (stated in docs/evaluating-models.md): the benchmark's longest reference is far
# below the hypothesis limit; the file limit leaves room for every test set of all 27 locales.
MAX_OUTPUTS_BYTES = 64 * 1024 * 1024
MAX_MANIFEST_BYTES = 64 * 1024
MAX_HYPOTHESIS_CHARS = 4000
MANIFEST_NAMES = ("manifest.yaml", "manifest.yml", "manifest.json")
DEFAULT_OUTPUTS = "outputs.jsonl"
DEFAULT_TSV_OUTPUTS = "outputs.tsv"
TSV_HEADER = ("test_set", "id", "hypothesis")
SIDES = {"cultivar": "cultivar_{locale}", "flores": "flores_{language}"}
MODEL_TYPES = get_args(ModelType)
PRODUCED_FIELDS = ("system", "version", "prompt", "date")
_MANIFEST_FIELDS = {"id", "type", "family", "params_total_b", "params_active_b", "license",
                    "produced", "outputs", "notes"}


class SubmissionError(ValueError):
    """A submission is invalid; ``problems``: every problem, each naming its file (and line)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:  # one line
            super().__init__(f"the submission has 1 problem: {self.problems[0]}")
        else:
            super().__init__(f"the submission has {len(self.problems)} problems:\n  "
                             + "\n  ".join(self.problems))


@dataclass(frozen=True)
class Submission:
    """A read submission: the manifest's fields, the hypotheses by (test set, id) and the
    sha256 of both files' bytes (:func:`content_sha256`)."""

    manifest_path: Path
    outputs_path: Path
    manifest: dict[str, Any]
    hypotheses: dict[tuple[str, int], str]
    lines: dict[tuple[str, int], int]  # where each hypothesis is (line of the outputs file)
    sha256: str

    @property
    def model_id(self) -> str:
        return self.manifest["id"]

    @property
    def produced(self) -> dict[str, str]:
        return {key: str(self.manifest["produced"][key]) for key in PRODUCED_FIELDS}

    def registry_entry(self) -> dict[str, Any]:
        """The registry entry (``models.yaml``) that scores this submission."""
        manifest = self.manifest
        entry = {"id": manifest["id"], "type": manifest["type"], "family": manifest["family"],
                 "params_total_b": manifest.get("params_total_b"),
                 "params_active_b": manifest.get("params_active_b"),
                 "engine": "outputs", "path": str(self.manifest_path), "prompt_style": "source",
                 "license": manifest.get("license")}
        return {key: value for key, value in entry.items() if value is not None}


def manifest_path(path: str | Path) -> Path:
    """The manifest of the submission at ``path``: the file itself, or the folder's
    ``manifest.yaml`` / ``manifest.yml`` / ``manifest.json`` (the first that exists)."""
    path = Path(path)
    if path.is_dir():
        for name in MANIFEST_NAMES:
            if (path / name).is_file():
                return path / name
        return path / MANIFEST_NAMES[0]
    return path


def content_sha256(path: str | Path) -> str:
    """sha256 over the manifest's bytes and the outputs file's bytes (each length-prefixed); a
    file that cannot be read (missing, not a regular file, over its limit: each read by
    :func:`~cultivar_assets.config_files.read_input_file`) counts as absent (reading the
    submission then reports it)."""
    manifest = manifest_path(path)
    digest = hashlib.sha256()
    for file, limit in ((manifest, MAX_MANIFEST_BYTES),
                        (_outputs_path(manifest, _raw_manifest(manifest)), MAX_OUTPUTS_BYTES)):
        try:
            data = read_input_file(file, "submission file", limit)
        except ConfigFileError:
            data = b""
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _raw_manifest(path: Path) -> Any:
    try:
        data = read_input_file(path, "manifest", MAX_MANIFEST_BYTES)
        return load_yaml_text(data.decode("utf-8"), str(path))  # JSON is YAML
    except (UnicodeDecodeError, ConfigFileError):
        return None


def _outputs_path(manifest: Path, document: Any) -> Path:
    name = document.get("outputs") if isinstance(document, dict) else None
    if isinstance(name, str) and name:
        return manifest.parent / name
    if not (manifest.parent / DEFAULT_OUTPUTS).exists() and (
            manifest.parent / DEFAULT_TSV_OUTPUTS).exists():
        return manifest.parent / DEFAULT_TSV_OUTPUTS
    return manifest.parent / DEFAULT_OUTPUTS


def tsv_lines(raw_lines: Sequence[bytes], where: str) -> tuple[list[bytes], list[str]]:
    """The lines of a TSV outputs file as the JSON lines :func:`parse_outputs` reads, line for
    line (the header and lines in error become empty ones, so that every problem keeps the
    TSV file's line number), and the problems only a TSV file can have."""
    converted: list[bytes] = []
    problems: list[str] = []
    for number, raw in enumerate(raw_lines, 1):
        raw = raw.removesuffix(b"\r")
        fields = raw.split(b"\t")
        if number == 1:
            if tuple(fields) != tuple(name.encode() for name in TSV_HEADER):
                problems.append(f"{where}:1: the header must be "
                                f"{'<TAB>'.join(TSV_HEADER)} (one tab between names)")
            converted.append(b"")
            continue
        if not raw.strip():
            converted.append(b"")
            continue
        if len(fields) != len(TSV_HEADER):
            problems.append(f"{where}:{number}: {len(fields)} tab-separated field(s), not 3 "
                            f"({', '.join(TSV_HEADER)}; a hypothesis holds no tab)")
            converted.append(b"")
            continue
        try:
            test_set, segment_id, hypothesis = raw.decode("utf-8").split("\t")
        except UnicodeDecodeError as error:
            problems.append(f"{where}:{number}: not UTF-8 (byte {error.start + 1} of the line)")
            converted.append(b"")
            continue
        row = {"test_set": test_set,
               "id": int(segment_id) if segment_id.isdigit() else segment_id,
               "hypothesis": hypothesis}
        converted.append(json.dumps(row, ensure_ascii=False).encode("utf-8"))
    return converted, problems


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "holds a NUL character"
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        return "holds a lone surrogate (not UTF-8 text)"
    return None


def _manifest_problems(where: str, document: Any) -> list[str]:
    if not isinstance(document, dict):
        return [f"{where}: expected a mapping of the manifest's fields"]
    problems = [f"{where}: unknown field {key!r}" for key in document
                if key not in _MANIFEST_FIELDS]
    for key in ("id", "type", "family", "license", "produced"):
        if document.get(key) in (None, ""):
            problems.append(f"{where}: missing field {key!r}")
    model_id = document.get("id")
    if isinstance(model_id, str) and (not re.match(MODEL_ID_PATTERN, model_id)
                                      or len(model_id) > MODEL_ID_MAX_LENGTH):
        problems.append(f"{where}: id {model_id!r} is not a model id (letters, digits, '.', "
                        f"'_', '+', '-'; at most {MODEL_ID_MAX_LENGTH})")
    kind = document.get("type")
    if kind is not None and kind not in MODEL_TYPES:
        problems.append(f"{where}: type {kind!r} is not one of the registry's types "
                        f"({', '.join(MODEL_TYPES)})")
    for key in ("params_total_b", "params_active_b"):
        value = document.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value) or value <= 0):
            problems.append(f"{where}: {key} must be a positive, finite number of billions")
    if kind == "baseline" and (document.get("params_total_b") or document.get("params_active_b")):
        problems.append(f"{where}: type 'baseline' is not a model and has no parameters; a "
                        "system with parameters is an LLM, MT or LLM+MT")
    if kind in MODEL_TYPES and kind != "baseline" and "params_total_b" not in document:
        problems.append(f"{where}: type {kind!r} needs params_total_b (null when not known)")
    if kind == "baseline" and document.get("family") not in (None, "Baseline"):
        problems.append(f"{where}: type 'baseline' has family 'Baseline', not "
                        f"{document.get('family')!r}")
    produced = document.get("produced")
    if produced is not None and not isinstance(produced, dict):
        problems.append(f"{where}: produced must be a mapping ({', '.join(PRODUCED_FIELDS)})")
    elif isinstance(produced, dict):
        problems += [f"{where}: missing field 'produced.{key}'" for key in PRODUCED_FIELDS
                     if produced.get(key) in (None, "")]
        problems += [f"{where}: unknown field 'produced.{key}'" for key in produced
                     if key not in PRODUCED_FIELDS]
    return problems


def _test_set_of(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """(test set name, problem) of a line's ``test_set`` or ``locale`` + ``side``."""
    if "test_set" in row:
        if "locale" in row or "side" in row:
            return None, "give test_set, or locale and side, not both"
        name = row["test_set"]
        return (name, None) if isinstance(name, str) and name else (
            None, "test_set must be a test set's name")
    locale, side = row.get("locale"), row.get("side")
    if not isinstance(locale, str) or side not in SIDES:
        return None, ("needs test_set, or locale and side (side: cultivar or flores)")
    if side == "cultivar":
        return f"cultivar_{locale}", None
    from cultivar_assets.data.locales import get_locale

    try:
        language = get_locale(locale).source_language
    except UnknownEntryError:
        return None, f"unknown locale {locale!r}"
    return f"flores_{language}", None


_BYTE_ORDER_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian, with a byte order mark)"),
                     (b"\x00\x00\xfe\xff", "UTF-32 (big-endian, with a byte order mark)"),
                     (b"\xff\xfe", "UTF-16 (little-endian, with a byte order mark)"),
                     (b"\xfe\xff", "UTF-16 (big-endian, with a byte order mark)"))


def _other_encoding(data: bytes) -> str | None:
    """The encoding an outputs file is written in when it is UTF-16 or UTF-32 rather than
    UTF-8 (named by its byte order mark, or by NUL bytes in its first line, which UTF-8 text
    of JSON or TSV never holds); None otherwise. Such a file would fail on every line."""
    for mark, name in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            return name
    first = data[:4096].split(b"\n", 1)[0]
    if first.count(b"\x00") * 4 >= len(first) > 0:  # ASCII in UTF-16/32: every other byte NUL
        return "UTF-16 or UTF-32 (NUL bytes between its characters)"
    return None


def _read_outputs(path: Path, where: str) -> tuple[dict, dict, list[str]]:
    try:
        data = read_input_file(path, "outputs file", MAX_OUTPUTS_BYTES)
    except ConfigFileError as error:
        return {}, {}, [str(error)]
    encoding = _other_encoding(data)
    if encoding:
        return {}, {}, [f"{where}: is {encoding}, not UTF-8: save it as UTF-8 (one JSON object "
                        "or TSV row per line)"]
    raw_lines = data.split(b"\n")
    if path.suffix == ".tsv":
        converted, problems = tsv_lines(raw_lines, where)
        hypotheses, lines, found = parse_outputs(converted, where)
        return hypotheses, lines, problems + found
    return parse_outputs(raw_lines, where)


def parse_outputs(raw_lines: Iterable[bytes], where: str) -> tuple[
        dict[tuple[str, int], str], dict[tuple[str, int], int], list[str]]:
    """The lines of an outputs file (bytes, without their newline; ``where`` names the file in
    problems): (hypothesis by (test set, id), line number by (test set, id), every problem).
    For callers that make a submission from other files (another harness's logs) and check it
    as :func:`read_submission` checks a file."""
    hypotheses: dict[tuple[str, int], str] = {}
    lines: dict[tuple[str, int], int] = {}
    problems: list[str] = []
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        at = f"{where}:{number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(f"{at}: not UTF-8 (byte {error.start + 1} of the line)")
            continue
        try:
            row = load_json_noting_repeated_keys(text)
        except ValueError as error:
            problems.append(f"{at}: not a JSON object ({error})")
            continue
        if not isinstance(row, dict):
            problems.append(f"{at}: not a JSON object")
            continue
        repeated = repeated_json_keys(row)
        if repeated:  # JSON keeps the last value: which one was meant is unknown
            problems += [f"{at}: key {'.'.join(map(str, (*path, key)))!r} is written twice in "
                         "one object; keep one" for path, key in repeated]
            continue
        unknown = sorted(set(row) - {"test_set", "locale", "side", "id", "hypothesis"})
        if unknown:
            problems.append(f"{at}: unknown field(s) {', '.join(map(repr, unknown))}")
        name, problem = _test_set_of(row)
        if problem:
            problems.append(f"{at}: {problem}")
        segment_id = row.get("id")
        if isinstance(segment_id, bool) or not isinstance(segment_id, int):
            problems.append(f"{at}: id must be an integer (the instance id)")
            segment_id = None
        hypothesis = row.get("hypothesis")
        if not isinstance(hypothesis, str):
            problems.append(f"{at}: hypothesis must be a string")
            hypothesis = None
        elif len(hypothesis) > MAX_HYPOTHESIS_CHARS:
            problems.append(f"{at}: hypothesis of {len(hypothesis)} characters, over the limit "
                            f"of {MAX_HYPOTHESIS_CHARS}")
            hypothesis = None
        elif (text_problem := _text_problem(hypothesis)) is not None:
            problems.append(f"{at}: hypothesis {text_problem}")
            hypothesis = None
        if name is None or segment_id is None:
            continue
        key = (name, segment_id)
        if key in lines:
            problems.append(f"{at}: duplicate {name} id {segment_id} (first on line "
                            f"{lines[key]})")
            continue
        lines[key] = number
        if hypothesis is not None:
            hypotheses[key] = hypothesis
    return hypotheses, lines, problems


def read_submission(path: str | Path, test_sets: Sequence[TestSet] | None = None) -> Submission:
    """The submission at ``path`` (a folder or its manifest), read and checked: every problem of
    the manifest, of each line of the outputs file and, given ``test_sets``, of its coverage
    (:func:`coverage_problems`), at once, in one :class:`SubmissionError`. The outputs file is
    the manifest's ``outputs`` (relative to the manifest's folder), else ``outputs.jsonl``
    beside it."""
    manifest = manifest_path(path)
    problems: list[str] = []
    document: Any = None
    if not manifest.exists():
        raise SubmissionError([f"{manifest}: no manifest (No such file or directory); "
                               f"expected one of {', '.join(MANIFEST_NAMES)}"])
    try:
        data = read_input_file(manifest, "manifest", MAX_MANIFEST_BYTES)
    except ConfigFileError as error:
        problems.append(str(error))
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(f"{manifest}: not UTF-8 (byte {error.start + 1})")
        else:
            try:
                document = load_yaml_text(text, str(manifest))
            except ConfigFileError as error:
                problems.append(str(error))
            else:
                # a registered secret (an API key of the environment) under any field, or
                # credentials in a URL, would be stored and published with the run's record
                problems += misplaced_secrets(document, str(manifest))
                problems += _manifest_problems(str(manifest), document)
    outputs = _outputs_path(manifest, document)
    hypotheses, lines, found = _read_outputs(outputs, str(outputs))
    problems += found
    if not problems and not lines:
        problems.append(f"{outputs}: holds no hypotheses")
    if test_sets is not None and lines:
        problems += coverage_problems(str(outputs), lines, test_sets)
    if problems:
        raise SubmissionError(problems)
    return Submission(manifest, outputs, document, hypotheses, lines, content_sha256(manifest))


def check_coverage(submission: Submission, test_sets: Sequence[TestSet]) -> None:
    """Every segment of every test set has exactly one hypothesis, and nothing else is there
    (an extra test set or id): every problem in one :class:`SubmissionError`."""
    problems = coverage_problems(str(submission.outputs_path), submission.lines, test_sets)
    if problems:
        raise SubmissionError(problems)


def coverage_problems(where: str, lines: dict[tuple[str, int], int],
                      test_sets: Sequence[TestSet]) -> list[str]:
    """The test sets, ids missing from ``lines`` (where each (test set, id) is in the file
    ``where``) and the test sets and ids there that the benchmark does not have."""
    expected = {test_set.name: {s.segment_id for s in test_set.segments}
                for test_set in test_sets}
    problems = []
    given: dict[str, set[int]] = {}
    for name, segment_id in lines:
        given.setdefault(name, set()).add(segment_id)
    for name in sorted(set(given) - set(expected)):
        first = min(lines[(name, i)] for i in given[name])
        problems.append(f"{where}:{first}: extra test set {name!r} (the benchmark's: "
                        f"{', '.join(sorted(expected))})")
    for name in sorted(expected):
        if name not in given:
            problems.append(f"{where}: test set {name!r} is missing (its "
                            f"{len(expected[name])} ids)")
            continue
        missing = sorted(expected[name] - given[name])
        if missing:
            listing = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
            problems.append(f"{where}: {name}: {len(missing)} missing id(s): {listing}")
        for segment_id in sorted(given[name] - expected[name]):
            problems.append(f"{where}:{lines[(name, segment_id)]}: {name} has no id "
                            f"{segment_id} (extra id)")
    return problems
