"""The ``cultivar`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cultivar_assets.settings import Settings, demo_settings, load_settings, settings_file


def _console():
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(highlight=False, width=160)  # pipes and logs: room for the leaderboard
    return console


def _print_leaderboard(rows: list[dict]) -> None:
    from rich.table import Table

    from cultivar_assets.tables import LEADERBOARD_COLUMNS, format_value

    table = Table(title="Cultivar leaderboard (sorted by ∆BLEU, as in the paper's Table 3)")
    for key, header in LEADERBOARD_COLUMNS:
        table.add_column(header, justify="left" if key in ("model_id", "type") else "right")
    for row in rows:
        table.add_row(*(format_value(row.get(key), key) for key, _ in LEADERBOARD_COLUMNS))
    console = _console()
    console.print(table)
    for bleu, chrf, spm in sorted({(r["bleu_signature"], r["chrf_signature"],
                                    r["bleu_tokenizer_sha256"]) for r in rows}, key=repr):
        model = f" (SentencePiece model sha256 {spm})" if spm else ""
        console.print(f"BLEU signature: {bleu}{model}\nchrF signature: {chrf}")


def _settings(args: argparse.Namespace) -> Settings:
    settings = (demo_settings(live_localiser=args.live_localiser) if args.command == "demo"
                else load_settings(args.config))
    if getattr(args, "bleu_tokenize", None):
        settings.metrics = settings.metrics.model_copy(update={"bleu_tokenize": args.bleu_tokenize})
    if getattr(args, "database", None):
        settings.database = args.database
    return settings


def cmd_demo(args: argparse.Namespace) -> int:
    """The embedded default (ignores cultivar.yaml): demo data, demo models, local DuckDB."""
    return _run(_settings(args))


def cmd_run(args: argparse.Namespace) -> int:
    """The configured evaluation (cultivar.yaml / $CULTIVAR_CONFIG / --config)."""
    return _run(_settings(args))


def _run(settings: Settings) -> int:
    from cultivar_assets.runner import run_pipeline

    console = _console()
    built = settings.data.kind == "built"
    if settings.data.kind == "demo" or (built and settings.construction.source.kind == "demo"):
        from cultivar_assets.construction.localisation.drafts import configured_localiser

        localiser = configured_localiser(settings.construction.localisation)
        how = (f"built here from its original sentences (selection, drafts: {localiser}, the "
               "shipped demo annotation files) and " if built else "")
        console.print("Cultivar demo: DEMO data (written for this project, not FLORES or "
                      f"Cultivar), {how}evaluated with the models of " + ", ".join(settings.models))
    if settings.metrics.bleu_tokenize != "flores200":
        console.print(f"BLEU tokenizer: {settings.metrics.bleu_tokenize} (selected explicitly; the "
                      "paper's spBLEU uses flores200, whose SentencePiece model is not bundled: "
                      "see docs/metrics.md)")
    from cultivar_assets.site.query_engine import will_fetch

    notice = will_fetch(settings.site.query_page, settings.site.web_cache_path())
    if notice:  # said once, before the run reaches the network (the site step runs npm)
        console.print(notice[0].upper() + notice[1:], markup=False)
    result = run_pipeline(settings, say=console.print)
    _print_leaderboard(result.leaderboard)
    _print_missing(result.database)
    if result.build is not None:
        demo = " (DEMO annotation files: the final pairs are the bundled demo data)" if (
            result.build.is_demo) else ""
        print_table1(result.build.table1, "Table 1, computed from the annotation files" + demo)
        tools = sorted(result.build.tools.items())
        folder = str(Path(tools[0][1]).parent.parent) if tools else ""
        console.print(f"Post-editing tool pages: {folder}/<locale>/index.html (e.g. "
                      f"{tools[0][1] if tools else '-'}; open one in a browser)")
        console.print(_hand_in_line(settings))
        console.print(f"Dataset: {result.build.dataset_folder}")
    console.print(f"\nDatabase: {result.database}")
    console.print(f"Site: {result.site}/index.html (open it, or: cultivar serve)")
    from cultivar_assets.files import read_manifest

    for note in (read_manifest(Path(result.site)) or {}).get("notes", []):
        console.print(f"Site note: {note}")
    console.print("Time: " + ", ".join(
        f"{name} {'reused' if name in result.reused else f'{seconds:.0f} s'}"
        for name, seconds in result.steps))
    if result.reused:
        console.print(f"Reused, unchanged since their last run: {len(result.reused)} of "
                      f"{len(result.steps)} steps (cultivar query \"SELECT * FROM step_records\")")
    console.print(f"Finished in {result.seconds:.0f} s. Query it: cultivar query "
                  "\"SELECT * FROM locale_deltas\"; browse the runs: cultivar ui")
    return 0


def _print_missing(database: Path | str) -> None:
    """The data's notes (files not read, locales left out) and the test sets it could not
    provide, each with its reason (a ∆ shown as '–' is otherwise unexplained)."""
    from cultivar_assets.store.database import Store

    store = Store(Path(database))
    for row in store.query("dataset_notes"):  # e.g. files that name no locale, not read
        _console().print(f"Data note: {row['note']}", markup=False)
    missing = store.query("missing_test_sets")
    if missing:
        _console().print(f"Not evaluated: {len(missing)} test set(s) missing from the data "
                         "(their ∆ is '–'):")
        for row in missing:
            _console().print(f"  {row['test_set']}: {row['reason']}", markup=False)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from cultivar_assets.store.database import Store

    _print_leaderboard(Store(_settings(args).database_path).query("leaderboard"))
    return 0


QUERY_FORMATS = ("table", "csv", "json", "markdown")


def cmd_query(args: argparse.Namespace) -> int:
    """Run SQL read-only and print every value in full: ``table`` wraps long cells instead of
    cutting them; ``csv`` (RFC 4180, cells that would start a spreadsheet formula defused),
    ``json`` (an array of objects) and ``markdown`` are for other programs and documents."""
    from cultivar_assets.store.database import Store
    from cultivar_assets.tables import csv_text, json_text, md_table, md_text

    store = Store(_settings(args).database_path)
    with store.connect(read_only=True) as con:
        cursor = con.execute(args.sql)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        records = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    if args.format == "csv":
        sys.stdout.write(csv_text(records, columns))
    elif args.format == "json":
        print(json_text(records, columns))
    elif args.format == "markdown":
        print(md_table([[md_text("NULL" if r[c] is None else r[c]) for c in columns]
                        for r in records], [md_text(c) for c in columns]))
    else:
        from rich.table import Table

        table = Table(*columns)
        for column in table.columns:
            column.overflow = "fold"  # wrap long values; never "deu_Latn…"
        for record in records:
            table.add_row(*("NULL" if record[c] is None else str(record[c]) for c in columns))
        _console().print(table)
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    """``dagster dev`` on the local instance, in its own process group: stopping ``cultivar ui``
    (Ctrl-C, SIGTERM) stops the webserver, the daemon, the code servers and the runs in progress
    with it. Dagster gets ``--stop-grace`` seconds to shut down by itself, then what is left is
    killed; runs that no process is left to finish are then recorded as failed (at the start
    too: those a killed UI or run left "started"), :mod:`cultivar_assets.runner.orphaned_runs`."""
    import signal

    from cultivar_assets.processes import run_process_group
    from cultivar_assets.runner import dagster_home_dir

    if args.stop_grace < 0:
        raise ValueError(f"--stop-grace {args.stop_grace}: expected seconds ≥ 0")
    home = dagster_home_dir()
    env = {**os.environ, "DAGSTER_HOME": home}
    # The settings go to Dagster's processes as CULTIVAR_CONFIG (an absolute path: its code
    # servers need not share this directory); a file that cannot be read stops here, not in the
    # code server, where the UI would show only a load error.
    path = Path(args.config) if args.config else settings_file()
    settings = load_settings(path) if path else demo_settings()
    if path:
        env["CULTIVAR_CONFIG"] = str(path.resolve())
    else:
        env.pop("CULTIVAR_CONFIG", None)
    from cultivar_assets.models import default_models_file

    print(f"Settings: {path.resolve() if path else 'the embedded demo defaults (no settings file)'}"
          f"\nModels file: {Path(settings.models_file or default_models_file()).resolve()}; "
          f"watched by the sensor and schedule: {', '.join(settings.models)}"
          f"\nDatabase: {settings.database_path}", flush=True)
    workspace = Path(__file__).resolve().parent.parent / "workspace.yaml"
    command = [sys.executable, "-m", "dagster", "dev"]  # this environment's dagster
    if workspace.is_file():
        command += ["-w", str(workspace)]
    else:  # installed from a wheel: no workspace.yaml beside the package
        command += ["-m", "cultivar_assets.definitions"]
    command += ["--host", args.host, "--port", str(args.port), *args.dagster_args]
    import dagster as dg

    # opened once: at the stop, recording the runs left must not wait for Dagster's imports
    with dg.DagsterInstance.from_config(home) as instance:
        _mark_orphaned_runs(instance, "found at the start of cultivar ui: left in progress by "
                            "processes that ended without finishing it (a cultivar ui or "
                            "cultivar run that was killed)",
                            "left in progress by processes that were killed")
        print(f"DAGSTER_HOME={home}; starting: {' '.join(command)}\n"
              f"Dagster UI: http://{args.host}:{args.port}/ (Ctrl-C to stop)", flush=True)
        code = run_process_group(command, env=env, grace=args.stop_grace)
        stopped = signal.Signals(code - 128).name if code > 128 else None
        how = f"stopped with cultivar ui ({stopped})" if stopped else (
            f"dagster dev exited (status {code})")
        ignored = {signum: signal.signal(signum, signal.SIG_IGN)  # the record is written whole
                   for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            _mark_orphaned_runs(instance, f"{how} while the run was in progress: no process is "
                                "left to finish it", how, queued=True)
        finally:
            for signum, handler in ignored.items():
                signal.signal(signum, handler)
    args.exit_at_once = True  # see main: Python's own teardown of Dagster's modules takes seconds
    return code


def _mark_orphaned_runs(instance, reason: str, summary: str, queued: bool = False) -> None:
    """Record the runs of ``instance`` that no process is left to finish as failed
    (:mod:`cultivar_assets.runner.orphaned_runs`), with ``reason``, and say so."""
    from cultivar_assets.runner.orphaned_runs import describe, mark_orphaned_runs, queued_runs

    marked = mark_orphaned_runs(instance, reason)
    waiting = queued_runs(instance) if queued else 0
    if marked:
        print(f"{len(marked)} run(s) {summary}; recorded in the run storage with the reason "
              f"\"{reason}\":\n{describe(marked)}", flush=True)
    if waiting:
        print(f"{waiting} queued run(s) left in the queue: the daemon launches them when "
              "cultivar ui runs again", flush=True)


def cmd_serve_model(args: argparse.Namespace) -> int:
    """``vllm serve`` for a registry entry's weights in its own process group (Ctrl-C or SIGTERM
    stop the server and its engine processes); prints the ``openai`` entry that uses it."""
    import yaml

    from cultivar_assets.engines.vllm_serve import (
        base_url,
        check_python,
        check_servable,
        openai_entry,
        serve_command,
    )
    from cultivar_assets.models import load_models
    from cultivar_assets.processes import run_process_group

    spec = load_models(args.models_file or _settings(args).models_file).get(args.model)
    check_servable(spec)
    python = args.python or os.environ.get("CULTIVAR_VLLM_PYTHON") or sys.executable
    check_python(python)
    command = serve_command(spec, python, args.host, args.port, args.vllm_args)
    url = base_url(args.host, args.port)
    snippet = yaml.safe_dump([openai_entry(spec, url)], sort_keys=False, allow_unicode=True)
    print(f"base_url: {url}\nAn openai engine entry for models.yaml (under models:):\n\n"
          f"{snippet}\nStarting: {' '.join(command)}\n(ready when {url}/models answers; "
          "Ctrl-C to stop)", flush=True)
    return run_process_group(command)


def cmd_models(args: argparse.Namespace) -> int:
    from cultivar_assets.models import load_models, select_models

    settings = _settings(args)
    registry = load_models(settings.models_file)
    if args.ids:
        print(",".join(spec.id for spec in select_models(registry, args.ids.split(","))))
        return 0
    for name in registry:
        spec = registry.get(name)
        print(f"{spec.id:40s} {spec.type:9s} {spec.engine:14s} {spec.prompt_style:22s} "
              f"{','.join(spec.suites)}")
    print(f"{len(registry)} models, registry valid", file=sys.stderr)
    return 0


DEFAULT_STYLES = {"seq2seq": "source", "copy-source": "source"}


def cmd_models_add(args: argparse.Namespace) -> int:
    import yaml

    from cultivar_assets.models import add_model_entry, default_models_file

    settings = _settings(args)
    path = Path(args.file or settings.models_file or default_models_file())
    options = {}
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--option {item!r}: expected key=value")
        options[key] = yaml.safe_load(value)
    style = args.prompt_style or DEFAULT_STYLES.get(args.engine, "chat-instruction")
    entry = {
        "id": args.id or args.hf_id.rstrip("/").split("/")[-1],
        "hf_id": args.hf_id,
        "revision": args.revision,
        "type": args.type,
        "family": args.family,
        "params_total_b": args.params_total,
        "params_active_b": args.params_active,
        "engine": args.engine,
        "prompt_style": style,
        "engine_options": options,
        "suites": args.suite or [],
    }
    entry = {k: v for k, v in entry.items() if v not in (None, {}, [])}
    spec = add_model_entry(path, entry)
    print(f"added {spec.id} to {path}")
    if spec.params_active_b is None:
        print("  active parameters: not given, stored as unknown (--params-active)")
    if not args.prompt_style:
        print(f"  prompt style: {style} (the default for engine {args.engine}; --prompt-style)")
    if not args.revision:
        print("  revision: not pinned; pin it (--revision) before a run you publish")
    print("  " + _sensor_note(spec.id, path, settings))
    return 0


def _sensor_note(model_id: str, path: Path, settings: Settings) -> str:
    """Whether the registry sensor will pick up ``model_id``: it watches ``settings.models``."""
    from cultivar_assets.models import ModelRegistryError, load_models, select_models

    watched = Path(settings.models_file) if settings.models_file else None
    from cultivar_assets.models import default_models_file

    if path.resolve() != (watched or default_models_file()).resolve():
        return (f"the registry sensor reads {watched or default_models_file()}, not {path}: it "
                "will not see this entry (set models_file in the settings)")
    try:
        selected = {spec.id for spec in select_models(load_models(path), settings.models)}
    except ModelRegistryError as error:
        return f"the sensor's selection {settings.models} cannot be resolved: {error}"
    if model_id in selected:
        return "the registry sensor " + _next_tick(settings)
    return (f"the registry sensor watches {', '.join(settings.models)}, which does not include "
            f"{model_id}: it will not run it; add it to `models` in the settings (or join a "
            "watched suite with --suite), or run it with `cultivar run`")


def _next_tick(settings: Settings, now: float | None = None) -> str:
    """When the registry sensor of the local Dagster instance (``cultivar ui``) will see a new
    entry (see :func:`tick_note`). Reads the instance's sensor state and last tick; starts and
    creates nothing."""
    import time

    from cultivar_assets.paths import dagster_home

    interval = settings.automation.registry_sensor_interval_seconds
    now = time.time() if now is None else now
    home = Path(os.environ.get("DAGSTER_HOME") or dagster_home())
    if not (home / "storage").is_dir():  # no instance has run here: nothing was switched on
        return tick_note(False, None, interval, now)
    import dagster as dg
    from dagster._core.definitions.run_request import InstigatorType
    from dagster._core.scheduler.instigation import InstigatorStatus

    from cultivar_assets.automation import REGISTRY_SENSOR

    with dg.DagsterInstance.from_config(str(home)) as instance:
        running = [state for state in instance.all_instigator_state(
            instigator_type=InstigatorType.SENSOR)
            if state.name == REGISTRY_SENSOR and state.status == InstigatorStatus.RUNNING]
        ticks = instance.get_ticks(running[0].instigator_origin_id, running[0].selector_id,
                                   limit=1) if running else []
    return tick_note(bool(running), ticks[0].timestamp if ticks else None, interval, now)


def tick_note(running: bool, last_tick: float | None, interval: int, now: float) -> str:
    """What the registry sensor will do about a new entry: off (say how to switch it on), on
    without a tick yet, or on with its next tick due at ``last_tick + interval`` (now, when that
    has passed: the daemon ticks as soon as it can)."""
    import time

    every = f"(it ticks every {interval} s: automation.registry_sensor_interval_seconds)"
    if not running:
        return f"is off: switch it on in `cultivar ui` (Automation) to run it {every}"
    if last_tick is None:
        return f"is on and will run it on its first tick, while `cultivar ui` runs {every}"
    due = max(last_tick + interval, now)
    at = time.strftime("%H:%M:%S UTC", time.gmtime(due))
    return (f"is on: its next tick is due at {at} (in {due - now:.0f} s), while `cultivar ui` "
            f"runs {every}")


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the built site until SIGINT (Ctrl-C) or SIGTERM, however it was started (both stop
    it cleanly)."""
    import functools
    import http.server
    import signal

    folder = Path(args.directory) if args.directory else _settings(args).site.site_path()
    if not (folder / "index.html").is_file():
        raise FileNotFoundError(f"no site in {folder}; build it first (cultivar demo)")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))

    def stop(_signum, _frame) -> None:
        raise KeyboardInterrupt  # leaves serve_forever; the with-block closes the socket

    # SIGINT too, even when it arrives ignored (a script's `cultivar serve &`), as cultivar ui
    # does; the handler threads are daemons: a client holding a connection does not hold us
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        with http.server.ThreadingHTTPServer((args.host, args.port), handler) as httpd:
            host, port = httpd.server_address[:2]
            print(f"Serving {folder} at http://{host}:{port}/ (Ctrl-C to stop)", flush=True)
            try:
                httpd.serve_forever()
            except KeyboardInterrupt:
                print("stopped", flush=True)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def cmd_fetch_query_engine(args: argparse.Namespace) -> int:
    """Fetch DuckDB-Wasm for the site's Query page with npm into the web cache."""
    from cultivar_assets.site.query_engine import cached_query_engine, fetch_query_engine

    cache = Path(args.cache) if args.cache else _settings(args).site.web_cache_path()
    engine = None if args.force else cached_query_engine(cache)
    if engine is None:
        engine = fetch_query_engine(cache, say=print)
    print(f"DuckDB-Wasm {engine.version}: {engine.folder} (the next site build includes the "
          "Query page)")
    return 0


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
    folder = settings.construction.annotation.folder_path()
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


def cmd_locales(args: argparse.Namespace) -> int:
    from cultivar_assets.data.locales import all_locales

    for loc in all_locales():
        mark = "" if loc.official_or_de_facto else "  (not official/de facto there)"
        print(f"{loc.key:24s} {loc.language_name:24s} {loc.location}{mark}")
    return 0


def _add_global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes, before or after its name (``cultivar --config X build
    select`` and ``cultivar build select --config X`` are the same). Below the top level their
    default is ``SUPPRESS``, so a subcommand that is not given the option keeps the value given
    before it; given at both places, the later one wins."""
    parser.add_argument("--config", default=None if top else argparse.SUPPRESS,
                        help="settings file (default: $CULTIVAR_CONFIG or ./cultivar.yaml; "
                        "without one, the demo defaults)")


def _add_global_options_below(parser: argparse.ArgumentParser) -> None:
    """Every subcommand at every depth (``build select``, ``models add``) gets the global options:
    one place, so a new subcommand cannot miss them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_global_options(child, top=False)
                _add_global_options_below(child)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cultivar", description=__doc__)
    _add_global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the whole pipeline on the embedded default (demo data "
                          "and models; settings files are not read)")
    demo.add_argument("--bleu-tokenize", help="BLEU tokenizer, e.g. flores200 (spBLEU) when its "
                      "SentencePiece model is available")
    demo.add_argument("--database", help="DuckDB file to write")
    demo.add_argument("--live-localiser", action="store_true", help="run the weak demo localiser "
                      "(Gemma 3 270M, ~6 minutes on 2 cores) instead of playing back its "
                      "recorded answers")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run the whole pipeline as configured (cultivar.yaml)")
    run.add_argument("--database", help="DuckDB file to write")
    run.set_defaults(func=cmd_run)

    board = sub.add_parser("leaderboard", help="print the leaderboard from the database")
    board.add_argument("--database")
    board.set_defaults(func=cmd_leaderboard)

    query = sub.add_parser("query", help="run SQL against the database (read-only)")
    query.add_argument("sql")
    query.add_argument("--database")
    query.add_argument("--format", choices=QUERY_FORMATS, default="table",
                       help="table (wraps long values), csv, json or markdown (default: table)")
    query.set_defaults(func=cmd_query)

    ui = sub.add_parser("ui", help="open the Dagster UI on the local instance (dagster dev); "
                        "other options are passed to dagster dev")
    ui.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    ui.add_argument("--port", type=int, default=3000, help="port (3000)")
    ui.add_argument("--stop-grace", type=float, default=4.0, metavar="SECONDS",
                    help="on Ctrl-C or SIGTERM, how long Dagster may take to shut down before "
                         "what is left is killed (4)")
    ui.set_defaults(func=cmd_ui, dagster_args=[])
    serve_model = sub.add_parser("serve-model", help="serve a registry entry's weights with vLLM "
                                 "(OpenAI-compatible API) and print the openai entry that uses "
                                 "it; other options are passed to vLLM")
    serve_model.add_argument("model", help="the entry's id")
    serve_model.add_argument("--host", default="127.0.0.1", help="address to listen on "
                             "(127.0.0.1)")
    serve_model.add_argument("--port", type=int, default=8000, help="port (8000)")
    serve_model.add_argument("--python", help="the python whose vllm serves (default: "
                             "$CULTIVAR_VLLM_PYTHON, else this environment's)")
    serve_model.add_argument("--models-file", help="registry file (default: settings' "
                             "models_file or the bundled models.yaml)")
    serve_model.set_defaults(func=cmd_serve_model, vllm_args=[])
    models = sub.add_parser("models", help="list and validate the model registry")
    models.add_argument("--ids", metavar="SELECTION",
                        help="print the ids of a selection (ids or suite:<name>, comma-separated)")
    models.set_defaults(func=cmd_models)
    models_sub = models.add_subparsers(dest="models_command")
    add = models_sub.add_parser("add", help="add a model to the registry (validated first)")
    add.add_argument("hf_id", help="Hugging Face repository, e.g. Qwen/Qwen3.5-4B")
    add.add_argument("--type", required=True, choices=["LLM", "MT", "LLM+MT", "baseline"])
    add.add_argument("--engine", required=True, help="vllm, transformers, seq2seq, openai, ...")
    add.add_argument("--family", required=True, help="model family, e.g. 'Qwen 3.5'")
    add.add_argument("--id", help="model id (default: the repository name)")
    add.add_argument("--revision", help="commit or tag to pin")
    add.add_argument("--prompt-style", help="default: chat-instruction (source for seq2seq)")
    add.add_argument("--params-total", type=float, help="total parameters, billions")
    add.add_argument("--params-active", type=float, help="active parameters, billions")
    add.add_argument("--suite", action="append", help="suite to join (repeatable)")
    add.add_argument("--option", action="append", help="engine option key=value (repeatable)")
    add.add_argument("--file", help="registry file (default: settings' models_file or the "
                     "bundled models.yaml)")
    add.set_defaults(func=cmd_models_add)
    sub.add_parser("locales", help="list the 27 Cultivar locales").set_defaults(func=cmd_locales)

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

    serve = sub.add_parser("serve", help="serve the built site on localhost")
    serve.add_argument("--directory", help="site folder (default: the settings' site.output_dir, "
                       "else $CULTIVAR_HOME/site)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(func=cmd_serve)

    fetch = sub.add_parser("fetch-query-engine", help="fetch DuckDB-Wasm for the site's Query "
                           "page with npm (the site build does this itself when npm is there)")
    fetch.add_argument("--cache", help="web cache folder (default: the settings' "
                       "site.web_cache_dir, else $CULTIVAR_HOME/cache/web)")
    fetch.add_argument("--force", action="store_true", help="fetch again even if cached")
    fetch.set_defaults(func=cmd_fetch_query_engine)
    _add_global_options_below(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    from cultivar_assets.secrets import (
        install_log_redaction,
        redact,
        register_environment,
        secrets_redacted,
    )

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in ("ui", "serve-model"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "ui":
        args.dagster_args = extra  # passed through to dagster dev
    if args.command == "serve-model":
        args.vllm_args = extra  # passed through to vllm serve
    register_environment()  # *_TOKEN / *_KEY variables: never printed, logged or stored
    install_log_redaction()
    from cultivar_assets.processes import Interrupted

    try:
        with secrets_redacted():
            code = args.func(args)
        if getattr(args, "exit_at_once", False):
            # `cultivar ui` after dagster dev: everything is written and closed; the interpreter's
            # teardown of Dagster's modules (1.8 s measured on a loaded machine) would count
            # against the stop time, so the process ends here (ours: os._exit after a flush)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except Interrupted as stop:  # SIGINT or SIGTERM: say where, exit as the signal would
        print(redact(f"cultivar {args.command}: {stop}"), file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # one clear line for users; the traceback with CULTIVAR_DEBUG=1
        if os.environ.get("CULTIVAR_DEBUG"):
            raise
        message = _disk_full_message(error) or str(error)
        print(redact(f"cultivar {args.command}: error: {message}"), file=sys.stderr)
        return 1


def _disk_full_message(error: BaseException) -> str | None:
    """The one-line message for an error caused by a full disk, or None. Our own write paths
    raise DiskFullError already (its message is used as it is). What is left: Dagster's run and
    event storage (SQLite under ``$DAGSTER_HOME``), whose SQLAlchemy error runs to many lines and
    ends in "disk I/O error" or "database or disk is full", and any other ``ENOSPC``."""
    from cultivar_assets.files import DiskFullError, disk_full_error, free_space, is_disk_full
    from cultivar_assets.paths import dagster_home

    chain: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for cause in chain:
        if isinstance(cause, DiskFullError):
            return str(cause)
    if any(type(c).__module__.startswith("sqlalchemy") or "(sqlite3.OperationalError)" in str(c)
           for c in chain):  # Dagster's storage
        home = Path(os.environ.get("DAGSTER_HOME") or dagster_home())
        if not is_disk_full(error, home):
            return None
        return str(disk_full_error(
            home, "Dagster's run and event storage there keeps every run and event it held "
            "before (the write that failed was rolled back), and every database write of this "
            "run was applied whole or not at all, so the finished steps are kept", error))
    if not is_disk_full(error):
        return None
    named = next((c.filename for c in chain if isinstance(c, OSError) and c.filename), None)
    free = free_space(Path(named) if named else Path.cwd())
    return (f"out of disk space{f' writing {named}' if named else ''}"
            f"{f' ({free / 1e6:.1f} MB free on its filesystem)' if free is not None else ''}: "
            f"{' '.join(str(error).split())}. Nothing already stored was lost: every database "
            "write and every output folder of this run was applied whole or not at all. Free "
            "some space and run again.")

if __name__ == "__main__":
    sys.exit(main())
