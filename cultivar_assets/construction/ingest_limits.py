"""How large an annotation file and each of its strings may be when it is ingested (the
settings ``construction.annotation.max_file_mb`` and ``max_text_chars``; read by
:mod:`cultivar_assets.construction.annotation.file`)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_FILE_MB = 20
DEFAULT_MAX_TEXT_CHARS = 1000


@dataclass(frozen=True)
class IngestLimits:
    """How large an annotation file and each of its strings may be (ours; the settings
    ``construction.annotation.max_file_mb`` and ``max_text_chars`` set them).

    - ``max_file_bytes`` (default 20 MB, 20,000,000 bytes): looked up before the file is read,
      so a huge file costs nothing; the issue that asked for the limit named 20 MB.
    - ``max_text_chars`` (default 1,000 characters, code points): every string of the file, the
      six texts of each item included, checked before the schema and before any edit is
      counted. Generous for any real sentence: the longest FLORES-200 dev or devtest sentence
      in the paper's 21 source languages and English has 479 characters (``plt_Latn``
      devtest; the most tokens, 139, ``jpn_Jpan``); 1,000 is twice that. It bounds the edit
      counting, whose diff (Myers's, ``text_edits.py``) is quadratic in the worst case:
      ``benchmarks/bench_ingest.py`` ingests the slowest file these limits accept
      (docs/performance.md has its figures, with the limit at 1,000 and at 2,000).
    """

    max_file_bytes: int = DEFAULT_MAX_FILE_MB * 1_000_000
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS

    def __post_init__(self) -> None:
        if self.max_file_bytes < 1 or self.max_text_chars < 1:
            raise ValueError(f"ingest limits must be positive: {self}")
