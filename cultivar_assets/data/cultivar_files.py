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

import pyarrow.parquet as pq

from cultivar_assets.data.locales import locale_registry
from cultivar_assets.data.testsets import DataError, Instance

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


def find_locale_files(root: Path) -> dict[str, list[Path]]:
    """Locale key -> its data files under ``root`` (any of the accepted layouts)."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"Cultivar dataset directory {root} does not exist")
    known = locale_registry()
    found: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".jsonl", ".parquet") or not path.is_file():
            continue
        if path.stem in known:
            locale = path.stem
        elif path.parent.name in known:
            locale = path.parent.name
        else:
            continue
        found.setdefault(locale, []).append(path)
    return found


def _read_rows(path: Path) -> list[dict]:
    try:
        if path.suffix == ".parquet":
            return pq.read_table(path).to_pylist()
        rows = []
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as error:
                        raise DataError(f"{path}:{number}: not valid JSON ({error.msg})") from None
                    if not isinstance(row, dict):
                        raise DataError(f"{path}:{number}: expected a JSON object, got "
                                        f"{type(row).__name__}")
                    rows.append(row)
        return rows
    except DataError:
        raise
    except Exception as error:  # unreadable file: permissions, truncated parquet, bad encoding
        raise DataError(f"cannot read {path}: {error}") from error


def _instance_id(value: object) -> int | None:
    """A non-negative integer id (int, or a string of digits); anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def read_locale(
    locale: str, paths: list[Path], column_map: dict[str, str] | None = None
) -> list[Instance]:
    """Instances of one locale, sorted by id; errors name the file and the missing columns."""
    mapping = {name: (column_map or {}).get(name, name) for name in CANONICAL_COLUMNS}
    rows = [row for path in paths for row in _read_rows(path)]
    where = ", ".join(str(p) for p in paths)
    if not rows:
        raise DataError(f"locale {locale}: no rows in {where}")
    columns = set().union(*(row.keys() for row in rows))
    missing = [f"{name!r} (column {mapping[name]!r})" for name in REQUIRED_COLUMNS
               if mapping[name] not in columns]
    if missing:
        raise DataError(
            f"locale {locale}: missing required columns {', '.join(missing)} in {where}; "
            f"columns present: {', '.join(sorted(columns))}. Set the column mapping if the "
            "dataset uses other names."
        )
    has_originals = all(mapping[name] in columns for name in ORIGINAL_COLUMNS)
    instances = []
    for number, row in enumerate(rows):
        if mapping["locale"] in row and row[mapping["locale"]] not in (None, locale):
            raise DataError(f"{where}: row {number} has locale {row[mapping['locale']]!r}, "
                            f"expected {locale!r}")
        instance_id = _instance_id(row.get(mapping["id"]))
        if instance_id is None:
            raise DataError(f"locale {locale}: row {number} has a non-integer id "
                            f"{row.get(mapping['id'])!r} (column {mapping['id']!r} in {where})")
        texts = {}
        for name in ("source_localised", "english_localised", *ORIGINAL_COLUMNS):
            value = row.get(mapping[name])
            if name in ORIGINAL_COLUMNS and not has_originals:
                texts[name] = None
                continue
            if not isinstance(value, str) or not value.strip():
                raise DataError(f"locale {locale}: instance {instance_id} has an empty {name!r}")
            texts[name] = value.strip()
        instances.append(Instance(locale=locale, instance_id=instance_id, **texts))
    return sorted(instances, key=lambda inst: inst.instance_id)
