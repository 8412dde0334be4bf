"""Readers for the original FLORES sentences (dev split), from a local release or the Hub.

A FLORES *dev file* has one sentence per line; the 0-based line index is the instance id. Accepted
layouts of a local directory (``<code>`` is tried as the FLORES+ code, then the FLORES-200 name):

- ``dev/<code>.dev`` (the FLORES-200 / FLORES+ v1 release),
- ``dev/dev.<code>`` (older FLORES+ text releases),
- ``dev/<code>.parquet`` (FLORES+ on the Hugging Face Hub: rows sorted by ``id``, text in ``text``).

Lines are stripped of surrounding whitespace (a few hundred FLORES lines carry stray spaces).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow.parquet as pq

from cultivar_assets.data.locales import source_languages
from cultivar_assets.data.testsets import DataError
from cultivar_assets.secrets import register, secret_from_env

ENGLISH = "eng_Latn"


class FloresReader(Protocol):
    description: str

    def read(self, codes: list[str]) -> list[str] | None:
        """The dev sentences of the first code that exists; None when none does."""
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


def _read_parquet_text(path: Path) -> list[str]:
    table = pq.read_table(path)
    if "text" not in table.column_names:
        raise DataError(f"{path}: no 'text' column (columns: {', '.join(table.column_names)})")
    rows = table.to_pylist()
    if "id" in table.column_names:
        rows.sort(key=lambda row: row["id"])
    nulls = [i for i, row in enumerate(rows) if not isinstance(row["text"], str)]
    if nulls:
        raise DataError(f"{path}: rows {nulls[:10]} have no text")
    return [row["text"].strip() for row in rows]


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read FLORES file {path}: {error}") from error
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return [line.strip() for line in lines]


@dataclass
class LocalFlores:
    """A FLORES-200 or FLORES+ release unpacked in ``root``."""

    root: Path
    split: str = "dev"

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if not self.root.is_dir():
            raise DataError(f"FLORES directory {self.root} does not exist")
        self.description = f"FLORES files in {self.root}"

    def _candidates(self, code: str) -> list[Path]:
        folder = self.root / self.split
        return [
            folder / f"{code}.{self.split}",
            folder / f"{self.split}.{code}",
            folder / f"{code}.parquet",
        ]

    def where(self, codes: list[str]) -> str:
        return ", ".join(str(p) for c in codes for p in self._candidates(c))

    def read(self, codes: list[str]) -> list[str] | None:
        for code in codes:
            for path in self._candidates(code):
                if path.is_file():
                    if path.suffix == ".parquet":
                        return _read_parquet_text(path)
                    return _read_lines(path)
        return None


@dataclass
class HubFlores:
    """FLORES+ on the Hugging Face Hub (gated: needs an accepted licence and ``HF_TOKEN``)."""

    repo_id: str = "openlanguagedata/flores_plus"
    revision: str | None = None
    split: str = "dev"
    token: str | None = None
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        self.description = f"FLORES+ from the Hub ({self.repo_id}@{self.revision or 'main'})"

    def where(self, codes: list[str]) -> str:
        return ", ".join(f"{self.repo_id}:{self.split}/{c}.parquet" for c in codes)

    def read(self, codes: list[str]) -> list[str] | None:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RemoteEntryNotFoundError,
            RepositoryNotFoundError,
        )

        for code in codes:
            try:
                path = hf_hub_download(
                    self.repo_id,
                    f"{self.split}/{code}.parquet",
                    repo_type="dataset",
                    revision=self.revision,
                    token=register(self.token) or secret_from_env("HF_TOKEN"),
                    cache_dir=self.cache_dir,
                )
            except RemoteEntryNotFoundError:
                continue  # the Hub answered: this file does not exist
            except LocalEntryNotFoundError as error:
                raise DataError(
                    f"cannot download {self.split}/{code}.parquet from {self.repo_id} and it is "
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
                raise DataError(f"the Hub refused {self.repo_id}/{self.split}/{code}.parquet: "
                                f"{error}") from error
            return _read_parquet_text(Path(path))
        return None


def read_originals(
    reader: FloresReader, languages: list[str], instance_ids: list[int]
) -> tuple[dict[str, dict[int, str]], dict[int, str], dict[str, str]]:
    """Original sentences of ``instance_ids`` for each language and for English.

    Returns (sources by language, English by id, reason by missing language). English missing is
    an error: no test set can be built without its references.
    """
    english_lines = reader.read([ENGLISH])
    if english_lines is None:
        raise DataError(f"no English FLORES file found (looked in {reader.where([ENGLISH])})")
    _check_ids(english_lines, instance_ids, ENGLISH, reader)
    english = {i: english_lines[i] for i in instance_ids}
    sources: dict[str, dict[int, str]] = {}
    missing: dict[str, str] = {}
    for language in languages:
        codes = file_codes(language)
        lines = reader.read(codes)
        if lines is None:
            legacy = source_languages()[language][0].flores200_code
            why = "" if legacy else f" ({language} is not part of FLORES-200; it is in FLORES+ 2.0)"
            missing[language] = (
                f"no FLORES file for {language}{why}; looked in {reader.where(codes)}"
            )
            continue
        if len(lines) != len(english_lines):
            raise DataError(
                f"FLORES {language} has {len(lines)} lines but English has {len(english_lines)}: "
                "the files are not aligned"
            )
        _check_ids(lines, instance_ids, language, reader)
        sources[language] = {i: lines[i] for i in instance_ids}
    return sources, english, missing


def _check_ids(lines: list[str], ids: list[int], code: str, reader: FloresReader) -> None:
    bad = [i for i in ids if not 0 <= i < len(lines)]
    if bad:
        raise DataError(
            f"instance ids {bad[:10]} are outside the {len(lines)} lines of FLORES {code} "
            f"({reader.description})"
        )
    empty = [i for i in ids if not lines[i]]
    if empty:
        raise DataError(f"FLORES {code} has empty lines at instance ids {empty[:10]}")
