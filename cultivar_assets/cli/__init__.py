"""The cultivar command line: the pipeline (demo, run), its results (leaderboard, query,
serve, ui), the model registry, scoring and significance tests, and building the benchmark.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cultivar_assets.cli.build import add_build_parser
from cultivar_assets.cli.common import (
    RECORD_FORMATS,
    CultivarArgumentParser,
    _settings,
    print_error,
    print_records,
)
from cultivar_assets.cli.lm_eval import add_lm_eval_parsers
from cultivar_assets.cli.models import add_models_parser
from cultivar_assets.cli.pipeline_run import _print_leaderboard, run_and_report
from cultivar_assets.cli.score import add_score_parser
from cultivar_assets.cli.significance import add_significance_parser
from cultivar_assets.settings import demo_settings, load_settings, settings_file


def cmd_demo(args: argparse.Namespace) -> int:
    """The embedded default (reads no settings file): demo data, demo models, local DuckDB."""
    if getattr(args, "config", None):
        print(f"cultivar demo: reads no settings file, so --config {args.config} would be "
              "ignored; run the configured pipeline with: cultivar run --config "
              f"{args.config}", file=sys.stderr)
        return 2
    return run_and_report(_settings(args))


def cmd_run(args: argparse.Namespace) -> int:
    """The configured evaluation (cultivar.yaml / $CULTIVAR_CONFIG / --config)."""
    return run_and_report(_settings(args))


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from cultivar_assets.store.database import Store

    store = Store(_settings(args).database_path)
    _print_leaderboard(store.query("leaderboard"), store.query("leaderboard_other_metrics"))
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    """Run SQL read-only (:meth:`~cultivar_assets.store.database.Store.read_only_sql`: reading
    statements only, no file written) and print every value in full, in ``--format``
    (:func:`~cultivar_assets.cli.common.print_records`)."""
    from cultivar_assets.store.database import Store

    columns, rows = Store(_settings(args).database_path).read_only_sql(args.sql)
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    print_records(records, columns, args.format)
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
    workspace = Path(__file__).resolve().parents[2] / "workspace.yaml"
    command = [sys.executable, "-m", "dagster", "dev"]  # this environment's dagster
    if workspace.is_file():
        command += ["-w", str(workspace)]
    else:  # installed from a wheel: no workspace.yaml beside the package
        command += ["-m", "cultivar_assets.definitions"]
    command += ["--host", args.host, "--port", str(args.port), *args.dagster_args]
    from cultivar_assets.runner.instance import local_instance

    # opened once: at the stop, recording the runs left must not wait for Dagster's imports
    with local_instance(home) as instance:
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


# commands that read no settings file, so take no --config (cultivar demo: the embedded default)
NO_SETTINGS_FILE = ("demo",)


def _add_global_options_below(parser: argparse.ArgumentParser) -> None:
    """Every subcommand at every depth (``build select``, ``models add``) gets the global options:
    one place, so a new subcommand cannot miss them (except :data:`NO_SETTINGS_FILE`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if parser.prog == "cultivar" and name in NO_SETTINGS_FILE:
                    continue
                _add_global_options(child, top=False)
                _add_global_options_below(child)


def build_parser() -> argparse.ArgumentParser:
    parser = CultivarArgumentParser(prog="cultivar", description=__doc__)
    _add_global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the whole pipeline on the embedded default (demo data "
                          "and models; settings files are not read)")
    demo.add_argument("--bleu-tokenize", help="BLEU tokenizer, e.g. flores200 (spBLEU) when its "
                      "SentencePiece model is available")
    demo.add_argument("--database", help="DuckDB file to write (default: "
                      "$CULTIVAR_HOME/db/demo.duckdb)")
    demo.add_argument("--live-localiser", action="store_true", help="run the weak demo localiser "
                      "(Gemma 3 270M, ~6 minutes on 2 cores) instead of playing back its "
                      "recorded answers")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run the whole pipeline as configured (cultivar.yaml)")
    run.add_argument("--database", help="DuckDB file to write (default: the settings' "
                     "database)")
    run.set_defaults(func=cmd_run)

    board = sub.add_parser("leaderboard", help="print the leaderboard from the database")
    board.add_argument("--database", help="DuckDB file to read (default: the settings' "
                       "database)")
    board.set_defaults(func=cmd_leaderboard)

    query = sub.add_parser("query", help="run SQL against the database (read-only)")
    query.add_argument("sql", help="the SQL to run, e.g. \"SELECT * FROM leaderboard\"")
    query.add_argument("--database", help="DuckDB file to read (default: the settings' "
                       "database)")
    query.add_argument("--format", choices=RECORD_FORMATS, default="table",
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
    add_models_parser(sub)
    add_score_parser(sub)
    add_significance_parser(sub)
    add_lm_eval_parsers(sub)
    sub.add_parser("locales", help="list the 27 Cultivar locales").set_defaults(func=cmd_locales)

    add_build_parser(sub)

    serve = sub.add_parser("serve", help="serve the built site on localhost")
    serve.add_argument("--directory", help="site folder (default: the settings' site.output_dir, "
                       "else $CULTIVAR_HOME/site)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (8000)")
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
        with secrets_redacted(), dagster_storage_errors(f"cultivar {args.command}"):
            code = args.func(args)
        if getattr(args, "exit_at_once", False):
            # `cultivar ui` after dagster dev: everything is written and closed; the interpreter's
            # teardown of Dagster's modules (seconds on a loaded machine) would count
            # against the stop time, so the process ends here (ours: os._exit after a flush)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except Interrupted as stop:  # SIGINT or SIGTERM: say where, exit as the signal would
        print_error(f"cultivar {args.command}: {stop}")
        return 128 + stop.signum
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # one clear line for users; the traceback with CULTIVAR_DEBUG=1
        if os.environ.get("CULTIVAR_DEBUG"):
            raise
        message = _disk_full_message(error) or str(error)
        print_error(f"cultivar {args.command}: error: {message}")
        return 1


class _DagsterStorageErrors:
    """``sys.stderr`` while a command runs: passes every text through except the dumps that
    Dagster writes there itself when its event log under ``home`` is on a full disk
    ("Exception while writing logger call to event log: " and the SQLite error, with its SQL
    and the event's payload: 4 lines each), which it counts (``dropped``)."""

    PREFIX = "Exception while writing logger call to event log: "

    def __init__(self, stream, home: Path) -> None:
        self._stream, self.home, self.dropped = stream, home, 0

    def write(self, text: str) -> int:
        from cultivar_assets.files import is_disk_full

        if text.startswith(self.PREFIX) and is_disk_full(RuntimeError(text), self.home):
            self.dropped += 1
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def dagster_storage_errors(who: str) -> Iterator[_DagsterStorageErrors]:
    """Keep Dagster's own dumps of a full disk under ``$DAGSTER_HOME`` off stderr
    (:class:`_DagsterStorageErrors`): a command that then fails says so in its one error line
    (:func:`_disk_full_message`); one that ends well says, in one line, how many log messages
    Dagster could not store."""
    from cultivar_assets.files import free_space
    from cultivar_assets.paths import dagster_home

    home = Path(os.environ.get("DAGSTER_HOME") or dagster_home())
    stream = sys.stderr
    errors = sys.stderr = _DagsterStorageErrors(stream, home)
    try:
        yield errors
    finally:
        sys.stderr = stream
    if errors.dropped:
        free = free_space(home)
        print(f"{who}: note: Dagster could not store {errors.dropped} log message(s) in its "
              f"event log under {home}: out of disk space"
              f"{f' ({free / 1e3:.1f} kB free on its filesystem)' if free is not None else ''}",
              file=sys.stderr)


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
            "run was applied whole or not at all, so what it materialised is kept", error))
    if not is_disk_full(error):
        return None
    # the free space of the named file's filesystem; none stated when no file is named (the
    # current directory's would describe another disk)
    named = next((c.filename for c in chain if isinstance(c, OSError) and c.filename), None)
    free = free_space(Path(named)) if named else None
    return (f"out of disk space{f' writing {named}' if named else ''}"
            f"{f' ({free / 1e6:.1f} MB free on its filesystem)' if free is not None else ''}: "
            f"{' '.join(str(error).split())}. Nothing already stored was lost: every database "
            "write and every output folder of this run was applied whole or not at all. Free "
            "some space and run again.")

if __name__ == "__main__":
    sys.exit(main())
