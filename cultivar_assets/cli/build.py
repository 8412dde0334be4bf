"""``cultivar build``: building Cultivar from a source benchmark without Dagster (paper §2;
settings: ``construction``): ``select``, ``localise``, ``tools``, ``ingest``, ``dataset``."""

from __future__ import annotations

import argparse
from pathlib import Path

from cultivar_assets.cli.common import _console, _settings
from cultivar_assets.settings import Settings


def cmd_build_select(args: argparse.Namespace) -> int:
    """Named-entity-rich selection of the configured source benchmark (construction settings)."""
    from cultivar_assets.construction.build import build_selection
    from cultivar_assets.store.database import Store

    settings = _settings(args)
    selection = settings.construction.selection
    if args.review_dir:
        selection = selection.model_copy(update={"review_dir": args.review_dir})
    build = build_selection(settings.construction.source, selection,
                            Store(settings.database_path), say=print)
    print("; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in build.result.counts().items()))
    for note in build.result.notes:
        print(f"note: {note}")
    print(f"Database: {build.database} (views selection_candidates, selected_instances, ...)\n"
          f"Review page: {build.review_page}\nFinished in {build.seconds:.0f} s")
    return 0


def _money(value: float | None, currency: str | None) -> str:
    return "no prices configured" if value is None else f"{value:.4f} {currency}"


def cmd_build_localise(args: argparse.Namespace) -> int:
    """LLM drafts of the configured locales (or ``--locale``), from the stored selection; the
    drafts of locales with tool pages or annotation files are kept unless ``--redraft``."""
    from cultivar_assets.construction.build import build_localisation
    from cultivar_assets.construction.localisation.drafts import CHECKS
    from cultivar_assets.store.database import Store

    settings = _settings(args)
    construction = settings.construction
    build = build_localisation(construction.localisation, Store(settings.database_path),
                               args.locale or None, annotation=construction.annotation,
                               redraft=args.redraft,
                               cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                               say=print)
    for locale, t in build.summary.items():  # as stored: the run that wrote the drafts
        tokens = ("tokens not reported" if t["prompt_tokens"] is None else
                  f"{t['prompt_tokens']} + {t['completion_tokens']} tokens")
        checks = ", ".join(f"{t[f'n_{code}']} {code}" for code in CHECKS
                           if t.get(f"n_{code}") is not None)
        now = ("kept, not localised again" if locale in build.kept else
               f"{t['n_generated']} generated now")
        print(f"{locale}: {t['n_drafts']} drafts, {t['n_flagged']} flagged, {t['n_retried']} "
              f"retried, {t['n_unchanged']} unchanged; checks failed: {checks or 'not recorded'}"
              f"; by {t['localiser']} (prompt {t['prompt_name']} {t['prompt_hash'][:12]}, "
              f"{t['engine_version']}); {now}; {tokens}; estimated cost "
              f"{_money(t['estimated_cost'], t['currency'])} (this run "
              f"{_money(t['estimated_cost_this_run'], t['currency'])}); task {t['task_id']}")
    print(f"Database: {settings.database_path} (views localised_drafts, localisation_summary)")
    if build.run is not None:
        print(f"Finished in {build.run.seconds:.0f} s")
    return 0


def cmd_build_tools(args: argparse.Namespace) -> int:
    """The post-editing tool pages of the configured locales (or ``--locale``)."""
    from cultivar_assets.construction.annotation.postedit_build import build_tools
    from cultivar_assets.store.database import Store

    settings = _settings(args)
    construction = settings.construction
    folder = Path(args.tools_dir) if args.tools_dir else construction.annotation.tools_path()
    locales = args.locale or construction.localisation.locale_keys()
    for tool in build_tools(Store(settings.database_path), folder, locales):
        print(f"{tool.locale}: {tool.page} ({len(tool.task.drafts)} items, {tool.n_flagged} "
              f"flagged; task {tool.task.task_id})")
    print(_hand_in_line(settings))
    return 0


def _hand_in_line(settings: Settings) -> str:
    """How to hand in an edited annotation file. The demo's folder is the installed package's
    shipped files (left as they are): its line names a folder in the user's home instead."""
    from cultivar_assets.construction.annotation.postedit_build import is_demo_folder
    from cultivar_assets.construction.config import AnnotationConfig

    folder = settings.construction.annotation.folder_path()
    if is_demo_folder(folder):
        own = AnnotationConfig().folder_path()
        return ("Hand in an edited file: cultivar build ingest FILE (the demo reads only its "
                f"shipped annotation files; keep yours in {own} and set "
                "construction.annotation.folder to it in a settings file for cultivar run).")
    return ("Hand in an edited file: cultivar build ingest FILE (or put it in "
            f"{folder} and materialise `annotations`).")


def cmd_build_ingest(args: argparse.Namespace) -> int:
    """Validate returned annotation files against the current drafts, then ingest them all."""
    from cultivar_assets.construction.annotation.postedit_build import (
        ingest_files,
        is_demo_folder,
        kept_flagged,
        kept_flagged_warning,
    )
    from cultivar_assets.construction.annotation.stats import table1_row
    from cultivar_assets.files import keep_file_copy
    from cultivar_assets.store.database import Store

    settings = _settings(args)
    store = Store(settings.database_path)
    files = ingest_files(store, [Path(p) for p in args.files],
                         settings.construction.annotation.limits())
    folder = settings.construction.annotation.folder_path()
    for file in files:
        row = table1_row(file.locale, file.annotations)
        print(f"{file.locale}: ingested {Path(file.path).name} ({row.n_instances} instances: "
              f"{row.kept_llm_paraphrase} kept, {row.reverted_to_flores} reverted, "
              f"{row.edited_source_only + row.edited_target_only + row.edited_both} edited; "
              f"annotator {file.annotator})")
        warning = kept_flagged_warning(file.locale, kept_flagged(store, file.locale))
        if warning:
            print(f"warning: {warning}")
        if is_demo_folder(folder):
            print("  the demo's annotation folder holds the shipped demo files and is left as it "
                  "is: `cultivar demo` ingests those again; to keep this file, configure "
                  "construction.annotation.folder")
        else:
            kept = keep_file_copy(Path(file.path), folder, f"{file.task_id}.annotations.json",
                                  replaces=f"{file.locale}-*.json")
            print(f"  kept as {kept} (the `annotations` asset reads it from there)")
    print(f"Database: {settings.database_path} (views annotations, annotation_summary); next: "
          "cultivar build dataset")
    return 0


def print_table1(rows: list[dict], title: str) -> None:
    """Table 1 (annotation statistics) as computed from the annotation files."""
    from rich.table import Table

    from cultivar_assets.publish.card import TABLE1_COLUMNS
    from cultivar_assets.tables import format_value

    table = Table(title=title)
    for key, header in [*TABLE1_COLUMNS, ("n_instances", "Instances")]:
        table.add_column(header, justify="left" if key == "locale" else "right")
    for row in rows:
        table.add_row(*(format_value(row.get(key), key) for key, _ in
                        [*TABLE1_COLUMNS, ("n_instances", "")]))
    _console().print(table)


def cmd_build_dataset(args: argparse.Namespace) -> int:
    """The Cultivar dataset from the ingested annotations of the configured locales."""
    from cultivar_assets.construction.dataset import build_dataset
    from cultivar_assets.store.database import Store

    settings = _settings(args)
    construction = settings.construction
    folder = Path(args.folder) if args.folder else construction.dataset.folder_path()
    built = build_dataset(Store(settings.database_path), folder,
                          construction.localisation.locale_keys())
    from cultivar_assets.construction.annotation.postedit_build import kept_flagged

    for locale, actions in built.actions().items():
        kept = len(kept_flagged(Store(settings.database_path), locale))
        print(f"{locale}: {sum(actions.values())} instances ("
              + ", ".join(f"{n} {a}" for a, n in actions.items())
              + f"); {kept} flagged draft(s) kept unchanged")
    print_table1(built.table1, "Table 1, computed from the annotation files"
                 + (" (DEMO annotation files)" if built.is_demo else ""))
    print(f"Dataset: {built.folder} ({'demo data' if built.is_demo else built.source}; "
          f"fingerprint {built.fingerprint[:12]})\nEvaluate it with data: {{kind: built}} "
          "(cultivar run); views dataset_build, instance_provenance")
    return 0


def add_build_parser(sub: argparse._SubParsersAction) -> None:
    """The ``build`` command and its subcommands."""
    build = sub.add_parser("build", help="build Cultivar from a source benchmark, without Dagster "
                           "(settings: construction)")
    build_sub = build.add_subparsers(dest="build_command", required=True)
    select = build_sub.add_parser("select", help="named-entity-rich selection (paper §2.1): "
                                  "DuckDB records and a review page")
    select.add_argument("--database", help="DuckDB file to write")
    select.add_argument("--review-dir", help="folder of the review page (default: "
                        "$CULTIVAR_HOME/construction/selection)")
    select.set_defaults(func=cmd_build_select)
    localise = build_sub.add_parser("localise", help="LLM drafts of the selected instances "
                                    "(paper §2.2), one request per instance and locale, cached")
    localise.add_argument("--locale", action="append", help="a locale to localise (repeatable; "
                          "default: construction.localisation.locales)")
    localise.add_argument("--database", help="DuckDB file to write")
    localise.add_argument("--cache-dir", help="answer cache (default: "
                          "$CULTIVAR_HOME/cache/localisation)")
    localise.add_argument("--redraft", action="store_true", help="localise again and replace "
                          "drafts that tool pages or annotation files were made from (by "
                          "default those are kept: a server's answers can change)")
    localise.set_defaults(func=cmd_build_localise)
    tools = build_sub.add_parser("tools", help="the post-editing tool pages (paper §2.3) from the "
                                 "current drafts")
    tools.add_argument("--locale", action="append", help="a locale (repeatable; default: "
                       "construction.localisation.locales)")
    tools.add_argument("--database", help="DuckDB file to read")
    tools.add_argument("--tools-dir", help="output folder (default: "
                       "construction.annotation.tools_dir, else $CULTIVAR_HOME/construction/"
                       "postedit)")
    tools.set_defaults(func=cmd_build_tools)
    ingest = build_sub.add_parser("ingest", help="validate returned annotation files and ingest "
                                  "them (each replaces its locale's annotations)")
    ingest.add_argument("files", nargs="+", metavar="FILE", help="files downloaded from the tool")
    ingest.add_argument("--database", help="DuckDB file to write")
    ingest.set_defaults(func=cmd_build_ingest)
    dataset = build_sub.add_parser("dataset", help="the Cultivar dataset (paper §2.4) from the "
                                   "ingested annotations, with per-instance provenance")
    dataset.add_argument("--database", help="DuckDB file to read and write")
    dataset.add_argument("--folder", help="output folder (default: construction.dataset.folder, "
                         "else $CULTIVAR_HOME/construction/dataset)")
    dataset.set_defaults(func=cmd_build_dataset)
