"""``cultivar leaderboard`` (and the leaderboard a run prints) show every aggregated metric: the
paper's BLEU and chrF columns, then ∆, FLORES and Cultivar of each further configured metric
(chrF++ and TER here), with its signature; the values are those of ``leaderboard_metrics``.
Fast: the command after what it reads is materialised again; slow: the whole run, which prints
the leaderboard too."""

from __future__ import annotations

import duckdb
import pytest

from cultivar_assets.cli import main
from cultivar_assets.tables import format_value


def test_the_leaderboard_has_the_columns_of_every_configured_metric(copy_baseline_home, capsys,
                                                                   monkeypatch):
    """``cultivar leaderboard`` in a copy of the session's finished run of the copy baseline
    (tests/pipeline_helpers.py) whose settings then add chrF++ and TER, and in which what the
    command reads is materialised again (the model's ``scores``, ``model_results`` and the
    ``leaderboard``), not the whole run (the run: the slow test below)."""
    import dagster as dg

    from cultivar_assets.assets.graph import ASSETS
    from cultivar_assets.resources import resources_from_settings

    monkeypatch.setenv("COLUMNS", "400")
    values = copy_baseline_home.config_values()
    values["metrics"]["metrics"] = ["bleu", "chrf", "chrf++", "ter"]
    config = copy_baseline_home.write_config(values)
    resources = resources_from_settings(copy_baseline_home.settings())
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", ["copy-source-baseline"])
        assert dg.materialize(ASSETS, selection=["scores"], partition_key="copy-source-baseline",
                              instance=instance, resources=resources).success
        # the leaderboard's run config asks for every model's statistics to be hashed
        result = dg.materialize(
            ASSETS, selection=["model_results", "leaderboard"], instance=instance,
            resources=resources,
            run_config={"ops": {"leaderboard": {"config": {"scan_statistics": True}}}})
        assert result.success
        kept = result.asset_materializations_for_node("leaderboard")[0].metadata["kept_digests"]
        assert kept.value.startswith("0 models' recorded, 1 hashed from their statistics")
        assert "asked to scan" in kept.value
    assert main(["--config", str(config), "leaderboard"]) == 0
    out = capsys.readouterr().out
    shown, ter_signature = _shown_and_signature(out, copy_baseline_home.database)
    assert shown == ["∆chrF++", "∆TER", "FLORES chrF++", "FLORES TER", "Cultivar chrF++",
                     "Cultivar TER"]
    assert f"TER signature: {ter_signature}" in out


def _shown_and_signature(out: str, database) -> tuple[list[str], str]:
    """The last six column headers of the leaderboard ``out`` shows, after checking that the
    copy baseline's six values under them are those of ``leaderboard_metrics`` in
    ``database``; the TER signature stored in ``statistics_metrics``."""
    header = next(line for line in out.splitlines() if "∆BLEU" in line and "┃" in line)
    cells = [c.strip() for c in header.strip("┃│ ").split("┃")]
    with duckdb.connect(str(database), read_only=True) as con:
        values = dict(((q, m), v) for q, m, v in con.execute(
            "SELECT quantity, metric, value FROM leaderboard_metrics WHERE level = 'model' AND "
            "model_id = 'copy-source-baseline'").fetchall())
        ter_signature = con.execute("SELECT signature FROM statistics_metrics "
                                    "WHERE metric = 'ter'").fetchone()[0]
    row = next(line for line in out.splitlines() if "copy-source-baseline" in line)
    shown = [c.strip() for c in row.strip("│ ").split("│")][-6:]
    assert shown == [format_value(values[(q, m)], f"{q}_{m}") for q in ("delta", "flores",
                     "cultivar") for m in ("chrf++", "ter")]
    return cells[-6:], ter_signature


@pytest.mark.slow  # the whole run; the fast test above materialises what the command reads
def test_the_cli_leaderboard_has_the_columns_of_every_configured_metric(copy_baseline_home,
                                                                      capsys, monkeypatch):
    """``cultivar run`` in a copy of the session's finished run of the copy baseline
    (tests/pipeline_helpers.py) whose settings then add chrF++ and TER: the scores and what
    reads them are made again."""
    monkeypatch.setenv("COLUMNS", "400")
    settings = copy_baseline_home.config_values()
    settings["metrics"]["metrics"] = ["bleu", "chrf", "chrf++", "ter"]
    config = copy_baseline_home.write_config(settings)
    assert main(["--config", str(config), "run"]) == 0
    run_output = capsys.readouterr().out
    assert main(["--config", str(config), "leaderboard"]) == 0
    out = capsys.readouterr().out
    shown, ter_signature = _shown_and_signature(out, copy_baseline_home.database)
    assert shown == ["∆chrF++", "∆TER", "FLORES chrF++", "FLORES TER", "Cultivar chrF++",
                     "Cultivar TER"]
    assert f"TER signature: {ter_signature}" in out
    assert "∆TER" in run_output and f"TER signature: {ter_signature}" in run_output

