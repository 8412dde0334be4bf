"""Benchmark: one model added to an aggregated leaderboard, end to end, as the assets run it.

The leaderboard before (not timed; kept in ``--workdir`` and reused by later runs with the same
arguments): ``bench_site.py``'s synthetic database of N models × 48 test sets × ``--segments``
instances (its first 16 models translated and scored for real, every further one mixed from
them instance by instance: ``bench_site.add_model``, ``bench_site.mix_models``), aggregated
with ``--replicates`` bootstrap replicates and a kept state (``aggregate(...,
replicates_dir=...)``, what the ``leaderboard`` asset passes), the charts written, every
model's site part and the locale shards written and the site built (what ``charts``,
``model_site``, ``locale_shards`` and ``site`` run; vl-convert's SVG cache in a home folder of
its own, ``home/``, copied with the rest, so that the timed charts stage renders only the
charts that changed, as a real rebuild does).
The test sets are written under a storage root (``test_sets.json``, what the models'
partitions read). The added model's translations are synthetic (perturbed references, as
``bench_site.add_model`` makes them), written as its translations file under the storage root
(the ``translations`` partition's output; not timed). A leaderboard made by an earlier release
is migrated to this release's schema once, before it is copied, and the parts it refuses
written again with the site (``parts_brought_up_to_date``; not timed); the mixed models'
statistics, written in SQL, have their digests recorded as the loader records a model's.

Then, in a child process (its imports timed apart), what the assets run for the added model,
in order, each stage's wall and CPU seconds (user + system, the process and its children),
the child's peak resident memory so far (its high-water mark) and the load average:

1. ``scores``: the partition's work (``compute_scores`` from its translations file and the
   test sets file, the scores file written);
2. ``model_results``: the model's files loaded into the database (``load_models_files`` of
   every registered model: the others have no folder under this storage root and are left);
3. ``leaderboard``: ``evaluation.aggregate`` with the kept state (the added model's replicates
   computed, the others' taken from the pack, ranks updated, its per-model rows and every
   cross-model row written);
4. ``charts``: ``write_store_charts`` to the charts folder;
5. ``model_site``: the added model's part (``write_model_part``);
6. ``site``: what the ``site`` asset runs (``bench_site.site_asset_run``): the dataset card,
   the checks of the parts and the locale shards, ``build_site`` with the charts folder, every
   model's part and the locale shards, the previous build left to a detached process; when
   that process has removed it is waited for after the stage and reported apart
   (``site_previous_removed_after_s``), not timed (the asset does not wait for it).

Goal: at 1,000 models with the default 1,000 replicates and default metrics, the
total ≤ 15 s. Not a test: run it by hand and record the figures in docs/performance.md.

    python benchmarks/bench_one_model.py --models 1000 --workdir /tmp/one-model-bench
    python benchmarks/bench_one_model.py --models 100 --workdir DIR --json figures.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

STAGES = ("scores", "model_results", "leaderboard", "charts", "model_site", "site")


def _cpu() -> float:
    own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                       resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_mb() -> int:
    """This process's peak resident memory (MB): its memory's high-water mark, which starts
    afresh at exec (``ru_maxrss`` keeps the parent's peak across fork and exec)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return round(int(line.split()[1]) / 1024)


def prepared(workdir: Path, n_models: int, segments: int, replicates: int,
             web_cache: Path) -> Path:
    """The folder of the leaderboard before (module docstring): ``bench.duckdb``, ``kept/``,
    ``root/`` (the storage root), ``home/`` ($CULTIVAR_HOME: the SVG cache), ``charts/``,
    ``site-models/``, ``site/``; made once."""
    from bench_site import (
        POOL,
        add_model,
        aggregate_config,
        mix_models,
        synthetic_benchmark,
    )

    from cultivar_assets.evaluation import aggregate
    from cultivar_assets.site.build import build_site
    from cultivar_assets.site.charts import write_store_charts
    from cultivar_assets.site.locale_shards import write_locale_shards
    from cultivar_assets.site.model_part import write_model_part
    from cultivar_assets.site.pages import model_slug
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.records import (
        read_test_sets,
        record_every_model_statistics,
        write_dataset,
        write_test_sets_file,
    )

    folder = workdir / f"one-model-{n_models}x{segments}-r{replicates}"
    if (folder / "done").is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ["CULTIVAR_HOME"] = str(folder / "home")
    started = time.perf_counter()
    store = Store(folder / "bench.duckdb")
    rng = random.Random(7)
    data = synthetic_benchmark(segments, rng)
    fingerprint = write_dataset(store, data)
    write_test_sets_file(str(folder / "root"), data)
    test_sets = read_test_sets(store)
    for m in range(min(n_models, POOL)):
        add_model(store, m, test_sets, fingerprint, rng)
    if n_models > POOL:
        mix_models(store, range(POOL, n_models), POOL, seed=7)
        record_every_model_statistics(store)  # the mixed models' statistics written in SQL
    aggregate(store, config=aggregate_config(replicates), replicates_dir=folder / "kept")
    write_store_charts(store, folder / "charts")
    parts = {}
    for row in store.query("site_translated_models"):
        parts[row["model_id"]] = folder / "site-models" / model_slug(row["model_id"])
        write_model_part(store, row["model_id"], parts[row["model_id"]])
    write_locale_shards(store, folder / "site-locales")
    build_site(store, folder / "site", card_markdown="# Synthetic card",
               charts_dir=folder / "charts", query_page="cached", web_cache=web_cache,
               model_parts=parts, locale_shards=folder / "site-locales")
    (folder / "done").write_text(f"{time.perf_counter() - started:.0f} s\n")
    return folder


def parts_brought_up_to_date(folder: Path, web_cache: Path) -> int:
    """The models' parts in ``folder`` (the leaderboard before) that this release refuses (made
    by an earlier one: ``current_parts``) written again and the site built again from them (not
    timed, as the rest of the leaderboard before); how many were."""
    from cultivar_assets.site.build import build_site
    from cultivar_assets.site.locale_shards import current_locale_shards, write_locale_shards
    from cultivar_assets.site.model_part import current_parts, write_model_parts
    from cultivar_assets.site.pages import model_slug
    from cultivar_assets.store.database import Store

    store = Store(folder / "bench.duckdb")
    folders = {row["model_id"]: folder / "site-models" / model_slug(row["model_id"])
               for row in store.query("site_translated_models")}
    _, unusable = current_parts(store, folders, False)
    locales = folder / "site-locales"
    _, shards_refused = current_locale_shards(store, locales, False)
    if unusable or shards_refused:
        os.environ["CULTIVAR_HOME"] = str(folder / "home")
        write_model_parts(store, {m: folders[m] for m in unusable})
        if shards_refused:
            write_locale_shards(store, locales)
        build_site(store, folder / "site", card_markdown="# Synthetic card",
                   charts_dir=folder / "charts", query_page="cached", web_cache=web_cache,
                   model_parts=current_parts(store, folders, False)[0], locale_shards=locales)
        print(f"{len(unusable)} models' parts made by an earlier release written again"
              f"{' and the locale shards' if shards_refused else ''}, and the site built again "
              f"(not timed)", file=sys.stderr)
    return len(unusable)


def added_translations(folder: Path, model: int) -> str:
    """The added model's translations file under the storage root (perturbed references,
    as ``bench_site.add_model`` makes them); its id."""
    from bench_site import perturbed_run

    from cultivar_assets.store.records import read_test_sets_file, write_translations_file

    stored = read_test_sets_file(str(folder / "root"))
    run = perturbed_run(model, stored.test_sets, random.Random(model))
    write_translations_file(str(folder / "root"), run, stored.fingerprint)
    return run.model.id


def child(folder: Path, model_id: str, replicates: int, web_cache: Path) -> None:
    """The timed stages (module docstring) in this process; one JSON line of figures."""
    started = time.perf_counter()
    from bench_site import METRICS, aggregate_config, previous_build_removed, site_asset_run

    from cultivar_assets.evaluation import aggregate
    from cultivar_assets.evaluation.model_scores import compute_scores
    from cultivar_assets.site.charts import write_store_charts
    from cultivar_assets.site.model_part import write_model_part
    from cultivar_assets.site.pages import model_slug
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.model_files import read_document, translations_path
    from cultivar_assets.store.records import (
        load_models_files,
        read_test_sets_file,
        write_scores_file,
    )

    figures: dict = {"imports": {"wall_s": round(time.perf_counter() - started, 2)}}
    store, root = Store(folder / "bench.duckdb"), str(folder / "root")
    models = sorted({r["model_id"] for r in store.query("all_scores")} | {model_id})
    folders = {m: folder / "site-models" / model_slug(m) for m in models}

    def scores():
        stored = read_test_sets_file(root)
        translated = read_document(translations_path(root, model_id), "translations")
        result = compute_scores(model_id, translated.content["translations"],
                                translated.content["run"], stored.test_sets, stored.instances,
                                stored.fingerprint, METRICS)
        write_scores_file(root, model_id, result.rows, translated.digest)

    def model_results():
        loaded = load_models_files(store, root, models)
        if loaded.problems or loaded.loaded != [model_id]:
            raise SystemExit(f"model_results loaded {loaded.loaded}: {loaded.problems}")

    def leaderboard():
        result = aggregate(store, models, aggregate_config(replicates),
                           replicates_dir=folder / "kept")
        figures["leaderboard_kept"] = result.kept
        figures["leaderboard_rewritten"] = result.rewritten

    def site():  # what the site asset runs (bench_site.site_asset_run)
        summary = site_asset_run(store, folder / "site", folder / "charts", folders,
                                 folder / "site-locales", "cached", web_cache)
        figures["site_models"] = (summary.models, summary.assembled_models)

    work = {"scores": scores, "model_results": model_results, "leaderboard": leaderboard,
            "charts": lambda: write_store_charts(store, folder / "charts"),
            "model_site": lambda: write_model_part(store, model_id, folders[model_id]),
            "site": site}
    for stage in STAGES:
        wall, cpu = time.perf_counter(), _cpu()
        work[stage]()
        ended = time.perf_counter()
        figures[stage] = {"wall_s": round(ended - wall, 2),
                          "cpu_s": round(_cpu() - cpu, 2), "peak_mb": _peak_mb(),
                          "load": round(os.getloadavg()[0], 1)}
    # the previous site build, removed by a detached process after the site asset: waited
    # for and reported, not timed as a stage (the asset does not wait for it)
    figures["site_previous_removed_after_s"] = previous_build_removed(folder / "site", ended)
    figures["total_wall_s"] = round(sum(figures[s]["wall_s"] for s in STAGES), 2)
    figures["total_cpu_s"] = round(sum(figures[s]["cpu_s"] for s in STAGES), 2)
    print(json.dumps(figures), flush=True)


@contextmanager
def scratch_copy(before: Path, workdir: Path, n_models: int) -> Iterator[Path]:
    """A copy of ``before`` in a folder of this run's own under ``workdir``
    (``scratch-<models>-<random>``, made by :func:`tempfile.mkdtemp`: runs at once on one
    workdir each have theirs), removed when the block ends, also when it fails."""
    scratch = Path(tempfile.mkdtemp(prefix=f"scratch-{n_models}-", dir=workdir))
    try:
        shutil.copytree(before, scratch, dirs_exist_ok=True)
        yield scratch
    finally:
        shutil.rmtree(scratch)


def run(n_models: int, segments: int, replicates: int, workdir: Path, web_cache: Path
        ) -> dict:
    """The leaderboard before (made once), copied (:func:`scratch_copy`); the model added to the
    copy and timed."""
    from cultivar_assets.store.database import Store

    before = prepared(workdir, n_models, segments, replicates, web_cache)
    with Store(before / "bench.duckdb").connect():  # a file of an earlier schema version
        pass  # migrated once (not timed)
    parts_brought_up_to_date(before, web_cache)
    with scratch_copy(before, workdir, n_models) as scratch:
        model_id = added_translations(scratch, n_models)
        os.sync()  # the copy's writeback done before the timings, not during them
        done = subprocess.run([sys.executable, __file__, "--child", str(scratch), model_id,
                               "--replicates", str(replicates), "--web-cache", str(web_cache)],
                              capture_output=True, text=True,
                              env={**os.environ, "CULTIVAR_HOME": str(scratch / "home")})
        if done.returncode != 0:
            raise SystemExit(f"the timed stages failed ({done.returncode}):\n"
                             f"{done.stderr[-3000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {"models": n_models, "segments": segments, "replicates": replicates,
            "added": model_id, **figures}


def describe(figures: dict) -> str:
    lines = [f"{figures['models']} models + {figures['added']} ({figures['segments']} segments "
             f"per test set, {figures['replicates']} replicates); imports "
             f"{figures['imports']['wall_s']} s (not in the total)"]
    lines += [f"  {stage:<14} {f['wall_s']:>7.2f} s wall {f['cpu_s']:>7.2f} s CPU  peak "
              f"{f['peak_mb']:>5} MB  load {f['load']}"
              for stage in STAGES for f in [figures[stage]]]
    lines.append(f"  {'total':<14} {figures['total_wall_s']:>7.2f} s wall "
                 f"{figures['total_cpu_s']:>7.2f} s CPU")
    lines.append(f"  the previous site build removed {figures['site_previous_removed_after_s']} s "
                 f"after the site stage (a detached process; not timed)")
    lines.append(f"  leaderboard kept: {figures['leaderboard_kept']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[100])
    parser.add_argument("--segments", type=int, default=200, help="instances per test set")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cultivar-bench-one-model"))
    parser.add_argument("--json", type=Path, help="write the figures to this file too")
    parser.add_argument("--web-cache", type=Path, help="the site's web cache (DuckDB-Wasm, the "
                        "Vega bundle; default: $CULTIVAR_HOME's)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.web_cache is None:
        from cultivar_assets.site.config import default_web_cache

        args.web_cache = default_web_cache()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.replicates, args.web_cache)
        return 0
    results = []
    home = os.environ.get("CULTIVAR_HOME")
    for n_models in args.models:
        figures = run(n_models, args.segments, args.replicates, args.workdir, args.web_cache)
        if home is None:  # prepared() set it for its own build
            os.environ.pop("CULTIVAR_HOME", None)
        else:
            os.environ["CULTIVAR_HOME"] = home
        print(describe(figures), flush=True)
        results.append(figures)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
