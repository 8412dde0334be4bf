"""The ``cultivar`` command line."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from cultivar_assets.settings import Settings, load_settings


def _console():
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:  # pipes and logs: wide enough for the leaderboard
        console = Console(highlight=False, width=160)
    return console


def _print_leaderboard(rows: list[dict]) -> None:
    from rich.table import Table

    from cultivar_assets.reporting import LEADERBOARD_COLUMNS, format_value

    table = Table(title="Cultivar leaderboard (sorted by ∆BLEU, as in the paper's Table 3)")
    for key, header in LEADERBOARD_COLUMNS:
        table.add_column(header, justify="left" if key in ("model_id", "type") else "right")
    for row in rows:
        table.add_row(*(format_value(row.get(key), key) for key, _ in LEADERBOARD_COLUMNS))
    console = _console()
    console.print(table)
    for signature in sorted({(r["bleu_signature"], r["chrf_signature"]) for r in rows}):
        console.print(f"BLEU signature: {signature[0]}\nchrF signature: {signature[1]}")


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(args.config)
    if getattr(args, "bleu_tokenize", None):
        settings.metrics = settings.metrics.model_copy(update={"bleu_tokenize": args.bleu_tokenize})
    if getattr(args, "database", None):
        settings.database = args.database
    return settings


def cmd_demo(args: argparse.Namespace) -> int:
    from cultivar_assets.demo import run_pipeline

    console = _console()
    settings = _settings(args)
    if settings.data.kind == "demo":
        console.print("Cultivar demo: bundled DEMO data (written for this project, not FLORES or "
                      "Cultivar), models of " + ", ".join(settings.models))
    if settings.metrics.bleu_tokenize != "flores200":
        console.print(f"BLEU tokenizer: {settings.metrics.bleu_tokenize} (selected explicitly; the "
                      "paper's spBLEU uses flores200, whose SentencePiece model is not bundled: "
                      "see README, 'Metrics')")
    result = run_pipeline(settings, say=console.print)
    _print_leaderboard(result.leaderboard)
    console.print(f"\nDatabase: {result.database}")
    console.print(f"Finished in {result.seconds:.0f} s. Query it: cultivar query "
                  "\"SELECT * FROM locale_deltas\"; browse the runs: cultivar ui")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from cultivar_assets.store.database import Store

    _print_leaderboard(Store(_settings(args).database_path).query("leaderboard"))
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from rich.table import Table

    from cultivar_assets.store.database import Store

    store = Store(_settings(args).database_path)
    with store.connect(read_only=True) as con:
        cursor = con.execute(args.sql)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall()
    table = Table(*columns)
    for row in rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    _console().print(table)
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    from cultivar_assets.demo import ensure_dagster_home

    home = ensure_dagster_home()
    workspace = Path(__file__).resolve().parent.parent / "workspace.yaml"
    command = ["dagster", "dev"]
    if workspace.is_file():
        command += ["-w", str(workspace)]
    else:  # installed from a wheel: no workspace.yaml beside the package
        command += ["-m", "cultivar_assets.definitions"]
    print(f"DAGSTER_HOME={home}; starting: {' '.join(command)}", flush=True)
    return subprocess.call(command, env=os.environ.copy())


def cmd_models(args: argparse.Namespace) -> int:
    from cultivar_assets.models import load_models

    settings = _settings(args)
    registry = load_models(settings.models_file)
    for name in registry:
        spec = registry.get(name)
        print(f"{spec.id:40s} {spec.type:9s} {spec.engine:14s} {spec.prompt_style:22s} "
              f"{','.join(spec.suites)}")
    print(f"{len(registry)} models, registry valid", file=sys.stderr)
    return 0


def cmd_locales(args: argparse.Namespace) -> int:
    from cultivar_assets.data.locales import all_locales

    for loc in all_locales():
        mark = "" if loc.official_or_de_facto else "  (not official/de facto there)"
        print(f"{loc.key:24s} {loc.language_name:24s} {loc.location}{mark}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cultivar", description=__doc__)
    parser.add_argument("--config", help="settings file (default: $CULTIVAR_CONFIG or "
                        "./cultivar.yaml; without one, the demo defaults)")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the whole pipeline on the embedded default")
    demo.add_argument("--bleu-tokenize", help="BLEU tokenizer, e.g. flores200 (spBLEU) when its "
                      "SentencePiece model is available")
    demo.add_argument("--database", help="DuckDB file to write")
    demo.set_defaults(func=cmd_demo)

    board = sub.add_parser("leaderboard", help="print the leaderboard from the database")
    board.add_argument("--database")
    board.set_defaults(func=cmd_leaderboard)

    query = sub.add_parser("query", help="run SQL against the database (read-only)")
    query.add_argument("sql")
    query.add_argument("--database")
    query.set_defaults(func=cmd_query)

    sub.add_parser("ui", help="open the Dagster UI on the local instance").set_defaults(
        func=cmd_ui)
    sub.add_parser("models", help="list and validate the model registry").set_defaults(
        func=cmd_models)
    sub.add_parser("locales", help="list the 27 Cultivar locales").set_defaults(func=cmd_locales)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # one clear line for users; the traceback with CULTIVAR_DEBUG=1
        if os.environ.get("CULTIVAR_DEBUG"):
            raise
        print(f"cultivar {args.command}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
