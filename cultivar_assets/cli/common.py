"""What every ``cultivar`` command shares: the console and the settings its options select."""

from __future__ import annotations

import argparse
import os
import re
import sys

from cultivar_assets.settings import (
    Settings,
    database_path_problem,
    demo_settings,
    load_settings,
)


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
    database = getattr(args, "database", None)
    problem = None if database is None else database_path_problem(database)
    if problem:  # before the settings are read: nothing is done with a path that names no file
        raise ValueError(f"--database {problem}")
    settings = (demo_settings(live_localiser=args.live_localiser) if args.command == "demo"
                else load_settings(args.config))
    if getattr(args, "bleu_tokenize", None):
        settings.metrics = settings.metrics.model_copy(update={"bleu_tokenize": args.bleu_tokenize})
    if database is not None:
        settings.database = database
    return settings


# What a message may not carry to a terminal as it is: C0 control characters but tab and line
# feed (ESC starts an escape sequence, CR returns over the line), DEL, C1 controls (0x9b is a
# one-byte CSI), and the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
# U+2066–U+2069), which reorder what follows them.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every character of :data:`_UNPRINTABLE` written as its Python escape
    (``\\x1b``, ``\\u202e``): an input's escape sequences and bidi overrides are shown, not
    obeyed by the terminal."""
    return _UNPRINTABLE.sub(lambda match: match[0].encode("unicode_escape").decode("ascii"),
                            text)


def print_error(text: str) -> None:
    """Print a message of the command's (an error, a warning) to stderr: secrets redacted
    (:func:`cultivar_assets.secrets.redact`), then :func:`printable`. Every error message of the
    ``cultivar`` command goes through here (argparse's too: :class:`CultivarArgumentParser`)."""
    from cultivar_assets.secrets import redact

    print(printable(redact(text)), file=sys.stderr, flush=True)


class CultivarArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors (which repeat what was typed) are printable."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, printable(f"{self.prog}: error: {message}\n"))


RECORD_FORMATS = ("table", "csv", "json", "markdown")


def print_records(records: list[dict], columns: list[str], fmt: str) -> None:
    """Print every value in full: ``table`` wraps long cells instead of cutting them; ``csv``
    (RFC 4180, cells that would start a spreadsheet formula defused), ``json`` (an array of
    objects) and ``markdown`` are for other programs and documents. NULL for None."""
    from cultivar_assets.tables import csv_text, json_text, md_table, md_text

    if fmt == "csv":
        sys.stdout.write(csv_text(records, columns))
    elif fmt == "json":
        print(json_text(records, columns))
    elif fmt == "markdown":
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
