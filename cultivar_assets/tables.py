"""Rendering result values and tables as text: one value formatter, one Markdown table writer.

Used by the CLI, the Dagster metadata, the dataset card and the site, so a number reads the same
everywhere: ``None`` is an en dash, rates (columns ending in ``_rate``) get 4 decimals,
parameter counts (``params_*``) 2 or as many as their first two significant digits need
(:func:`format_params`), other floats 2 (or ``digits``). Markdown cells are escaped
(:func:`md_text`), so a ``|`` or ``<`` in a model name cannot break a table or inject HTML.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import orjson

MISSING = "–"
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")
_SAFE_CODE = re.compile(r"^[\w.\-/]+$")


def format_value(value: Any, column: str = "", digits: int | None = None) -> str:
    """``value`` as display text (see the module docstring)."""
    if value is None:
        return MISSING
    if isinstance(value, float) and column.startswith("params_"):
        return format_params(value)
    if isinstance(value, float):
        places = digits if digits is not None else (4 if column.endswith("_rate") else 2)
        return f"{value:.{places}f}"
    return str(value)


def format_params(value: float | None) -> str:
    """A parameter count in billions: 2 decimals, or as many as its first two significant
    digits need below 0.01 (0.001 is "0.001", not "0.00"); None is an en dash."""
    if value is None:
        return MISSING
    if value == 0 or not math.isfinite(value) or abs(value) >= 0.01:
        return f"{value:.2f}"
    return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}".rstrip("0")


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: "1 model", "3 models"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


# Characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection"): = + - @,
# and tab / carriage return, which some spreadsheets strip before looking at the next character.
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """``value`` as a CSV cell that no spreadsheet evaluates.

    Text that starts with one of :data:`CSV_FORMULA_START` gets a leading apostrophe (the
    spreadsheets' own "this is text" mark), so ``=1+1`` is written ``'=1+1``. Numbers are left
    alone (a negative ∆ stays a number); lists and other values are written as their text first.
    The same rule is implemented for the browser in ``site/static/cultivar-csv.js`` (tests hold
    the two to the same cases).
    """
    kind = type(value)
    if kind is str:  # the common cases first, by exact type (most cells of a large table)
        return "'" + value if value.startswith(CSV_FORMULA_START) else value
    if kind in _AS_IS or value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else _plain(value)
    return "'" + text if text.startswith(CSV_FORMULA_START) else text


_AS_IS = frozenset({float, int, bool})


def _plain(value: Any) -> str:
    if isinstance(value, list | tuple):
        return json.dumps(list(value), ensure_ascii=False, default=str)
    return str(value)


def csv_text(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    """``rows`` as CSV text (RFC 4180: CRLF line ends, so a field holding a CR or LF is quoted;
    header row of ``columns``; ``None`` is an empty cell): what :class:`csv.writer` (the excel
    dialect) writes for the rows' values made safe by :func:`csv_safe`. Built column by column
    (a column of floats, the common case, is its values' text; other columns' distinct values
    are written once each)."""
    rows = rows if isinstance(rows, list) else list(rows)
    if len(columns) == 1:  # a row of one empty field is written "" (csv.writer's own rule)
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer)
        writer.writerow([csv_safe(columns[0])])
        writer.writerows([csv_safe(row.get(columns[0]))] for row in rows)
        return buffer.getvalue()
    header = ",".join(map(_csv_field, columns)) + "\r\n"
    if not rows:
        return header
    cells: list[list[str]] = []
    floats: list[tuple[int, list[float]]] = []  # the float columns, given their text together
    for column in columns:
        values = [row.get(column) for row in rows]
        kinds = set(map(type, values))
        if kinds == _FLOAT:
            floats.append((len(cells), values))
            cells.append(values)
        elif kinds == _STR and not _CSV_TEXT_CHANGED.search("\0" + "\0".join(values)):
            cells.append(values)  # text written as it is: nothing to quote or make safe
        elif kinds <= _TEXT:  # text repeats (locales, test sets): each distinct value once
            text = {value: _csv_field(value) for value in set(values)}
            cells.append(list(map(text.__getitem__, values)))
        else:
            cells.append([value.__repr__() if type(value) is float else _csv_field(value)
                          for value in values])
    if floats:
        texts = float_texts([value for _, values in floats for value in values])
        for position, (index, _) in enumerate(floats):
            cells[index] = texts[position * len(rows):(position + 1) * len(rows)]
    return header + "\r\n".join(map(",".join, zip(*cells, strict=True))) + "\r\n"


def float_texts(values: list[float]) -> list[str]:
    """``str(value)`` (Python's shortest text that reads back as the value) of each of
    ``values`` (floats), in bulk: orjson's text of the list where a value lies in
    [1e-4, 1e15) or is 0 in magnitude (there orjson writes the same shortest digits in the same
    positional form; tests hold the two equal over every magnitude), ``str`` elsewhere (Python
    writes an exponent below 1e-4 and from 1e16, orjson otherwise, and NaN as null)."""
    if not values:
        return []
    texts = orjson.dumps(values).decode("ascii")[1:-1].split(",")
    magnitude = np.abs(np.array(values, dtype=np.float64))
    outside = np.flatnonzero(~(((magnitude >= 1e-4) & (magnitude < 1e15)) | (magnitude == 0)))
    for index in outside.tolist():
        texts[index] = str(values[index])
    return texts


_FLOAT = {float}
_STR = {str}
_TEXT = {str, type(None)}
_CSV_QUOTED = re.compile('[,"\r\n]')
# In a column's values joined after NUL each: a character that csv.writer quotes, or a value
# that csv_safe changes (one starting with one of CSV_FORMULA_START).
_CSV_TEXT_CHANGED = re.compile('[,"\r\n]|\0[=+\\-@\t]')


def _csv_field(value: Any) -> str:
    """The text :class:`csv.writer` (excel dialect) writes for ``csv_safe(value)`` in a row of
    more than one field."""
    if value is None:
        return ""
    safe = csv_safe(value)
    text = safe if type(safe) is str else str(safe)
    return '"' + text.replace('"', '""') + '"' if _CSV_QUOTED.search(text) else text


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()  # a numpy number (orjson takes them itself; the json module not)
    return str(value)


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_bytes(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (no spaces, non-ASCII as is): times in ISO 8601, NaN and
    infinities as ``null`` (JSON has neither), other values JSON does not know as their text
    (``str``), keys that are not strings as their text. Encoded by orjson (the site's shards
    and JSON downloads: 9–15 times faster than the json module there); a value orjson refuses
    (an integer past 64 bits) by the json module, to the same JSON."""
    try:
        return orjson.dumps(value, default=_json_default, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(_json_value(value), ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False, default=_json_default).encode("utf-8")


def json_text(rows: Iterable[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """``rows`` as a JSON array of objects, one object per line (only ``columns``, in that
    order, when given), each object as :func:`json_bytes` writes it (times in ISO 8601, NaN and
    infinities as ``null``, other values JSON does not know as their text)."""
    order = tuple(columns) if columns is not None else None
    # a row whose keys are the columns, in their order, is written as it is (no copy)
    lines = [json_bytes(row if order is None or tuple(row) == order
                        else {key: row.get(key) for key in order}) for row in rows]
    return (b"[\n" + b",\n".join(lines) + b"\n]").decode("utf-8") if lines else "[]"


def format_interval(value: Any, low: Any, high: Any, column: str = "",
                    digits: int | None = None, excludes_zero: bool | None = None) -> str:
    """``value [low, high]`` (each as :func:`format_value`), with ``*`` after it when
    ``excludes_zero`` (the interval lies above or below 0); just the value without an interval."""
    text = format_value(value, column, digits)
    if low is not None and high is not None:
        text += f" [{format_value(low, column, digits)}, {format_value(high, column, digits)}]"
    return text + ("*" if excludes_zero else "")


def md_text(value: object) -> str:
    """``value`` as inline Markdown text: punctuation escaped, line breaks folded."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def md_code(value: object) -> str:
    """``value`` as a code span when it is a plain identifier, else as escaped text."""
    text = str(value)
    return f"`{text}`" if _SAFE_CODE.match(text) else md_text(text)


def md_table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """A Markdown table of cells that are already Markdown (escaped by the caller)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A Markdown table of ``rows`` with (key, header) ``columns``; values formatted, escaped."""
    cells = [[md_text(format_value(row.get(key), key)) for key, _ in columns] for row in rows]
    return md_table(cells, [md_text(header) for _, header in columns])


QUANTITY_HEADERS = {"delta": "∆{}", "flores": "FLORES {}", "cultivar": "Cultivar {}"}
"""A wide view's quantities of a metric, in column order: the column ``<quantity>_<key>`` of a
metric whose key is ``<key>`` and label ``<label>`` has the header ``header.format(label)``."""


def metric_columns(metrics: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(column, header) of ``metrics`` ((key, label) each) in a wide view: every metric's ∆,
    then every metric's FLORES score, then every metric's Cultivar score."""
    return [(f"{quantity}_{key}", header.format(label))
            for quantity, header in QUANTITY_HEADERS.items() for key, label in metrics]


def leaderboard_columns(metrics: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(column, header) of the leaderboard view (paper, Table 3) for the paper's ``metrics``
    ((key, label) each, as :func:`metric_columns`): model, type, the metrics, the word-recall
    rates."""
    return [("model_id", "model"), ("type", "type"), *metric_columns(metrics),
            ("false_positive_rate", "FP rate"), ("false_negative_rate", "FN rate")]


def with_intervals(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """``row`` with each of ``columns`` that has ``_low``/``_high`` columns written as
    ``value [low, high]`` (``*``: a ∆ whose interval excludes 0)."""
    out = dict(row)
    for column in columns:
        if f"{column}_low" in row:
            out[column] = format_interval(row.get(column), row.get(f"{column}_low"),
                                          row.get(f"{column}_high"), column,
                                          excludes_zero=row.get(f"{column}_excludes_zero"))
    return out


def signature_text(row: dict[str, Any], key: str, heading: str) -> str:
    """``<heading>: <signature>`` of the metric ``key`` in a leaderboard ``row``, with the sha256
    of its SentencePiece model when the row holds one (``<key>_tokenizer_sha256``)."""
    spm = row.get(f"{key}_tokenizer_sha256")
    return (f"{heading}: {row[f'{key}_signature']}"
            + (f" (SentencePiece model sha256 {spm})" if spm else ""))


def leaderboard_markdown(rows: Sequence[dict[str, Any]], metrics: Sequence[tuple[str, str]],
                         ranked_by: str) -> str:
    """The leaderboard (paper, Table 3) as Markdown, with the signatures it was scored with:
    the columns of :func:`leaderboard_columns` for the paper's ``metrics`` ((key, label) each).

    Rows with interval columns show ``value [low, high]`` and, when present, the rank interval
    by the ∆ of the metric ``ranked_by`` (a key of ``metrics``) and the contamination rules
    that fired."""
    columns = leaderboard_columns(metrics)
    rank = f"rank_delta_{ranked_by}_label"
    if rows and rank in rows[0]:
        columns.insert(1, (rank, f"rank ({dict(metric_columns(metrics))[f'delta_{ranked_by}']})"))
    if rows and "flags" in rows[0]:
        columns.append(("flags", "flags"))
    shown = [{**with_intervals(r, [key for key, _ in columns]),
              "flags": ", ".join(r.get("flags") or []) or MISSING} for r in rows]
    table = markdown_table(shown, columns)
    signatures = sorted({"; ".join(signature_text(r, key, label) for key, label in metrics)
                         for r in rows})
    return table + "\n\n" + "\n".join(f"Signatures: {md_text(s)}" for s in signatures)
