"""Benchmark: ``evaluation.aggregate`` (what the ``leaderboard`` asset runs) at 32 to 1,000 models.

A synthetic DuckDB store per size holds what ``aggregate`` reads: 27 locales + 21 languages = 48
test sets of 200 instances per model, BLEU and chrF per-segment statistics (the synthetic
statistics of ``bench_bootstrap.py``: counts that obey real statistics' constraints, each model
with its own quality), their corpus scores, and word-recall counts. Each aggregation runs in a
child process, which reports its wall seconds, user + system CPU seconds
(``resource.getrusage(RUSAGE_SELF)``) and peak resident memory (its high-water mark, the child
alone): the aggregation from nothing, the same keeping every model's replicates
(``aggregate(..., replicates_dir=...)``), then one more model is added to the store and the
aggregation timed again on what was kept (the added model's replicates computed, the others'
taken from the pack; the ranks updated from the kept rank states; the added model's per-model
rows and every cross-model row written). Each line ends with the load average (1 minute) when
the child finished: other processes on the machine slow the wall seconds, not the CPU seconds.

Not a test: run it by hand and record the figures in docs/performance.md. Targets at 1,000
models with 1,000 replicates: the whole aggregation ≤ 60 s and ≤ 4 GB peak resident memory.

    python benchmarks/bench_aggregate.py --models 32 1000 --workdir /tmp/agg-bench
    python benchmarks/bench_aggregate.py --models 100 --replicates 200 --workdir DIR

The stores are kept in ``--workdir`` (``aggregate-<models>.duckdb``; filling 1,000 models takes
a few minutes and is not timed) and reused by later runs with the same arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bootstrap import synthetic_segment_stats

from cultivar_assets.data.locales import (
    all_locales,
    cultivar_test_set_name,
    flores_test_set_name,
)
from cultivar_assets.metrics.registry import metric_registry
from cultivar_assets.metrics.segment_stats import RECALL_COLUMNS

N_INSTANCES = 200
SIGNATURE = {"bleu": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
             "chrf": "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"}
FILL_BLOCK = 50  # models written per transaction while filling


def model_name(m: int) -> str:
    return f"model-{m:04d}"


def test_set_names() -> list[str]:
    locales = all_locales()
    languages = list(dict.fromkeys(loc.source_language for loc in locales))
    return ([flores_test_set_name(lang) for lang in languages]
            + [cultivar_test_set_name(loc.key) for loc in locales])


def model_tables(m: int, n_models: int, fingerprint: str, seed: int = 7) -> dict[str, pa.Table]:
    """Scores, per-segment statistics and word recall of synthetic model ``m`` as Arrow tables
    (``raw.scores``, ``raw.segment_stats``, ``raw.word_recall`` columns)."""
    rng = np.random.default_rng([seed, m])
    quality = 0.25 + 0.5 * m / max(n_models - 1, 1)
    names = test_set_names()
    ids = np.arange(N_INSTANCES) * 3 + 1
    bleu, chrf = synthetic_segment_stats(rng, N_INSTANCES * len(names), quality)
    model = model_name(m)
    registry = metric_registry()
    score_rows, stats_columns = [], {"model_id": [], "test_set": [], "segment_id": [],
                                     "metric": [], "stats": []}
    for metric, values in (("bleu", bleu), ("chrf", chrf)):
        per_set = values.reshape(len(names), N_INSTANCES, values.shape[1])
        for name, rows in zip(names, per_set, strict=True):
            score_rows.append({
                "model_id": model, "test_set": name, "metric": metric,
                "score": float(registry.get(metric).score_from_stats(rows.sum(axis=0))),
                "signature": SIGNATURE[metric], "n_segments": N_INSTANCES,
                "dataset_fingerprint": fingerprint, "tokenizer_sha256": None})
        width = values.shape[1]
        stats_columns["model_id"].append(np.full(len(values), model, dtype=object))
        stats_columns["test_set"].append(np.repeat(np.array(names, dtype=object), N_INSTANCES))
        stats_columns["segment_id"].append(np.tile(ids, len(names)))
        stats_columns["metric"].append(np.full(len(values), metric, dtype=object))
        stats_columns["stats"].append(pa.ListArray.from_arrays(
            np.arange(len(values) + 1, dtype=np.int32) * width,
            pa.array(values.astype(np.int64).ravel())))
    stats = pa.table({
        "model_id": pa.array(np.concatenate(stats_columns["model_id"]), pa.string()),
        "test_set": pa.array(np.concatenate(stats_columns["test_set"]), pa.string()),
        "segment_id": pa.array(np.concatenate(stats_columns["segment_id"]).astype(np.int32)),
        "metric": pa.array(np.concatenate(stats_columns["metric"]), pa.string()),
        "stats": pa.concat_arrays(stats_columns["stats"])})
    locales = [loc.key for loc in all_locales()]
    removed = rng.integers(0, 6, size=(len(locales), N_INSTANCES))
    introduced = rng.integers(0, 6, size=(len(locales), N_INSTANCES))
    counts = np.stack([removed, rng.binomial(removed, 0.01), introduced,
                       rng.binomial(introduced, 0.2)], axis=-1).reshape(-1, 4)
    recall = pa.table({
        "model_id": pa.array([model] * len(counts), pa.string()),
        "locale": pa.array(np.repeat(np.array(locales, dtype=object), N_INSTANCES), pa.string()),
        "segment_id": pa.array(np.tile(ids, len(locales)).astype(np.int32)),
        **{c: pa.array(counts[:, i].astype(np.int32)) for i, c in enumerate(RECALL_COLUMNS)}})
    return {"scores": pa.Table.from_pylist(score_rows), "segment_stats": stats,
            "word_recall": recall}


def add_models(store, models: range, n_models: int, fingerprint: str) -> None:
    from cultivar_assets.store.database import WriteBlock

    for start in range(models.start, models.stop, FILL_BLOCK):
        block = [model_tables(m, n_models, fingerprint)
                 for m in range(start, min(start + FILL_BLOCK, models.stop))]
        entries = [{"model_id": model_name(m), "hf_id": None, "revision": None, "weights": "hub",
                    "type": "LLM", "family": "Synthetic", "params_total_b": None,
                    "params_active_b": None, "engine": "none", "prompt_style": "none",
                    "engine_options": "{}"}
                   for m in range(start, min(start + FILL_BLOCK, models.stop))]
        store.write([WriteBlock("insert_models", rows=entries)] + [
            WriteBlock(f"insert_{name}", rows=pa.concat_tables([t[name] for t in block]))
            for name in ("scores", "segment_stats", "word_recall")] + [
            WriteBlock("record_statistics", {"model_id": entry["model_id"]})  # as the loader
            for entry in entries])


def filled_store(path: Path, n_models: int):
    """A store with ``n_models`` synthetic models (reused when ``path`` exists)."""
    from cultivar_assets.data.testsets import BenchmarkData, Instance
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.records import dataset_fingerprint, write_dataset

    if path.exists():
        return Store(path)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    store = Store(partial)
    ids = np.arange(N_INSTANCES) * 3 + 1
    locales = [loc.key for loc in all_locales()]
    data = BenchmarkData("synthetic aggregation benchmark", False, {
        loc: [Instance(loc, int(i), f"source {i}", f"reference {i}", f"original {i}",
                       f"original reference {i}") for i in ids] for loc in locales})
    write_dataset(store, data)
    started = time.perf_counter()
    add_models(store, range(n_models), n_models, dataset_fingerprint(store))
    print(f"filled {n_models} models in {time.perf_counter() - started:.0f} s", flush=True)
    del store
    partial.rename(path)
    return Store(path)


def child(args) -> None:
    """One aggregation in this process; prints its figures as one JSON line."""
    from cultivar_assets.evaluation import aggregate
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.store.database import Store

    store = Store(args.child)
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=args.replicates)
    kept = Path(args.replicates_dir) if args.replicates_dir else None
    started = time.perf_counter()
    result = aggregate(store, config=config, replicates_dir=kept)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                      "peak_mb": _peak_mb(usage), "models": len(result.models),
                      "ranks": len(result.tables.ranks)}), flush=True)


def _peak_mb(usage) -> int:
    """This process's peak resident memory (MB): its memory's high-water mark, which starts
    afresh at exec (``ru_maxrss`` keeps the parent's peak, the filling's, across fork and
    exec)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return round(usage.ru_maxrss / 1024)
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return round(int(line.split()[1]) / 1024)


def run_child(db: Path, replicates: int, replicates_dir: Path | None = None) -> dict:
    command = [sys.executable, __file__, "--child", str(db), "--replicates", str(replicates)]
    if replicates_dir is not None:
        command += ["--replicates-dir", str(replicates_dir)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the aggregation failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe(figures: dict) -> str:
    return (f"{figures['wall_s']} s wall, {figures['cpu_s']} s CPU (user + system), peak "
            f"{figures['peak_mb']} MB resident, load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[32, 1000])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cultivar-bench-aggregate"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--replicates-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.records import dataset_fingerprint

    args.workdir.mkdir(parents=True, exist_ok=True)
    for n in args.models:
        filled = args.workdir / f"aggregate-{n}.duckdb"
        with filled_store(filled, n).connect():  # a file of an earlier schema version migrated
            pass  # (not timed)
        work = args.workdir / f"work-{n}.duckdb"  # a copy: one more model is added to it
        shutil.copyfile(filled, work)
        kept = args.workdir / f"replicates-{n}-r{args.replicates}"
        shutil.rmtree(kept, ignore_errors=True)
        full = run_child(work, args.replicates)
        print(f"{n} models × 27 locales, {args.replicates} replicates, BLEU + chrF: "
              f"aggregate {describe(full)} ({full['ranks']} rank rows)", flush=True)
        keeping = run_child(work, args.replicates, kept)
        size = sum(p.stat().st_size for p in kept.glob("replicates-*.bin")) / 2**20
        states = (kept / "_ranks.state").stat().st_size / 2**20
        print(f"  the same, keeping every model's replicates ({size:.0f} MiB in one pack; rank "
              f"states {states:.0f} MiB): {describe(keeping)}", flush=True)
        store = Store(work)
        add_models(store, range(n, n + 1), n, dataset_fingerprint(store))
        one = run_child(work, args.replicates, kept)
        print(f"  one model added ({model_name(n)}; {one['models']} models): aggregate on the "
              f"kept replicates {describe(one)}", flush=True)
        work.unlink()


if __name__ == "__main__":
    main()
