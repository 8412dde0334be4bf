"""Readers for the original FLORES sentences (dev or devtest), from a local release or the Hub.

A FLORES *file* is one language's sentences of one split. The project's instance id is the
0-based *line index* of the FLORES-200 file (``deu_Latn_Germany_2`` is FLORES dev line 2): a
:class:`FloresFile` holds line ``i`` at position ``i``, and every language is joined to English on
that index, taken from the text file's line number or the FLORES+ ``id`` column
(:func:`flores_line_index`), never from a table's row position. Local layouts (``<code>``: the
FLORES+ code, then the FLORES-200 name; ``<split>``: ``dev`` or ``devtest``):
``<split>/<code>.<split>`` (FLORES-200 / FLORES+ v1, with ``metadata_<split>.tsv`` beside the
split folders: ``URL``, ``domain``, ``topic``, ``has_image``, ``has_hyperlink``, row ``i`` for
line ``i``); ``<split>/<split>.<code>`` (older FLORES+ text releases); ``<split>/<code>.parquet``
(FLORES+ v2.x) and ``<split>/<code>.jsonl`` (v4.x, adding ``variant`` and ``split``), with columns
``id``, ``text`` and, when present, ``domain``, ``topic``. On the Hub (:class:`HubFlores`) the two
FLORES+ layouts; ``layout="auto"`` takes the one the repository has at the pinned revision, and
neither is an error. Lines are stripped of surrounding whitespace.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from cultivar_assets.data.locales import source_languages
from cultivar_assets.data.testsets import DataError, data_text, read_data_file
from cultivar_assets.secrets import register, secret_from_env

ENGLISH = "eng_Latn"
SPLITS = ("dev", "devtest")
HubLayout = Literal["auto", "parquet", "jsonl"]
_TABLE_SUFFIXES = {".parquet": "parquet", ".jsonl": "jsonl"}


@dataclass(frozen=True)
class FloresLine:
    """One FLORES sentence with the metadata its release gives (None when it gives none)."""

    text: str  # stripped; "" for an empty line of a text file
    domain: str | None = None
    topic: str | None = None


@dataclass(frozen=True)
class FloresFile:
    """One language's sentences of one split; ``lines[i]`` is line ``i`` (the instance id)."""

    where: str  # the file (path, or repo:path@revision)
    lines: tuple[FloresLine, ...]
    metadata_from: str | None = None  # where domain/topic came from; None: not known

    @property
    def texts(self) -> list[str]:
        return [line.text for line in self.lines]


class FloresReader(Protocol):
    description: str

    def read(self, codes: list[str]) -> list[str] | None:
        """The sentences (in line order) of the first code that exists; None when none does."""
        ...

    def read_file(self, codes: list[str]) -> FloresFile | None:
        """Like ``read``, with the file's name and the metadata of each line."""
        ...

    def where(self, codes: list[str]) -> str:
        """Where ``read`` looked, for error messages."""
        ...


def file_codes(language: str) -> list[str]:
    """Candidate file codes for a FLORES+ language code (FLORES+ name, then FLORES-200 name)."""
    if language == ENGLISH:
        return [ENGLISH]
    locales = source_languages().get(language)
    if not locales:
        raise DataError(f"unknown source language {language!r}: no Cultivar locale uses it")
    codes = [language]
    legacy = locales[0].flores200_code
    if legacy and legacy != language:
        codes.append(legacy)
    return codes


def flores_line_index(flores_id: object, where: str) -> int:
    """The 0-based FLORES-200 line index of a FLORES+ row, from its ``id`` column.

    Assumption (not checkable offline; ours): FLORES+ numbers the rows of each split from 0 in the
    order of the FLORES-200 files, so ``id`` *is* the 0-based line index. Evidence: published
    examples of the dataset show its first ``eng_Latn`` dev row with ``id`` 0 and the text of
    FLORES-200 dev line 0. The readers check what can be checked: the ids of every file must be
    exactly 0..n-1 (:func:`_rows_to_file`), so a release that numbers otherwise (from 1, or
    devtest continuing after dev) stops with an error naming this function instead of
    shifting every sentence by one.
    """
    if isinstance(flores_id, bool) or not isinstance(flores_id, int) or flores_id < 0:
        raise DataError(f"{where}: id {flores_id!r} is not a non-negative integer")
    return flores_id


def _text_value(value: object, where: str, key: object) -> str:
    if not isinstance(value, str):
        raise DataError(f"{where}: id {key} has no text ({value!r})")
    return value.strip()


def _optional(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _rows_to_file(rows: list[dict], columns: set[str], where: str, split: str) -> FloresFile:
    """FLORES+ table rows (v2.x parquet, v4.x jsonl) -> lines in :func:`flores_line_index` order."""
    missing = [name for name in ("id", "text") if name not in columns]
    if missing:
        raise DataError(
            f"{where}: not a FLORES+ file: no {', '.join(repr(m) for m in missing)} column "
            f"(columns: {', '.join(sorted(columns)) or 'none'}); FLORES+ v2.x parquet and v4.x "
            "jsonl files have 'id' and 'text'"
        )
    by_index: dict[int, FloresLine] = {}
    for row in rows:
        index = flores_line_index(row.get("id"), where)
        if "split" in columns and row.get("split") not in (None, split):
            raise DataError(f"{where}: id {row['id']} belongs to split {row.get('split')!r}, "
                            f"not {split!r}")
        if index in by_index:
            variant = f" (variant {row.get('variant')!r})" if "variant" in columns else ""
            raise DataError(f"{where}: id {row['id']} occurs more than once{variant}; cannot "
                            "join on id")
        by_index[index] = FloresLine(_text_value(row.get("text"), where, row.get("id")),
                                     _optional(row.get("domain")), _optional(row.get("topic")))
    if not by_index:
        raise DataError(f"{where}: no rows")
    if set(by_index) != set(range(len(by_index))):
        gaps = sorted(set(range(max(by_index) + 1)) - set(by_index))
        raise DataError(
            f"{where}: ids are not 0..{len(by_index) - 1} (lowest {min(by_index)}, highest "
            f"{max(by_index)}, missing {gaps[:10]}); the reader assumes that a FLORES+ id is the "
            "0-based FLORES line index (cultivar_assets.data.flores.flores_line_index)"
        )
    meta = "domain" in columns or "topic" in columns
    return FloresFile(where, tuple(by_index[i] for i in range(len(by_index))),
                      where if meta else None)


def read_table(path: Path, where: str) -> tuple[list[dict], set[str]]:
    """Rows and column names of a parquet or JSON Lines file."""
    data = read_data_file(path, "data file")
    if path.suffix == ".parquet":
        try:
            table = pq.read_table(pa.BufferReader(data))
        except Exception as error:
            raise DataError(f"cannot read {where}: {error}") from error
        return table.to_pylist(), set(table.column_names)
    rows: list[dict] = []
    try:
        with data_text(data) as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DataError(f"{where}:{number}: not valid JSON ({error.msg})") from None
                if not isinstance(row, dict):
                    raise DataError(f"{where}:{number}: expected a JSON object")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {where}: {error}") from error
    return rows, set().union(*(row.keys() for row in rows)) if rows else set()


def _read_lines(path: Path) -> list[str]:
    try:
        text = data_text(read_data_file(path, "FLORES file")).read()
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read FLORES file {path}: {error}") from error
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return [line.strip() for line in lines]


def read_metadata_tsv(path: Path) -> list[tuple[str | None, str | None]]:
    """(domain, topic) of each line from a FLORES-200 ``metadata_<split>.tsv`` (row i = line i)."""
    try:
        with data_text(read_data_file(path, "FLORES metadata"), newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            missing = [c for c in ("domain", "topic") if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"{path}: no {', '.join(missing)} column (columns: "
                                f"{', '.join(reader.fieldnames or [])})")
            return [(_optional(row["domain"]), _optional(row["topic"])) for row in reader]
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read FLORES metadata {path}: {error}") from error


@dataclass
class LocalFlores:
    """A FLORES-200 or FLORES+ release unpacked in ``root``."""

    root: Path
    split: str = "dev"
    _metadata: list | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if self.split not in SPLITS:
            raise DataError(f"unknown FLORES split {self.split!r} (expected dev or devtest)")
        if not self.root.is_dir():
            raise DataError(f"FLORES directory {self.root} does not exist")
        self.description = f"FLORES files in {self.root}" + (
            f" ({self.split})" if self.split != "dev" else "")

    @property
    def metadata_path(self) -> Path:
        return self.root / f"metadata_{self.split}.tsv"

    def _candidates(self, code: str) -> list[Path]:
        folder = self.root / self.split
        return [
            folder / f"{code}.{self.split}",
            folder / f"{self.split}.{code}",
            folder / f"{code}.parquet",
            folder / f"{code}.jsonl",
        ]

    def where(self, codes: list[str]) -> str:
        return ", ".join(str(p) for c in codes for p in self._candidates(c))

    def read(self, codes: list[str]) -> list[str] | None:
        found = self.read_file(codes)
        return None if found is None else found.texts

    def read_file(self, codes: list[str]) -> FloresFile | None:
        for code in codes:
            for path in self._candidates(code):
                if path.is_dir():
                    raise DataError(f"{path} is a directory, not a FLORES file")
                if path.exists():  # anything but a regular file is refused by its reader
                    if path.suffix in _TABLE_SUFFIXES:
                        rows, columns = read_table(path, str(path))
                        return _rows_to_file(rows, columns, str(path), self.split)
                    return self._text_file(path)
        return None

    def _text_file(self, path: Path) -> FloresFile:
        texts = _read_lines(path)
        if not self.metadata_path.is_file():
            return FloresFile(str(path), tuple(FloresLine(t) for t in texts))
        if self._metadata is None:
            self._metadata = read_metadata_tsv(self.metadata_path)
        if len(self._metadata) != len(texts):
            raise DataError(f"{self.metadata_path} has {len(self._metadata)} rows but {path} has "
                            f"{len(texts)} lines: they do not describe the same split")
        lines = tuple(FloresLine(t, d, p) for t, (d, p) in zip(texts, self._metadata, strict=True))
        return FloresFile(str(path), lines, str(self.metadata_path))


@dataclass
class HubFlores:
    """FLORES+ on the Hugging Face Hub (gated: needs an accepted licence and ``HF_TOKEN``).

    ``layout``: ``parquet`` (v2.x: ``<split>/<code>.parquet``), ``jsonl`` (v4.x:
    ``<split>/<code>.jsonl``) or ``auto`` (the first that exists; then that one for every
    language). Pin ``revision`` (a commit or a tag) so the same files are read every time; the
    commit actually read is kept in ``commit`` once a file has been downloaded.
    """

    repo_id: str = "openlanguagedata/flores_plus"
    revision: str | None = None
    split: str = "dev"
    token: str | None = None
    cache_dir: str | None = None
    layout: HubLayout = "auto"
    commit: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise DataError(f"unknown FLORES split {self.split!r} (expected dev or devtest)")
        self.description = f"FLORES+ from the Hub ({self.repo_id}@{self.revision or 'main'})" + (
            f" ({self.split})" if self.split != "dev" else "")
        self._found_layout: str | None = None if self.layout == "auto" else self.layout

    def _formats(self) -> list[str]:
        return [self._found_layout] if self._found_layout else ["parquet", "jsonl"]

    def where(self, codes: list[str]) -> str:
        return ", ".join(f"{self.repo_id}:{self.split}/{c}.{fmt}"
                         for c in codes for fmt in self._formats())

    def read(self, codes: list[str]) -> list[str] | None:
        found = self.read_file(codes)
        return None if found is None else found.texts

    def read_file(self, codes: list[str]) -> FloresFile | None:
        for code in codes:
            for fmt in self._formats():
                filename = f"{self.split}/{code}.{fmt}"
                path = self._download(filename)
                if path is None:
                    continue
                self._found_layout = fmt
                where = f"{self.repo_id}:{filename}@{self.commit or self.revision or 'main'}"
                rows, columns = read_table(path, where)
                return _rows_to_file(rows, columns, where, self.split)
        if self._found_layout is None:
            self._check_layout()
        return None

    def _token(self) -> str | None:
        return register(self.token) or secret_from_env("HF_TOKEN")

    def _check_layout(self) -> None:
        """Nothing found in either layout: stop unless the split folder is in a known layout."""
        from huggingface_hub import HfApi
        from huggingface_hub.errors import HfHubHTTPError

        try:
            names = sorted(entry.path for entry in HfApi().list_repo_tree(
                self.repo_id, self.split, repo_type="dataset", revision=self.revision,
                token=self._token()))
        except HfHubHTTPError:
            names = []  # no such folder (or no listing): judged by the files' absence below
        if any(Path(name).suffix in _TABLE_SUFFIXES for name in names):
            return  # a FLORES+ layout, only without this language
        shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "") if names else "nothing"
        raise DataError(
            f"{self.repo_id}@{self.revision or 'main'}: FLORES+ layout not recognised: expected "
            f"{self.split}/<code>.parquet (v2.x) or {self.split}/<code>.jsonl (v4.x); "
            f"{self.split}/ holds {shown}"
        )

    def _download(self, filename: str) -> Path | None:
        """The cached file, or None when the Hub answers that it does not exist."""
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RemoteEntryNotFoundError,
            RepositoryNotFoundError,
        )

        try:
            path = Path(hf_hub_download(
                self.repo_id,
                filename,
                repo_type="dataset",
                revision=self.revision,
                token=self._token(),
                cache_dir=self.cache_dir,
            ))
        except RemoteEntryNotFoundError:
            return None  # the Hub answered: this file does not exist
        except LocalEntryNotFoundError as error:
            raise DataError(
                f"cannot download {filename} from {self.repo_id} and it is "
                f"not in the local cache (network or server error: {error})"
            ) from error
        except GatedRepoError as error:
            raise DataError(
                f"{self.repo_id} is gated: accept its terms on the Hub and set HF_TOKEN "
                f"({error.__class__.__name__})"
            ) from error
        except RepositoryNotFoundError as error:
            raise DataError(
                f"dataset {self.repo_id} not found or not accessible (set HF_TOKEN?)"
            ) from error
        except HfHubHTTPError as error:
            raise DataError(f"the Hub refused {self.repo_id}/{filename}: {error}") from error
        if "snapshots" in path.parts:  # <cache>/datasets--x--y/snapshots/<commit>/<filename>
            self.commit = path.parts[path.parts.index("snapshots") + 1]
        return path


def read_originals(
    reader: FloresReader, languages: list[str], instance_ids: list[int],
    origins: dict[int, list[str]] | None = None,
) -> tuple[dict[str, dict[int, str]], dict[int, str], dict[str, str]]:
    """Original sentences of ``instance_ids`` for each language and for English.

    Returns (sources by language, English by id, reason by missing language). English missing is
    an error: no test set can be built without its references. ``origins`` (id -> where each id
    was read, ``file:line``) lets an id outside the FLORES files be reported where it was written.
    """
    english_file = reader.read_file([ENGLISH])
    if english_file is None:
        raise DataError(f"no English FLORES file found (looked in {reader.where([ENGLISH])})")
    english_lines = english_file.texts
    bad = [i for i in instance_ids if not 0 <= i < len(english_lines)]
    if bad and origins:
        places = "; ".join(f"{', '.join(origins.get(i, ['?']))}: id {i}" for i in bad[:10])
        raise DataError(
            f"{len(bad)} instance id(s) are outside the {len(english_lines)} sentences of FLORES "
            f"({reader.description}; ids are 0-based line indices): {places}"
        )
    _check_ids(english_lines, instance_ids, english_file.where, reader)
    english = {i: english_lines[i] for i in instance_ids}
    sources: dict[str, dict[int, str]] = {}
    missing: dict[str, str] = {}
    for language in languages:
        codes = file_codes(language)
        found = reader.read_file(codes)
        if found is None:
            legacy = source_languages()[language][0].flores200_code
            why = "" if legacy else f" ({language} is not part of FLORES-200; it is in FLORES+ 2.0)"
            missing[language] = (
                f"no FLORES file for {language}{why}; looked in {reader.where(codes)}"
            )
            continue
        lines = found.texts
        if len(lines) != len(english_lines):
            raise DataError(
                f"FLORES {language} ({found.where}) has {len(lines)} lines but English "
                f"({english_file.where}) has {len(english_lines)}: the files are not aligned"
            )
        _check_ids(lines, instance_ids, found.where, reader)
        sources[language] = {i: lines[i] for i in instance_ids}
    return sources, english, missing


def _check_ids(lines: list[str], ids: list[int], where: str, reader: FloresReader) -> None:
    """``where``: the file the lines came from, named in the messages."""
    bad = [i for i in ids if not 0 <= i < len(lines)]
    if bad:
        raise DataError(
            f"instance ids {bad[:10]} are outside the {len(lines)} lines of {where} "
            f"({reader.description})"
        )
    empty = [i for i in ids if not lines[i]]
    if empty:
        raise DataError(f"{where} has empty lines at instance ids {empty[:10]} "
                        "(line numbers are ids + 1)")

