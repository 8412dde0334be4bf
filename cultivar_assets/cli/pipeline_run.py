"""Running the pipeline from the command line and printing its results (``cultivar run``,
``cultivar demo``, ``cultivar score``; ``cultivar leaderboard`` prints the same table)."""

from __future__ import annotations

from pathlib import Path

from cultivar_assets.cli.build import _hand_in_line, print_table1
from cultivar_assets.cli.common import _console, printable
from cultivar_assets.settings import Settings


def _with_other_metrics(rows: list[dict], values: list[dict]
                        ) -> tuple[list[dict], list[tuple[str, str]], list[str]]:
    """The leaderboard ``rows`` with the columns of the metrics beyond BLEU and chrF (``values``:
    rows of ``leaderboard_metrics`` at level ``model``: model_id, metric, label, quantity,
    value, signature): the rows with ``<quantity>_<key>`` values, the (key, header) columns to
    add after the paper's (:func:`cultivar_assets.tables.leaderboard_columns`; ∆, FLORES,
    Cultivar of each metric, in the stored order) and one "<label>: <signature>" line per
    metric."""
    from cultivar_assets.metrics.registry import column_key
    from cultivar_assets.tables import QUANTITY_HEADERS as headers

    by_model: dict[str, dict] = {}
    columns: dict[str, str] = {}
    signatures: dict[str, str] = {}
    for quantity in headers:  # ∆ columns first, as for the paper's metrics
        for v in values:
            if v["quantity"] != quantity:
                continue
            key = f"{quantity}_{column_key(v['metric'])}"
            columns.setdefault(key, headers[quantity].format(v["label"]))
            by_model.setdefault(v["model_id"], {})[key] = v["value"]
            signatures.setdefault(v["metric"], f"{v['label']}: {v['signature']}")
    merged = [{**row, **by_model.get(row["model_id"], {})} for row in rows]
    return merged, list(columns.items()), list(signatures.values())


def _print_leaderboard(rows: list[dict], other_metrics: list[dict] = ()) -> None:
    """The leaderboard as a table, the paper's columns then those of every other aggregated
    metric (``other_metrics``: the ``leaderboard_other_metrics`` rows), with the signatures."""
    from rich.table import Table

    from cultivar_assets.metrics.registry import paper_metric_labels
    from cultivar_assets.tables import format_value, leaderboard_columns, signature_text

    paper = paper_metric_labels()
    rows, extra, extra_signatures = _with_other_metrics(rows, list(other_metrics))
    columns = [*leaderboard_columns(paper), *extra]
    table = Table(title="Cultivar leaderboard (sorted by ∆BLEU, as in the paper's Table 3)")
    for key, header in columns:
        table.add_column(header, justify="left" if key in ("model_id", "type") else "right")
    for row in rows:
        table.add_row(*(format_value(row.get(key), key) for key, _ in columns))
    console = _console()
    console.print(table)
    for lines in sorted({tuple(signature_text(r, key, f"{label} signature")
                               for key, label in paper) for r in rows}):
        console.print("\n".join(lines))
    for line in extra_signatures:
        console.print(f"{line.split(': ', 1)[0]} signature: {line.split(': ', 1)[1]}")


def selection_text(selection: list[str]) -> str:
    """A model selection in words: ``suite:<name>`` is "the models of suite <name>", an id
    itself: ["suite:demo", "m-1"] is "the models of suite demo and m-1"."""
    parts = [f"the models of suite {item.split(':', 1)[1]}" if item.startswith("suite:")
             else item for item in selection]
    return (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else "".join(parts)


def run_and_report(settings: Settings) -> int:
    """``cultivar run`` / ``demo`` / ``score``: run the pipeline on ``settings`` and print what
    this run computed or verified (the leaderboard, notes, the built dataset's Table 1, where the
    database and the site are, the stages' times); 0 when it finished. Text that comes from
    inputs (file names, notes, reasons) is printed as it is, never read as markup, with escape
    sequences and bidi overrides escaped (:func:`printable`)."""
    from cultivar_assets.runner import run_pipeline

    console = _console()
    built = settings.data.kind == "built"
    if settings.data.kind == "demo" or (built and settings.construction.source.kind == "demo"):
        from cultivar_assets.construction.localisation.drafts import configured_localiser

        localiser = configured_localiser(settings.construction.localisation)
        how = (f"built here from its original sentences (selection, drafts: {localiser}, the "
               "shipped demo annotation files) and " if built else "")
        console.print("Cultivar demo: DEMO data (written for this project, not FLORES or "
                      f"Cultivar), {how}evaluated with {selection_text(settings.models)}")
    if settings.metrics.bleu_tokenize != "flores200":
        console.print(f"BLEU tokenizer: {settings.metrics.bleu_tokenize} (selected explicitly; the "
                      "paper's spBLEU uses flores200, whose SentencePiece model is not bundled: "
                      "see docs/metrics.md)")
    from cultivar_assets.site.query_engine import will_fetch

    notice = will_fetch(settings.site.query_page, settings.site.web_cache_path())
    if notice:  # said once, before the run reaches the network (the site asset runs npm)
        console.print(notice[0].upper() + notice[1:], markup=False)
    result = run_pipeline(settings, say=lambda text: console.print(printable(text), markup=False))
    verified = result.verified  # read with the leaderboard: what this run computed or verified
    _print_leaderboard(result.leaderboard, verified["leaderboard_other_metrics"])
    _print_submitted(verified["site_models"], {row["model_id"] for row in result.leaderboard})
    _print_missing(verified["dataset_notes"], verified["missing_test_sets"])
    if result.build is not None:
        demo = " (DEMO annotation files: the final pairs are the bundled demo data)" if (
            result.build.is_demo) else ""
        print_table1(result.build.table1, "Table 1, computed from the annotation files" + demo)
        tools = sorted(result.build.tools.items())
        folder = str(Path(tools[0][1]).parent.parent) if tools else ""
        console.print(f"Post-editing tool pages: {folder}/<locale>/index.html (e.g. "
                      f"{tools[0][1] if tools else '-'}; open one in a browser)")
        console.print(_hand_in_line(settings))
        console.print(printable(f"Dataset: {result.build.dataset_folder}"), markup=False)
    console.print(f"\nDatabase: {result.database}")
    console.print(f"Site: {result.site}/index.html (open it, or: cultivar serve)")
    from cultivar_assets.files import read_manifest

    for note in (read_manifest(Path(result.site)) or {}).get("notes", []):
        console.print(printable(f"Site note: {note}"), markup=False)
    console.print("Time: " + ", ".join(
        f"{name} {'fresh' if name in result.fresh else f'{seconds:.0f} s'}"
        for name, seconds in result.stages))
    if result.fresh:
        console.print(f"Fresh in Dagster, nothing materialised: {len(result.fresh)} of "
                      f"{len(result.stages)} stages (cultivar ui shows each asset's status)")
    console.print(f"Finished in {result.seconds:.0f} s. Query it: cultivar query "
                  "\"SELECT * FROM locale_deltas\"; browse the runs: cultivar ui")
    return 0


def _print_submitted(site_models: list[dict], shown: set[str]) -> None:
    """For each model of the leaderboard whose outputs were submitted: "<id>: outputs
    submitted, produced with <system> <version>, not run here" (from its stored run record,
    ``site_models``' rows)."""
    from cultivar_assets.engines.outputs import submitted_note

    for row in site_models:
        note = submitted_note(row["engine"], row["engine_version"])
        if note and row["model_id"] in shown:
            _console().print(printable(f"{row['model_id']}: {note}"), markup=False)


def _print_missing(notes: list[dict], missing: list[dict]) -> None:
    """The data's notes (files not read, locales left out; ``dataset_notes``' rows) and the test
    sets it could not provide (``missing_test_sets``' rows), each with its reason (a ∆ shown as
    '–' is otherwise unexplained)."""
    for row in notes:  # e.g. files that name no locale, not read
        _console().print(printable(f"Data note: {row['note']}"), markup=False)
    if missing:
        _console().print(f"Not evaluated: {len(missing)} test set(s) missing from the data "
                         "(their ∆ is '–'):")
        for row in missing:
            _console().print(printable(f"  {row['test_set']}: {row['reason']}"), markup=False)
