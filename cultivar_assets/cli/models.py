"""``cultivar models``: list and validate the model registry; ``cultivar models add``: add an entry
(validated first) and say whether the registry sensor will run it; ``cultivar models remove``:
remove a model (a registry entry, a scored submission) from the registry and the database."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cultivar_assets.cli.common import _settings
from cultivar_assets.settings import Settings
from cultivar_assets.tables import count


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
    print(f"{count(len(registry), 'model')}, registry valid", file=sys.stderr)
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
    if not args.hf_id and not args.id:
        raise ValueError("models add: give the Hugging Face repository (hf_id) or, for an entry "
                         "without weights such as a copy baseline, its --id")
    if args.revision and not args.hf_id:
        raise ValueError(f"models add: --revision {args.revision!r} pins weights, but no hf_id "
                         "is given")
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
    if args.hf_id and not args.revision:
        print("  revision: not pinned; pin it (--revision) before a run you publish")
    print("  " + _sensor_note(spec.id, path, settings))
    return 0


def _registry_files(args: argparse.Namespace, settings: Settings) -> list[Path]:
    """The registry files ``models remove`` edits: ``--file``; else the settings' models file
    (or the bundled one) and, where it exists, ``$CULTIVAR_HOME/submitted-models.yaml`` (where
    ``cultivar score`` registers submissions without a models file)."""
    from cultivar_assets.models import default_models_file
    from cultivar_assets.paths import cultivar_home

    if args.file:
        return [Path(args.file)]
    files = [Path(settings.models_file or default_models_file()),
             cultivar_home() / "submitted-models.yaml"]
    return [p for p in dict.fromkeys(files) if p.exists()]


def cmd_models_remove(args: argparse.Namespace) -> int:
    from cultivar_assets.models import ModelRegistryError, load_models, remove_model_entry
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.model_files import model_folder, remove_model_folder
    from cultivar_assets.store.records import remove_model_rows

    settings = _settings(args)
    model_id = args.model_id
    if model_id in settings.models:
        print(f"cultivar models remove: the settings' models select {model_id!r} by id; take it "
              "out of that list first. Nothing was removed.", file=sys.stderr)
        return 1
    try:
        holding = [p for p in _registry_files(args, settings) if model_id in load_models(p)]
    except ModelRegistryError as error:
        print(f"cultivar models remove: {error}\nNothing was removed.", file=sys.stderr)
        return 1
    database = settings.database_path
    removed = remove_model_rows(Store(database), model_id) if database.exists() else {}
    # its files under the storage root go too: model_results would load them again
    folder = model_folder(settings.storage_root, model_id)
    removed_folder = remove_model_folder(settings.storage_root, model_id)
    if not holding and not removed and not removed_folder:
        searched = ", ".join(map(str, _registry_files(args, settings))) or "none"
        print(f"cultivar models remove: no model {model_id!r} in the registry ({searched}) or "
              f"in the database {database}. Nothing was removed.", file=sys.stderr)
        return 1
    for path in holding:
        remove_model_entry(path, model_id)
        print(f"removed the registry entry {model_id} from {path}")
    if removed:
        print(f"removed {model_id}'s rows from {database}: " + ", ".join(
            f"{table} {n}" for table, n in removed.items()))
    if removed_folder:
        print(f"removed {model_id}'s files under the storage root: {folder}")
    print("  the site drops it at its next build; the results across models (locale rows, "
          "rank agreement, ranks) are recomputed without it by the next run (cultivar run)")
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


def add_models_parser(sub: argparse._SubParsersAction) -> None:
    """The ``models`` command and its ``add`` subcommand."""
    models = sub.add_parser("models", help="list and validate the model registry")
    models.add_argument("--ids", metavar="SELECTION",
                        help="print the ids of a selection (ids or suite:<name>, comma-separated)")
    models.set_defaults(func=cmd_models)
    models_sub = models.add_subparsers(dest="models_command")
    add = models_sub.add_parser("add", help="add a model to the registry (validated first)")
    add.add_argument("hf_id", nargs="?", help="Hugging Face repository of the weights, e.g. "
                     "Qwen/Qwen3.5-4B (none for a baseline without weights, such as "
                     "--engine copy-source: give --id)")
    add.add_argument("--type", required=True, choices=["LLM", "MT", "LLM+MT", "baseline"],
                     help="LLM, MT, LLM+MT or baseline (not a model)")
    add.add_argument("--engine", required=True, help="vllm, transformers, seq2seq, openai, ...")
    add.add_argument("--family", required=True, help="model family, e.g. 'Qwen 3.5'")
    add.add_argument("--id", help="model id (default: the repository name; required without "
                     "hf_id)")
    add.add_argument("--revision", help="commit or tag of hf_id to pin")
    add.add_argument("--prompt-style", help="default: chat-instruction (source for seq2seq)")
    add.add_argument("--params-total", type=float, help="total parameters, billions")
    add.add_argument("--params-active", type=float, help="active parameters, billions")
    add.add_argument("--suite", action="append", help="suite to join (repeatable)")
    add.add_argument("--option", action="append", help="engine option key=value (repeatable)")
    add.add_argument("--file", help="registry file (default: settings' models_file or the "
                     "bundled models.yaml)")
    add.set_defaults(func=cmd_models_add)
    remove = models_sub.add_parser("remove", help="remove a model (or a scored submission) from "
                                   "the registry and the database (docs/evaluating-models.md)")
    remove.add_argument("model_id", help="the model's id")
    remove.add_argument("--file", help="registry file (default: the settings' models_file or "
                        "the bundled models.yaml, and $CULTIVAR_HOME/submitted-models.yaml)")
    remove.add_argument("--database", help="DuckDB file (default: the settings' database)")
    remove.set_defaults(func=cmd_models_remove)
