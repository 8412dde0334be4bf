"""The paper's metric names are written once (metrics/registry.py: PAPER_METRICS) and the
paper's wide views (sql/views.sql) are rendered from that list."""

from __future__ import annotations

import ast
from pathlib import Path

import duckdb

import cultivar_assets
from cultivar_assets.metrics import registry
from cultivar_assets.store import database, migrations

PACKAGE = Path(cultivar_assets.__file__).parent


def test_the_paper_metrics_tuple_is_written_only_in_the_registry():
    """No module but the registry spells a tuple of metric names ("bleu", "chrf", ...): every
    default list of the paper's metrics is PAPER_METRICS."""
    names = {entry.name for entry in registry.BUILT_IN}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "metrics" / "registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Tuple | ast.List) and len(node.elts) >= 2
                    and all(isinstance(e, ast.Constant) and e.value in names for e in node.elts)):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def _views_for(monkeypatch, metrics: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    monkeypatch.setattr(database, "PAPER_METRICS", metrics)
    con = duckdb.connect()
    migrations.create(con)
    con.execute(database.views_script.__wrapped__())
    return con


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    return [row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()]


def test_the_wide_views_are_rendered_from_the_registry_list(monkeypatch):
    """With TER added to the list the wide views gain its columns, pivoted from
    raw.metric_values like BLEU's; the default list gives exactly the paper's columns."""
    default = _views_for(monkeypatch, registry.PAPER_METRICS)
    paper_columns = [c for c in _columns(default, "model_locale_deltas")
                     if c.endswith(("_bleu", "_chrf")) or "_bleu_" in c or "_chrf_" in c]
    assert len(paper_columns) == 2 * 10
    assert not [c for c in _columns(default, "leaderboard") if "ter" in c.split("_")]

    con = _views_for(monkeypatch, (*registry.PAPER_METRICS, "ter"))
    deltas = _columns(con, "model_locale_deltas")
    for side in ("flores", "cultivar", "delta"):
        assert {f"{side}_ter", f"{side}_ter_low", f"{side}_ter_high"} <= set(deltas)
    assert "delta_ter_excludes_zero" in deltas
    assert {"delta_ter", "ter_signature", "delta_ter_excludes_zero"} <= set(
        _columns(con, "leaderboard"))
    assert {"delta_ter", "delta_ter_low"} <= set(_columns(con, "locale_deltas"))
    assert "ter_signature" in _columns(con, "statistics_settings")
    con.execute("INSERT INTO raw.metric_values (level, model_id, locale, metric, quantity, value, "
                "low, high, excludes_zero, n) VALUES ('model_locale', 'm', 'en_SG', 'ter', "
                "'delta', 4.5, 1.0, 8.0, true, 3)")
    row = con.execute("SELECT delta_ter, delta_ter_low, delta_ter_high, delta_ter_excludes_zero, "
                      "delta_bleu FROM paper_metric_columns('model_locale')").fetchall()
    assert row == [(4.5, 1.0, 8.0, True, None)]
