"""Benchmark: ingesting the slowest annotation file the ingest limits accept.

Builds a post-editing task of ``--items`` drafts (default 200, the paper's n) whose texts are
``--draft-chars`` characters long (default 500: the longest FLORES-200 dev/devtest sentence in
the paper's 21 source languages and English has 479), then the file that costs the ingest most
within the limits (``construction/annotation/file.py`` ``IngestLimits``; default 20 MB per
file, ``--max-text-chars`` per text, default the ingest's own): every item edited on both
sides, each final text exactly at the per-text limit and made of the draft's own tokens in a
shuffled order, so that the diff (Myers, ``text_edits.py``) finds many short matches and the
most work (of the adversarial texts tried: disjoint, same alphabet, small alphabet, reversed,
shuffled repetitions, this was the slowest). The source side is a character-mode locale
(``cmn_Hans_China``: every character a token), the English side word mode with one-character
tokens (letters between punctuation). It then ingests the file into a fresh DuckDB
(``annotation.store.ingest_annotation_file``: read, validate, count edits, write) and prints
the time of each part, and the time two refused files take: one over the file-size limit
(a sparse file of 50 MB) and one at 20 MB whose last final text holds the padding.

Not a test: run it by hand on an otherwise idle machine and record the figures (the CPU
seconds, summed over the threads, say how much work it was when the machine was not idle).

    python benchmarks/bench_ingest.py
    python benchmarks/bench_ingest.py --items 200 --draft-chars 2000   # drafts at the limit too
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from annotation_helpers import PROMPT_HASH, annotation_document

from cultivar_assets.construction.annotation.file import (
    AnnotationFileError,
    IngestLimits,
    read_annotation_file,
)
from cultivar_assets.construction.annotation.store import ingest_annotation_file
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.construction.localisation.drafts import Draft
from cultivar_assets.store.database import Store
from cultivar_assets.textdiff import token_texts

LOCALE = "cmn_Hans_China"
HAN = [chr(0x4E00 + i) for i in range(3000)]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
PUNCTUATION = ".,;:!?-"


def chinese(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(HAN) for _ in range(n))


def english(rng: random.Random, n: int) -> str:
    """``n`` characters, each its own token in word mode (a letter, then punctuation, ...)."""
    return "".join(rng.choice(LETTERS if i % 2 == 0 else PUNCTUATION) for i in range(n))


def shuffled_repeats(rng: random.Random, text: str, n: int) -> str:
    """``n`` characters: the characters of ``text`` in shuffled orders, one after another."""
    chars: list[str] = []
    while len(chars) < n:
        chars += rng.sample(list(text), len(text))
    return "".join(chars[:n])


def build_task(rng: random.Random, items: int, draft_chars: int) -> AnnotationTask:
    drafts = []
    for iid in range(items):
        source_original, english_original = chinese(rng, 40), english(rng, 40)
        source_draft, english_draft = chinese(rng, draft_chars), english(rng, draft_chars)
        drafts.append(Draft(
            locale=LOCALE, instance_id=iid, source_original=source_original,
            english_original=english_original, source_draft=source_draft,
            english_draft=english_draft,
            raw_answer=f"Source: {source_draft}\nEnglish: {english_draft}", flagged=False,
            flag_reason=None, prompt_hash=PROMPT_HASH))
    return AnnotationTask.from_drafts(drafts)


def timed(function, *args, **kwargs):
    """The result, the wall-clock seconds and the CPU seconds (all threads) of one call."""
    started, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return result, (time.perf_counter() - started, time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--draft-chars", type=int, default=500)
    parser.add_argument("--max-text-chars", type=int, default=IngestLimits().max_text_chars)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    limits = IngestLimits(max_text_chars=args.max_text_chars)
    rng = random.Random(args.seed)
    task = build_task(rng, args.items, args.draft_chars)
    n = limits.max_text_chars
    finals = {d.instance_id: (shuffled_repeats(rng, d.source_draft, n),
                              shuffled_repeats(rng, d.english_draft, n)) for d in task.drafts}
    document = annotation_document(task, finals, annotator="bench")
    tokens = sum(len(token_texts(s, "char")) + len(token_texts(e, "word"))
                 for s, e in finals.values())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{task.task_id}.annotations.json"
        path.write_text(json.dumps(document, ensure_ascii=False), "utf-8")
        size = path.stat().st_size
        file, validate = timed(read_annotation_file, path, task, limits=limits)
        store = Store(Path(tmp) / "bench.duckdb")
        _, ingest = timed(ingest_annotation_file, store, path, task, limits=limits)
        rows = len(store.query("locale_annotations", locale=LOCALE))

        sparse = Path(tmp) / "sparse.json"
        with sparse.open("wb") as handle:
            handle.truncate(50_000_000)
        padded = json.loads(json.dumps(document))
        room = limits.max_file_bytes - size - 1000
        padded["items"][-1]["final"]["english"] += " x" * (room // 2)
        padded_path = Path(tmp) / "padded.json"
        padded_path.write_text(json.dumps(padded, ensure_ascii=False), "utf-8")
        refused = {}
        for name, bad in (("50 MB (sparse) file", sparse), ("20 MB, one padded text",
                                                              padded_path)):
            started, cpu = time.perf_counter(), time.process_time()
            try:
                ingest_annotation_file(store, bad, task, limits=limits)
                raise SystemExit(f"{name} was accepted")
            except AnnotationFileError:
                refused[f"{name} ({bad.stat().st_size / 1e6:.1f} MB), refused"] = (
                    time.perf_counter() - started, time.process_time() - cpu)
    edits = sum(a.source_edits + a.english_edits for a in file.annotations)
    print(f"task: {args.items} items, drafts of {args.draft_chars} characters; limits: "
          f"{limits.max_file_bytes:,} bytes per file, {n:,} characters per text; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"the file: {size / 1e6:.2f} MB, {2 * args.items} final texts of {n:,} characters "
          f"({tokens:,} tokens), {edits:,} edits counted")
    print("| step | wall s | CPU s (all threads) |")
    print("|---|---|---|")
    print(f"| read and validate (edits counted) | {validate[0]:.2f} | {validate[1]:.2f} |")
    print(f"| ingest: read, validate, write ({rows} rows) | {ingest[0]:.2f} | {ingest[1]:.2f} |")
    for name, (wall, cpu) in refused.items():
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
