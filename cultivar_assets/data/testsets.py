"""Instances, test sets and the loaded benchmark.

An *instance* is one FLORES dev sentence selected for Cultivar, in one locale: its original source
and English (FLORES) and its localised source and English (Cultivar). Its id is the 0-based FLORES
dev line index, shared by the original and every localised version (``deu_Latn_Germany_2`` is
FLORES dev line 2).

A model's work is a list of test sets:
- ``flores_<lang>`` for each source language: the original sources of the selected instances (the
  union over the language's locales), reference = original English;
- ``cultivar_<locale>`` for each locale: localised source, reference = localised English.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from cultivar_assets.config_files import ConfigFileError, read_input_file
from cultivar_assets.data.locales import (
    cultivar_test_set_name,
    flores_test_set_name,
    get_locale,
)

TestSetKind = Literal["flores", "cultivar"]


class DataError(ValueError):
    """Bad or missing benchmark data; the message names the file, locale or column."""


MAX_DATA_FILE_BYTES = 1 << 30  # a data file (FLORES, a Cultivar locale, a source table): 1 GiB


def read_data_file(path: Path, what: str, max_bytes: int = MAX_DATA_FILE_BYTES) -> bytes:
    """The bytes of a data file, read only when it is a regular file of at most ``max_bytes``
    (``config_files.read_input_file``: checked before reading); DataError in one line naming
    the file otherwise."""
    try:
        return read_input_file(path, what, max_bytes)
    except ConfigFileError as error:
        raise DataError(str(error)) from None


def data_text(data: bytes, newline: str | None = None) -> io.StringIO:
    """UTF-8 ``data`` as a text stream, lines as a file opened with ``newline`` reads them
    (None: ``\\r\\n`` and ``\\r`` end lines as ``\\n`` does; ``""`` for the csv module).
    UnicodeDecodeError for text that is not UTF-8."""
    return io.StringIO(data.decode("utf-8"), newline=newline)


@dataclass(frozen=True)
class Instance:
    locale: str
    instance_id: int
    source_localised: str
    english_localised: str
    source_original: str | None  # None when the original source language is unavailable
    english_original: str | None


@dataclass(frozen=True)
class Segment:
    segment_id: int  # the instance id
    source: str
    reference: str


@dataclass(frozen=True)
class TestSet:
    __test__ = False  # not a pytest class

    name: str
    kind: TestSetKind
    language: str  # FLORES+ code of the source language
    locale: str | None  # None for flores_* test sets
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class MissingItem:
    """A test set that the configuration expects but the data cannot provide."""

    test_set: str
    kind: TestSetKind
    language: str
    locale: str | None
    reason: str


@dataclass
class BenchmarkData:
    """The loaded benchmark: instances per locale, plus what is missing and why."""

    source: str  # human-readable description of where the data came from
    is_demo: bool
    instances: dict[str, list[Instance]]  # locale -> instances sorted by id
    missing: list[MissingItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kind: str | None = None  # the data kind it was loaded as (demo, local, hub, built)
    # for the data kind built: the provenance record of its build manifest
    # (construction/dataset.py, build_provenance; data/build_record.py renders it)
    build_provenance: dict | None = None

    def __post_init__(self) -> None:
        for locale, rows in self.instances.items():
            get_locale(locale)  # unknown locale keys fail here, with close matches
            ids = [row.instance_id for row in rows]
            if len(set(ids)) != len(ids):
                dupes = sorted({i for i in ids if ids.count(i) > 1})
                raise DataError(f"locale {locale}: duplicate instance ids {dupes[:10]}")
            if not rows:
                raise DataError(f"locale {locale}: no instances")
        self._check_originals_agree()

    def _check_originals_agree(self) -> None:
        """An id's original source and English must agree across the locales of a language."""
        seen: dict[tuple[str, int], tuple[str, str | None, str | None]] = {}
        for locale, rows in self.instances.items():
            language = get_locale(locale).source_language
            for row in rows:
                key = (language, row.instance_id)
                value = (locale, row.source_original, row.english_original)
                if key in seen and seen[key][1:] != value[1:]:
                    raise DataError(
                        f"instance {row.instance_id}: the original {language} source or English "
                        f"differs between {seen[key][0]} and {locale}"
                    )
                seen.setdefault(key, value)

    @property
    def locales(self) -> list[str]:
        return list(self.instances)

    @property
    def languages(self) -> list[str]:
        """Source languages (FLORES+ codes) of the loaded locales, in locale order."""
        return list(dict.fromkeys(get_locale(k).source_language for k in self.instances))

    def test_sets(self) -> list[TestSet]:
        """``flores_<lang>`` for each language with originals, then ``cultivar_<locale>``."""
        flores: list[TestSet] = []
        for language in self.languages:
            originals: dict[int, Segment] = {}
            for locale, rows in self.instances.items():
                if get_locale(locale).source_language != language:
                    continue
                for row in rows:
                    if row.source_original is None or row.english_original is None:
                        continue
                    originals[row.instance_id] = Segment(
                        row.instance_id, row.source_original, row.english_original
                    )
            if originals:
                flores.append(
                    TestSet(
                        name=flores_test_set_name(language),
                        kind="flores",
                        language=language,
                        locale=None,
                        segments=tuple(originals[i] for i in sorted(originals)),
                    )
                )
        cultivar = [
            TestSet(
                name=cultivar_test_set_name(locale),
                kind="cultivar",
                language=get_locale(locale).source_language,
                locale=locale,
                segments=tuple(
                    Segment(r.instance_id, r.source_localised, r.english_localised) for r in rows
                ),
            )
            for locale, rows in self.instances.items()
        ]
        return flores + cultivar

    def fingerprint(self) -> str:
        """sha256 of every instance and every missing item: changes whenever the data does."""
        payload = {
            "instances": {k: [asdict(r) for r in v] for k, v in sorted(self.instances.items())},
            "missing": [asdict(m) for m in self.missing],
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()
