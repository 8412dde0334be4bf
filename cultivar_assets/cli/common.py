"""What every ``cultivar`` command shares: the console and the settings its options select."""

from __future__ import annotations

import argparse
import os

from cultivar_assets.settings import Settings, demo_settings, load_settings


def _console():
    """A rich console; 160 columns wide when the output is not a terminal and $COLUMNS is not
    set (pipes and logs)."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(highlight=False, width=160)  # pipes and logs: room for the leaderboard
    return console


def _settings(args: argparse.Namespace) -> Settings:
    """The settings a command runs with: the demo's (``cultivar demo``) or the settings file's,
    with the command's ``--bleu-tokenize`` and ``--database`` applied."""
    settings = (demo_settings(live_localiser=args.live_localiser) if args.command == "demo"
                else load_settings(args.config))
    if getattr(args, "bleu_tokenize", None):
        settings.metrics = settings.metrics.model_copy(update={"bleu_tokenize": args.bleu_tokenize})
    if getattr(args, "database", None):
        settings.database = args.database
    return settings
