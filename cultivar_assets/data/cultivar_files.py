"""Reader for Cultivar datasets in the project's published format.

One file per locale, JSON Lines or parquet, with these columns (names can be remapped by a
``column_map`` {canonical name: dataset column name}, for datasets published with other names):

| column | required | meaning |
|---|---|---|
| ``id`` | yes | instance id: 0-based FLORES dev line index |
| ``source_localised`` | yes | localised source sentence |
| ``english_localised`` | yes | localised English reference |
| ``source_original`` | no | original FLORES source sentence |
| ``english_original`` | no | original FLORES English sentence |
| ``locale`` | no | locale key; must match the file's locale when present |

Accepted layouts of a dataset directory: ``<locale>.jsonl`` / ``<locale>.parquet``, or the
Hugging Face Hub layout ``data/<locale>/*.parquet`` (also ``<locale>/*.parquet``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cultivar_assets.data.locales import locale_registry
from cultivar_assets.data.testsets import DataError, Instance, data_text, read_data_file

CANONICAL_COLUMNS = (
    "id",
    "locale",
    "source_original",
    "english_original",
    "source_localised",
    "english_localised",
)
REQUIRED_COLUMNS = ("id", "source_localised", "english_localised")
ORIGINAL_COLUMNS = ("source_original", "english_original")


DATA_SUFFIXES = (".jsonl", ".parquet")


def _data_files(root: Path) -> list[Path]:
    """The data files of the accepted layouts (module docstring): ``.jsonl`` and ``.parquet``
    files in ``root``, in a folder directly inside it, and in a folder directly inside
    ``root/data``; no deeper folder is listed. Anything of those names but a folder is returned
    (a FIFO or a device is then refused by its reader, not passed over)."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"Cultivar dataset directory {root} does not exist")
    folders = [root, *(p for p in root.iterdir() if p.is_dir())]
    if (root / "data").is_dir():
        folders += [p for p in (root / "data").iterdir() if p.is_dir()]
    return sorted({p for folder in folders for p in folder.iterdir()
                   if p.suffix in DATA_SUFFIXES and not p.is_dir()})


def _locale_of(path: Path) -> str | None:
    known = locale_registry()
    if path.stem in known:
        return path.stem
    if path.parent.name in known:
        return path.parent.name
    return None


def find_locale_files(root: Path) -> dict[str, list[Path]]:
    """Locale key -> its data files under ``root`` (any of the accepted layouts)."""
    found: dict[str, list[Path]] = {}
    for path in _data_files(root):
        locale = _locale_of(path)
        if locale is not None:
            found.setdefault(locale, []).append(path)
    return found


def unknown_locale_files(root: Path) -> list[Path]:
    """Data files under ``root`` that name no locale of the registry (e.g. a new locale's file
    that nobody registered, or a typo such as ``deu_Latn_Germny.jsonl``): never read, always
    reported by the loader."""
    return [path for path in _data_files(root) if _locale_of(path) is None]


Row = tuple[str, dict]  # (where: "file:line" or "file row n", the row)


def _read_rows(path: Path) -> list[Row]:
    try:
        data = read_data_file(path, "Cultivar data file")
        if path.suffix == ".parquet":
            return [(f"{path} row {i}", row)
                    for i, row in enumerate(pq.read_table(pa.BufferReader(data)).to_pylist(), 1)]
        rows = []
        with data_text(data) as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as error:
                        raise DataError(f"{path}:{number}: not valid JSON ({error.msg})") from None
                    if not isinstance(row, dict):
                        raise DataError(f"{path}:{number}: expected a JSON object, got "
                                        f"{type(row).__name__}")
                    rows.append((f"{path}:{number}", row))
        return rows
    except DataError:
        raise
    except UnicodeDecodeError as error:
        raise DataError(f"cannot read {path}: not UTF-8 text ({error.reason} at byte "
                        f"{error.start})") from error
    except Exception as error:  # unreadable file: permissions, truncated parquet
        raise DataError(f"cannot read {path}: {error}") from error


def _id_problem(value: object) -> tuple[int | None, str | None]:
    """(id, None) for a valid id (a non-negative int, or a string of digits), else (None, why)."""
    if value is None:
        return None, "has no id"
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None, f"has an id of type {type(value).__name__} ({value!r}), not an integer"
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            value = int(text)
        else:
            return None, f"has a non-integer id {value!r}"
    if value < 0:
        return None, f"has a negative id {value} (ids are 0-based FLORES dev line indices)"
    return value, None


def _text_problem(name: str, column: str, row: dict) -> str | None:
    if column not in row:
        return f"has no {name!r} (column {column!r} is missing)"
    if row[column] is None:
        return f"has no {name!r} (column {column!r} is null)"
    value = row[column]
    if not isinstance(value, str):
        return f"has a {type(value).__name__} in {name!r}, not a text"
    if not value.strip():
        return f"has a blank {name!r}"
    return None


MAX_LISTED = 20


def read_locale(
    locale: str, paths: list[Path], column_map: dict[str, str] | None = None
) -> list[Instance]:
    """Instances of one locale, sorted by id (see :func:`read_locale_rows`)."""
    return read_locale_rows(locale, paths, column_map)[0]


def read_locale_rows(
    locale: str, paths: list[Path], column_map: dict[str, str] | None = None
) -> tuple[list[Instance], dict[int, str]]:
    """Instances of one locale sorted by id, and where each id was read (``file:line``).

    Every problem of every row (missing or mistyped columns, blank texts, missing, negative or
    non-integer ids, duplicate ids, another locale) is collected and reported in one DataError
    that names the file and line of each; nothing is returned then.
    """
    mapping = {name: (column_map or {}).get(name, name) for name in CANONICAL_COLUMNS}
    rows = [row for path in paths for row in _read_rows(path)]
    where = ", ".join(str(p) for p in paths)
    if not rows:
        raise DataError(f"locale {locale}: no rows in {where}")
    columns = set().union(*(row.keys() for _, row in rows))
    missing = [f"{name!r} (column {mapping[name]!r})" for name in REQUIRED_COLUMNS
               if mapping[name] not in columns]
    if missing:
        raise DataError(
            f"locale {locale}: missing required columns {', '.join(missing)} in {where}; "
            f"columns present: {', '.join(sorted(columns))}. Set the column mapping if the "
            "dataset uses other names."
        )
    has_originals = all(mapping[name] in columns for name in ORIGINAL_COLUMNS)
    texts_wanted = ("source_localised", "english_localised",
                    *(ORIGINAL_COLUMNS if has_originals else ()))
    instances, origins, problems = [], {}, []
    for origin, row in rows:
        row_problems = []
        if mapping["locale"] in row and row[mapping["locale"]] not in (None, locale):
            row_problems.append(f"has locale {row[mapping['locale']]!r}, expected {locale!r}")
        instance_id, why = _id_problem(row.get(mapping["id"]))
        if why:
            row_problems.append(why)
        elif instance_id in origins:
            row_problems.append(f"repeats id {instance_id} (first at {origins[instance_id]})")
        row_problems += [p for name in texts_wanted
                         if (p := _text_problem(name, mapping[name], row))]
        if row_problems:
            problems += [f"{origin}: {p}" for p in row_problems]
            continue
        origins[instance_id] = origin
        texts = {name: (row[mapping[name]].strip() if name in texts_wanted else None)
                 for name in ("source_localised", "english_localised", *ORIGINAL_COLUMNS)}
        instances.append(Instance(locale=locale, instance_id=instance_id, **texts))
    if problems:
        listed = "\n  ".join(problems[:MAX_LISTED])
        extra = len(problems) - MAX_LISTED
        more = f"\n  ... and {extra} more" if extra > 0 else ""
        raise DataError(f"locale {locale}: {len(problems)} problem(s) in {where}:\n  "
                        f"{listed}{more}")
    return sorted(instances, key=lambda inst: inst.instance_id), origins
