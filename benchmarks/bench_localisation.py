"""How fast the demo localiser drafts, and whether its drafts are the shipped ones.

    python benchmarks/bench_localisation.py                       # the six demo locales
    python benchmarks/bench_localisation.py --locale deu_Latn_Germany --threads 1

Localises the demo's selected instances with the demo settings (``demo_localisation()``: Gemma 3
270M base through the transformers engine, the few-shot prompt) into a fresh cache, so every
draft is generated, and reports seconds, drafts per second and generated tokens per second
(tokens as the engine counts them), per locale and in all. It then compares each locale's drafts
hash with the shipped demo annotation file's: ``same`` means this machine, these libraries and
this thread count reproduce the shipped drafts. ``--threads`` sets torch's CPU threads (default:
torch's own choice). Runs through the engine interface, so an engine or decoding option changed
in ``demo_localisation()`` is measured as it is.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from cultivar_assets.construction.build import build_selection
from cultivar_assets.construction.config import demo_annotations_dir, demo_construction
from cultivar_assets.construction.demo_annotations import environment
from cultivar_assets.construction.localisation import (
    localisation_inputs,
    localise,
    make_localiser,
    shared_engines,
)
from cultivar_assets.construction.selection_store import read_selected_sources
from cultivar_assets.store.database import Store


def shipped_hashes() -> dict[str, str]:
    hashes = {}
    for path in demo_annotations_dir().glob("*.annotations.json"):
        task = json.loads(path.read_text("utf-8"))["task"]
        hashes[task["locale"]] = task["drafts_hash"]
    return hashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locale", action="append", help="a demo locale (repeatable)")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    construction = demo_construction()
    config = construction.localisation
    locales = args.locale or config.locale_keys()
    shipped = shipped_hashes()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        store = Store(Path(work) / "bench.duckdb")
        build_selection(construction.source, construction.selection, store, show_bar=False)
        inputs = localisation_inputs(read_selected_sources(store), locales)
        with shared_engines() as pool:
            loaded = time.perf_counter()
            pool.get(make_localiser(config))
            load_seconds = time.perf_counter() - loaded
            for locale in locales:
                started = time.perf_counter()
                run = localise({locale: inputs[locale]}, config, cache_dir=Path(work) / "cache",
                               show_bar=False)
                seconds = time.perf_counter() - started
                drafts = run.locales[locale]
                totals = drafts.totals()
                rows.append({
                    "locale": locale, "drafts": totals["n_drafts"], "seconds": round(seconds, 1),
                    "drafts_per_second": round(totals["n_drafts"] / seconds, 3),
                    "completion_tokens": totals["completion_tokens"],
                    "tokens_per_second": round((totals["completion_tokens"] or 0) / seconds, 1),
                    "flagged": totals["n_flagged"], "unchanged": totals["n_unchanged"],
                    "same_as_shipped": shipped.get(locale) == drafts.drafts_hash,
                })
                print(json.dumps(rows[-1]), flush=True)
    seconds = sum(r["seconds"] for r in rows)
    drafts = sum(r["drafts"] for r in rows)
    summary = {"model_load_seconds": round(load_seconds, 1), "seconds": round(seconds, 1),
               "drafts": drafts, "drafts_per_second": round(drafts / seconds, 3),
               "all_same_as_shipped": all(r["same_as_shipped"] for r in rows),
               "environment": environment(), "locales": rows}
    print(json.dumps({k: v for k, v in summary.items() if k != "locales"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1), "utf-8")


if __name__ == "__main__":
    main()
