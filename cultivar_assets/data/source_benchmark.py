"""Source benchmarks: the parallel source–English sentences that Cultivar is built from.

A *source benchmark* is a set of instances, each with an id, its English sentence, its sentence in
each source language and, when the benchmark says, its document's domain and topic. Kinds
(``SourceBenchmarkConfig.kind``):

- ``flores``: FLORES dev (the paper) or devtest (``split``), local (``flores: local``, ``path``) or
  FLORES+ on the Hub (``flores: hub``, ``repo`` at a pinned ``revision``;
  :mod:`cultivar_assets.data.flores`); the id is the 0-based line index; domain and topic from
  ``metadata_<split>.tsv`` or the FLORES+ columns (``metadata: false``: none, and no topic rule).
- ``files``: one table (``path``: ``.jsonl``, ``.tsv`` with a header, ``.parquet``), one row per
  instance: an id column (non-negative integers), English, one column per source language
  (``language_columns`` {FLORES+ code: column}, else columns named like the Cultivar source
  languages, ``deu_Latn``, ...) and, when present, ``domain`` and ``topic``.
- ``demo``: the original side of the bundled demo data (invented sentences, ids 0–11).

``languages`` restricts the source languages (default: all 21; demo: the demo's); one the
benchmark lacks is reported (``on_missing: skip``) or stops the load (``fail``). An empty
sentence, a duplicate id or a table without the named columns is an error naming file and item.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from cultivar_assets.data.cultivar_files import find_locale_files, read_locale
from cultivar_assets.data.flores import (
    ENGLISH,
    FloresFile,
    FloresReader,
    HubFlores,
    LocalFlores,
    file_codes,
    read_table,
)
from cultivar_assets.data.locales import get_locale, source_languages
from cultivar_assets.data.sources import demo_dataset_dir
from cultivar_assets.data.testsets import DataError, data_text, read_data_file
from cultivar_assets.files import file_sha256


class SourceBenchmarkConfig(BaseModel):
    """Which source benchmark to read (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["demo", "flores", "files"] = "demo"
    split: Literal["dev", "devtest"] = "dev"  # flores
    flores: Literal["local", "hub"] = "local"  # flores: a local release or FLORES+ on the Hub
    path: str | None = None  # flores local: the release directory; files: the table
    repo: str = "openlanguagedata/flores_plus"  # flores hub
    revision: str | None = None  # flores hub: required (a commit or tag), so every build reads
    # the same files
    hub_layout: Literal["auto", "parquet", "jsonl"] = "auto"  # v2.x parquet / v4.x jsonl
    hub_cache_dir: str | None = None
    metadata: bool = True  # flores: domain and topic are required (False: go without)
    languages: list[str] | None = None  # None: all 21 Cultivar source languages (demo: its own)
    on_missing: Literal["skip", "fail"] = "skip"
    id_column: str = "id"  # files
    english_column: str = "eng_Latn"  # files
    language_columns: dict[str, str] = {}  # files: {FLORES+ code: column}; empty: by name
    domain_column: str = "domain"  # files (used when present)
    topic_column: str = "topic"  # files (used when present)

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, value: list[str] | None) -> list[str] | None:
        for language in value or []:
            file_codes(language)  # unknown codes raise, naming the code
        return value

    @field_validator("language_columns")
    @classmethod
    def _known_language_columns(cls, value: dict[str, str]) -> dict[str, str]:
        for language in value:
            file_codes(language)
        return value

    @property
    def name(self) -> str:
        """A short name: ``demo``, ``flores-dev``, ``flores-plus-devtest@v2.1``, ``files:x.tsv``."""
        if self.kind == "demo":
            return "demo"
        if self.kind == "files":
            return f"files:{Path(self.path or '?').name}"
        if self.flores == "hub":
            return f"flores-plus-{self.split}@{self.revision}"
        return f"flores-{self.split}"


@dataclass(frozen=True)
class SourceInstance:
    """One instance of a source benchmark."""

    instance_id: int  # FLORES: the 0-based line index of the split
    english: str
    sources: Mapping[str, str] = field(hash=False)  # FLORES+ language code -> source sentence
    domain: str | None = None
    topic: str | None = None  # as the benchmark spells it (normalised by the selection rules)


@dataclass(frozen=True)
class SourceBenchmark:
    """The instances of a source benchmark, sorted by id, and what it lacks."""

    name: str
    description: str
    is_demo: bool
    instances: tuple[SourceInstance, ...]
    languages: tuple[str, ...]  # source languages read
    missing: Mapping[str, str] = field(default_factory=dict, hash=False)  # language -> reason
    english_file: str = ""  # where the English side came from (for error messages)
    metadata_from: str | None = None  # where domain and topic came from
    # what the benchmark is, as the built dataset's manifest records it (kind; flores: split,
    # origin local/hub, path or repo, revision and commit; files: path and sha256)
    identity: Mapping[str, object] = field(default_factory=dict, hash=False)

    def ids(self) -> list[int]:
        return [inst.instance_id for inst in self.instances]

    def by_id(self) -> dict[int, SourceInstance]:
        return {inst.instance_id: inst for inst in self.instances}

    def fingerprint(self) -> str:
        """sha256 of every instance (id, English, sources, domain, topic) and the missing list."""
        payload = {
            "instances": [[i.instance_id, i.english, dict(sorted(i.sources.items())), i.domain,
                           i.topic] for i in self.instances],
            "missing": dict(sorted(self.missing.items())),
        }
        blob = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()


def load_source_benchmark(config: SourceBenchmarkConfig,
                          token: str | None = None) -> SourceBenchmark:
    """Read the configured source benchmark (errors name the file and the item)."""
    if config.kind == "demo":
        return _demo_benchmark(config)
    if config.kind == "files":
        return _files_benchmark(config)
    return _flores_benchmark(config, token)


# --- FLORES ----------------------------------------------------------------------------------


def flores_source_reader(config: SourceBenchmarkConfig, token: str | None = None) -> FloresReader:
    """The FLORES reader of a ``flores`` source benchmark (the one the evaluation side uses)."""
    if config.flores == "local":
        if not config.path:
            raise DataError("source benchmark 'flores' (local) needs path: a FLORES release "
                            "directory")
        return LocalFlores(Path(config.path), config.split)
    if not config.revision:
        raise DataError(f"source benchmark 'flores' from the Hub ({config.repo}) needs a pinned "
                        "revision (a commit sha or a tag), so that every build reads the same "
                        "files")
    return HubFlores(config.repo, config.revision, config.split, token=token,
                     cache_dir=config.hub_cache_dir, layout=config.hub_layout)


def _empty_lines(found: FloresFile) -> list[int]:
    return [i for i, line in enumerate(found.lines) if not line.text]


def _flores_benchmark(config: SourceBenchmarkConfig, token: str | None) -> SourceBenchmark:
    reader = flores_source_reader(config, token)
    english = reader.read_file([ENGLISH])
    if english is None:
        raise DataError(f"no English FLORES file found (looked in {reader.where([ENGLISH])})")
    if not english.lines:
        raise DataError(f"{english.where}: the English side is empty")
    empty = _empty_lines(english)
    if empty:
        raise DataError(f"{english.where}: empty English sentence at ids {empty[:10]}")
    if config.metadata and english.metadata_from is None:
        expected = (f"{reader.metadata_path} or " if isinstance(reader, LocalFlores) else "")
        raise DataError(
            f"no FLORES metadata (domain, topic) for {english.where}: expected {expected}"
            "'domain'/'topic' columns; set metadata: false to go without (the topic rule then "
            "has no topic to judge)"
        )
    sources: dict[str, dict[int, str]] = {}
    missing: dict[str, str] = {}
    for language in config.languages or list(source_languages()):
        codes = file_codes(language)
        found = reader.read_file(codes)
        if found is None:
            legacy = source_languages()[language][0].flores200_code
            why = "" if legacy else f" ({language} is not part of FLORES-200; it is in FLORES+ 2.0)"
            missing[language] = f"no FLORES file for {language}{why}; looked in " + reader.where(
                codes)
            continue
        if len(found.lines) != len(english.lines):
            raise DataError(f"{found.where} has {len(found.lines)} lines but {english.where} has "
                            f"{len(english.lines)}: the files are not aligned")
        empty = _empty_lines(found)
        if empty:
            raise DataError(f"{found.where}: empty {language} sentence at ids {empty[:10]}")
        sources[language] = dict(enumerate(found.texts))
    _check_missing(config, missing)
    instances = tuple(
        SourceInstance(i, line.text, {lang: texts[i] for lang, texts in sources.items()},
                       line.domain if config.metadata else None,
                       line.topic if config.metadata else None)
        for i, line in enumerate(english.lines)
    )
    description = reader.description
    commit = getattr(reader, "commit", None)
    if commit:
        description += f", commit {commit}"
    identity = {"kind": "flores", "split": config.split, "origin": config.flores,
                **({"path": str(Path(config.path or "").resolve())} if config.flores == "local"
                   else {"repo": config.repo, "revision": config.revision, "commit": commit})}
    return SourceBenchmark(config.name, description, False, instances, tuple(sources), missing,
                           english.where, english.metadata_from if config.metadata else None,
                           identity)


def _check_missing(config: SourceBenchmarkConfig, missing: dict[str, str]) -> None:
    if missing and config.on_missing == "fail":
        raise DataError("missing source languages: " + "; ".join(missing.values()))


# --- parallel files --------------------------------------------------------------------------


def _read_tsv(path: Path) -> tuple[list[dict], set[str]]:
    try:
        with data_text(read_data_file(path, "source benchmark file"), newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            rows = []
            for number, row in enumerate(reader, 2):
                if None in row or any(value is None for value in row.values()):
                    raise DataError(f"{path}:{number}: the row does not have one value per "
                                    "header column")
                rows.append(row)
            return rows, set(reader.fieldnames or [])
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {path}: {error}") from error


def _row_id(value: object, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(f"{where}: id {value!r} is not a non-negative integer")
    return value


def _files_benchmark(config: SourceBenchmarkConfig) -> SourceBenchmark:
    if not config.path:
        raise DataError("source benchmark 'files' needs path: a .jsonl, .tsv or .parquet table")
    path = Path(config.path)
    if not path.exists():
        raise DataError(f"source benchmark file {path} does not exist")
    if path.suffix == ".tsv":
        rows, columns = _read_tsv(path)
    elif path.suffix in (".jsonl", ".parquet"):
        rows, columns = read_table(path, str(path))
    else:
        raise DataError(f"{path}: unknown format {path.suffix!r} (expected .jsonl, .tsv, .parquet)")
    if not rows:
        raise DataError(f"{path}: no rows (the English side is empty)")
    required = [config.id_column, config.english_column]
    absent = [c for c in required if c not in columns]
    if absent:
        raise DataError(f"{path}: no column {', '.join(repr(c) for c in absent)} (columns: "
                        f"{', '.join(sorted(columns))}); set id_column / english_column")
    if config.language_columns:
        language_columns = dict(config.language_columns)
    else:
        language_columns = {c: c for c in sorted(columns) if c in source_languages()}
    wanted = config.languages or list(source_languages())
    missing = {lang: f"no column for {lang} in {path}" for lang in wanted
               if lang not in language_columns or language_columns[lang] not in columns}
    _check_missing(config, missing)
    languages = [lang for lang in wanted if lang not in missing]
    instances: dict[int, SourceInstance] = {}
    for number, row in enumerate(rows):
        where = f"{path}: row {number}"
        instance_id = _row_id(row.get(config.id_column), where)
        if instance_id in instances:
            raise DataError(f"{path}: id {instance_id} occurs more than once")
        english = row.get(config.english_column)
        if not isinstance(english, str) or not english.strip():
            raise DataError(f"{path}: id {instance_id} has an empty English sentence "
                            f"(column {config.english_column!r})")
        sources = {}
        for language in languages:
            text = row.get(language_columns[language])
            if not isinstance(text, str) or not text.strip():
                raise DataError(f"{path}: id {instance_id} has an empty {language} sentence "
                                f"(column {language_columns[language]!r})")
            sources[language] = text.strip()
        instances[instance_id] = SourceInstance(
            instance_id, english.strip(), sources, _text_or_none(row.get(config.domain_column)),
            _text_or_none(row.get(config.topic_column)))
    has_meta = config.topic_column in columns or config.domain_column in columns
    identity = {"kind": "files", "path": str(path.resolve()), "file_sha256": file_sha256(path)}
    return SourceBenchmark(config.name, f"parallel file {path}", False,
                           tuple(instances[i] for i in sorted(instances)), tuple(languages),
                           missing, str(path), str(path) if has_meta else None, identity)


def _text_or_none(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


# --- the demo data ---------------------------------------------------------------------------


def _demo_benchmark(config: SourceBenchmarkConfig) -> SourceBenchmark:
    """The original side of the demo data: English and one source sentence per language."""
    root = demo_dataset_dir()
    english: dict[int, tuple[str, str]] = {}  # id -> (text, locale it came from)
    sources: dict[str, dict[int, str]] = {}
    for locale, paths in find_locale_files(root).items():
        language = get_locale(locale).source_language
        for row in read_locale(locale, paths):
            if row.english_original is None or row.source_original is None:
                raise DataError(f"demo locale {locale}: no original columns in {root}")
            seen = english.setdefault(row.instance_id, (row.english_original, locale))
            if seen[0] != row.english_original:
                raise DataError(f"demo instance {row.instance_id}: the original English differs "
                                f"between {seen[1]} and {locale}")
            sources.setdefault(language, {})[row.instance_id] = row.source_original
    wanted = config.languages or sorted(sources)
    missing = {lang: f"the demo data has no {lang}" for lang in wanted if lang not in sources}
    _check_missing(config, missing)
    languages = [lang for lang in wanted if lang in sources]
    for language in languages:
        lacking = sorted(set(english) - set(sources[language]))
        if lacking:
            raise DataError(f"demo data: no {language} original for ids {lacking[:10]}")
    instances = tuple(
        SourceInstance(i, english[i][0], {lang: sources[lang][i] for lang in languages})
        for i in sorted(english)
    )
    return SourceBenchmark("demo", f"original side of the bundled demo data ({root}; written for "
                           "this project, not FLORES)", True, instances, tuple(languages), missing,
                           str(root), identity={"kind": "demo"})
