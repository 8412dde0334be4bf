"""Helpers for the data and store tests: tiny made-up Cultivar datasets and FLORES directories.

Every sentence written here is invented for the tests; nothing is copied from FLORES or Cultivar.
The real FLORES-200 release is only read in place, from ``../shared/data/flores200``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
SHARED_FLORES = SHARED / "data" / "flores200"
TABLE1 = SHARED / "reference" / "paper-tables" / "table1_annotation.csv"

# The 27 locale keys of the paper (Table 1), for when the transcribed table is not available.
PAPER_LOCALES = [
    "acm_Arab_Iraq", "apc_Arab_Syria", "ben_Beng_India", "bul_Cyrl_Bulgaria", "cat_Latn_Spain",
    "ces_Latn_Czechia", "cmn_Hans_China", "cmn_Hans_Singapore", "cmn_Hans_UK", "cmn_Hans_US",
    "deu_Latn_Germany", "deu_Latn_Switzerland", "fil_Latn_Philippines", "gom_Deva_India",
    "hin_Deva_Germany", "hin_Deva_India", "hin_Deva_US", "jpn_Jpan_Japan", "khk_Cyrl_Mongolia",
    "plt_Latn_Madagascar", "pol_Latn_Poland", "rus_Cyrl_Russia", "slk_Latn_Slovakia",
    "spa_Latn_Spain", "tel_Telu_India", "tur_Latn_Turkey", "yor_Latn_Nigeria",
]


def shared_flores_dir() -> Path:
    """The real FLORES-200 release beside the repository, or skip the test when it is absent."""
    if not (SHARED_FLORES / "dev" / "eng_Latn.dev").is_file():
        pytest.skip(f"FLORES-200 not found at {SHARED_FLORES}")
    return SHARED_FLORES


def original_source(language: str, instance_id: int) -> str:
    """A made-up 'original FLORES' sentence, the same in every locale of ``language``."""
    return f"[{language}] original sentence {instance_id}"


def original_english(instance_id: int) -> str:
    return f"Original English sentence number {instance_id}."


def cultivar_rows(
    locale: str, ids: list[int], *, originals: bool = True, with_locale: bool = True
) -> list[dict]:
    """Rows of a made-up Cultivar locale file in the project's published format."""
    language = "_".join(locale.split("_")[:2])
    rows = []
    for i in ids:
        row: dict = {"id": i}
        if with_locale:
            row["locale"] = locale
        if originals:
            row["source_original"] = original_source(language, i)
            row["english_original"] = original_english(i)
        row["source_localised"] = f"[{locale}] localised sentence {i}"
        row["english_localised"] = f"Localised English for {locale}, number {i}."
        rows.append(row)
    return rows


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def parquet_bytes(columns: dict[str, list]) -> bytes:
    """A parquet file with ``columns``, as bytes (for the Hub test server)."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue().to_pybytes()


def fake_english(n: int) -> list[str]:
    return [f"Made-up English dev line {i}." for i in range(n)]


def fake_source(code: str, n: int) -> list[str]:
    return [f"{code} made-up dev line {i}" for i in range(n)]


def make_flores_dir(root: Path, files: dict[str, list[str]], split: str = "dev") -> Path:
    """A fake FLORES release: ``<root>/<split>/<code>.<split>``, one line per sentence."""
    folder = root / split
    folder.mkdir(parents=True, exist_ok=True)
    for code, lines in files.items():
        (folder / f"{code}.{split}").write_text("".join(line + "\n" for line in lines), "utf-8")
    return root
