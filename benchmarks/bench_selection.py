"""Benchmark: spaCy NER and the whole selection step over the 997 FLORES dev sentences.

Reads the FLORES-200 release beside the repository (``../shared/data/flores200``, or ``--flores``),
then times, separately: loading the spaCy pipeline, NER over every English dev sentence
(``nlp.pipe``, the configured batch size) and the whole ``build_selection`` step (source benchmark,
NER, rules, the choice, the review page and the DuckDB records, in a temporary folder). Prints the
counts of the selection report. Not a test: run it by hand (on the 2-core development machine)
and record the figures in docs/performance.md.

    python benchmarks/bench_selection.py [--flores DIR] [--batch-size 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cultivar_assets.construction.build import build_selection
from cultivar_assets.construction.config import SelectionConfig
from cultivar_assets.construction.selection.entities import SpacyRecogniser
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig, load_source_benchmark
from cultivar_assets.store.database import Store

DEFAULT_FLORES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "flores200"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flores", default=str(DEFAULT_FLORES))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (Path(args.flores) / "dev" / "eng_Latn.dev").is_file():
        print(f"no FLORES-200 release at {args.flores}", file=sys.stderr)
        return 2
    source = SourceBenchmarkConfig(kind="flores", path=args.flores)
    config = SelectionConfig(batch_size=args.batch_size)
    english = [inst.english for inst in load_source_benchmark(source).instances]

    started = time.perf_counter()
    recogniser = SpacyRecogniser(config.pipeline, config.batch_size)
    load_seconds = time.perf_counter() - started
    ner_seconds = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        recogniser.recognise(english, show_bar=False)
        ner_seconds.append(time.perf_counter() - started)

    with tempfile.TemporaryDirectory() as folder:
        os.environ["CULTIVAR_HOME"] = folder
        started = time.perf_counter()
        build = build_selection(source, config.model_copy(update={"review_dir": f"{folder}/r"}),
                                Store(Path(folder) / "bench.duckdb"), show_bar=False)
        build_seconds = time.perf_counter() - started
        page_kb = build.review_page.stat().st_size / 1024

    info = recogniser.info
    print(f"spaCy {info.spacy_version}, {info.pipeline} {info.pipeline_version}, "
          f"components {', '.join(info.components)}, batch size {config.batch_size}, "
          f"{os.cpu_count()} CPUs")
    print(f"load pipeline: {load_seconds:.2f} s")
    print(f"NER over {len(english)} sentences: median {statistics.median(ner_seconds):.2f} s "
          f"of {args.repeat} ({len(english) / statistics.median(ner_seconds):.0f} sentences/s)")
    print(f"whole selection step (load, NER, rules, page, DuckDB): {build_seconds:.2f} s; "
          f"review page {page_kb:.0f} KB")
    for key, value in build.result.counts().items():
        print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
