"""Every asset's code version is the digest of the code it runs (cultivar_assets/versions/code.py):
a change to one module changes exactly the versions of the assets that reach it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.assets.versioned import asset_code_version
from cultivar_assets.versions import code


@pytest.fixture
def fresh_digests():
    code.clear_cache()
    yield
    code.clear_cache()


def _versions() -> dict[str, str]:
    return {asset.key.to_user_string(): asset_code_version(asset)
            for asset in ASSETS if asset.is_executable}


def test_every_executable_asset_carries_its_computed_code_version():
    for asset in ASSETS:
        if not asset.is_executable:
            continue
        (spec,) = asset.specs
        assert spec.code_version == code.code_version(asset.op.compute_fn.decorated_fn)
        assert len(spec.code_version) == 64


def test_changing_a_function_level_import_changes_exactly_the_assets_reaching_it(
        monkeypatch, fresh_digests):
    # site_assets.charts imports cultivar_assets.site.charts inside its function (altair)
    site_assets_source = Path(code.module_file("cultivar_assets.assets.site_assets")).read_text()
    assert "from cultivar_assets.site import charts as site_charts" in site_assets_source
    assert not site_assets_source.startswith("from cultivar_assets.site import charts")
    target = code.module_file("cultivar_assets.site.charts")
    before = _versions()
    reaching = {asset.key.to_user_string() for asset in ASSETS if asset.is_executable
                and "cultivar_assets.site.charts" in code.reached_modules(
                    asset.op.compute_fn.decorated_fn)}
    assert "charts" in reaching and "translations" not in reaching

    real = code.read_bytes
    monkeypatch.setattr(code, "read_bytes", lambda path: real(path) + b"\n# changed\n"
                        if path == target else real(path))
    code.clear_cache()
    after = _versions()
    changed = {key for key in before if before[key] != after[key]}
    assert changed == reaching


def test_changing_sql_changes_the_versions_of_the_assets_that_read_sql(monkeypatch,
                                                                        fresh_digests):
    before = _versions()
    real = code.read_bytes
    monkeypatch.setattr(code, "read_bytes", lambda path: real(path) + b"\n-- changed\n"
                        if path.name == "writes.sql" else real(path))
    code.clear_cache()
    after = _versions()
    readers = {asset.key.to_user_string() for asset in ASSETS if asset.is_executable
               and "cultivar_assets.sqlfiles" in code.reached_modules(
                   asset.op.compute_fn.decorated_fn)}
    assert readers and {key for key in before if before[key] != after[key]} == readers


def test_the_closure_follows_relative_and_function_level_imports(tmp_path, fresh_digests):
    root = tmp_path / "cultivar_assets"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "top.py": "from . import helper\n\ndef run():\n    from .sub import deep\n",
        "helper.py": "X = 1\n",
        "unused.py": "Y = 2\n",
        "sub/__init__.py": "",
        "sub/deep.py": "def f():\n    from ..helper import X\n    import cultivar_assets.leaf\n",
        "leaf.py": "",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    assert code.module_closure(["cultivar_assets.top"], root) == {
        "cultivar_assets", "cultivar_assets.top", "cultivar_assets.helper",
        "cultivar_assets.sub", "cultivar_assets.sub.deep", "cultivar_assets.leaf"}


def test_a_functions_version_follows_the_values_and_helpers_of_its_module_it_names(
        tmp_path, monkeypatch, fresh_digests):
    import importlib

    source = ("LIMIT = 3\nOTHER = 4\n\n\ndef helper():\n    return LIMIT\n\n\n"
              "def asset_fn():\n    return helper()\n")
    (tmp_path / "cv_probe.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("cv_probe")
    base = code.code_version(probe.asset_fn)
    real = code.read_bytes

    def version_with(text: str) -> str:
        monkeypatch.setattr(code, "read_bytes", lambda path: text.encode()
                            if path.name == "cv_probe.py" else real(path))
        code.clear_cache()
        return code.code_version(probe.asset_fn)

    assert version_with(source.replace("OTHER = 4", "OTHER = 5")) == base  # not named
    assert version_with(source.replace("LIMIT = 3", "LIMIT = 5")) != base  # named by helper
    assert version_with(source.replace("return LIMIT", "return LIMIT + 1")) != base


def test_the_demos_returned_files_are_sources_not_code(monkeypatch, fresh_digests):
    """The bundled annotation files are what the demo's annotation folder holds: an edit makes
    its locale's annotations stale (a source asset), not every asset (a code version)."""
    before = _versions()
    real = code.read_bytes
    monkeypatch.setattr(code, "read_bytes", lambda path: real(path) + b"\n"
                        if path.name.endswith((".annotations.json", ".errors.json"))
                        or path.name in ("models.yaml", "demo_localiser_answers.json")
                        else real(path))
    code.clear_cache()
    assert _versions() == before
