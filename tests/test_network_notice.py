"""A run that reaches the network says so once, before it does: what, from where, how large and
where it is kept (the site's Query page fetches DuckDB-Wasm with npm)."""

from __future__ import annotations

import os

import pytest

from cultivar_assets.site.query_engine import (
    QueryEngineError,
    engine_folder,
    fetch_query_engine,
    will_fetch,
)


@pytest.fixture
def fake_npm(tmp_path, monkeypatch):
    """An npm that names a local registry and fails to install anything (nothing is fetched)."""
    npm = tmp_path / "npm"
    npm.write_text("#!/bin/sh\nif [ \"$1\" = config ]; then echo http://127.0.0.1:9/; exit 0; "
                   "fi\necho \"npm $1: no registry here\" >&2\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setenv("CULTIVAR_NPM", str(npm))
    return npm


def test_the_notice_says_what_from_where_how_much_and_where_kept(tmp_path, fake_npm):
    notice = will_fetch("auto", tmp_path / "web")
    assert notice is not None and "network" in notice
    assert "npm ci" in notice and "@duckdb/duckdb-wasm " in notice
    assert "http://127.0.0.1:9/" in notice and "49 MB" in notice
    assert str(engine_folder(tmp_path / "web")) in notice
    assert "query_page: cached" in notice


@pytest.mark.parametrize("mode", ["cached", "off"])
def test_modes_that_never_fetch_say_nothing(tmp_path, fake_npm, mode):
    assert will_fetch(mode, tmp_path / "web") is None


def test_without_npm_nothing_is_announced(tmp_path, monkeypatch):
    monkeypatch.setenv("CULTIVAR_NPM", "")
    assert will_fetch("auto", tmp_path / "web") is None


def test_the_fetch_says_it_before_npm_runs(tmp_path, fake_npm):
    said: list[str] = []
    with pytest.raises(QueryEngineError, match=r"\bnpm ci\b"):
        fetch_query_engine(tmp_path / "web", said.append)
    assert len(said) == 1 and "network" in said[0] and "npm ci" in said[0]
    assert not os.path.exists(engine_folder(tmp_path / "web"))
