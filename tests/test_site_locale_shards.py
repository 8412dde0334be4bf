"""The locale shards' own folder (site/locale_shards.py, the asset ``locale_shards``): the site
assembled with them equals a full build byte for byte, their files hard-linked; shards made
from another originals policy or dataset are refused (naming what differs) and leave the
published site as it was; a folder replaced while the site is built fails the build."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_site_model_parts import build, files

from cultivar_assets.files import read_manifest
from cultivar_assets.site import build as site_build
from cultivar_assets.site.locale_shards import (
    LocaleShardsError,
    current_locale_shards,
    read_locale_shards,
    write_locale_shards,
)
from cultivar_assets.versions.rows import folder_digest


@pytest.fixture(scope="module")
def store(tmp_path_factory, hostile_store_copy):
    return hostile_store_copy(tmp_path_factory.mktemp("locale-shards"))


def test_a_site_with_the_locale_shards_folder_equals_a_full_build(store, tmp_path):
    full = build(store, tmp_path / "full")
    manifest = write_locale_shards(store, tmp_path / "shards")
    assert manifest["files"] and all(p.startswith("data/locales/") for p in manifest["files"])
    assert current_locale_shards(store, tmp_path / "shards", None) == (tmp_path / "shards", None)
    assembled = build(store, tmp_path / "assembled", locale_shards=tmp_path / "shards")
    assert files(tmp_path / "assembled") == files(tmp_path / "full")
    assert full.digest == folder_digest(tmp_path / "full")
    assert assembled.digest == folder_digest(tmp_path / "assembled")
    for rel in manifest["files"]:
        assert os.path.samefile(tmp_path / "assembled" / rel, tmp_path / "shards" / rel)


def test_locale_shards_of_another_policy_or_none_are_refused(store, tmp_path):
    write_locale_shards(store, tmp_path / "shards", show_originals=False)
    found, why = current_locale_shards(store, tmp_path / "shards", True)
    assert found is None and "show_originals" in why and str(tmp_path / "shards") in why
    build(store, tmp_path / "site", show_originals=True)
    published = files(tmp_path / "site")
    with pytest.raises(LocaleShardsError, match="show_originals"):
        build(store, tmp_path / "site", show_originals=True, locale_shards=tmp_path / "shards")
    assert files(tmp_path / "site") == published
    found, why = current_locale_shards(store, tmp_path / "none", None)
    assert found is None and "no locale shards" in why
    # a file missing from the folder
    write_locale_shards(store, tmp_path / "shards", show_originals=True)
    first = read_manifest(tmp_path / "shards")["files"][0]
    (tmp_path / "shards" / first).unlink()
    found, why = current_locale_shards(store, tmp_path / "shards", True)
    assert found is None and first in why


def test_locale_shards_of_another_dataset_or_script_are_refused(store, tmp_path):
    made_from = write_locale_shards(store, tmp_path / "shards")["made_from"]
    assert read_locale_shards(tmp_path / "shards", made_from)["made_from"] == made_from
    with pytest.raises(LocaleShardsError, match="another dataset than"):
        read_locale_shards(tmp_path / "shards", {**made_from, "dataset": "another"})
    locale = next(iter(made_from["scripts"]))
    with pytest.raises(LocaleShardsError, match="another scripts than"):
        read_locale_shards(tmp_path / "shards", {
            **made_from, "scripts": {**made_from["scripts"], locale: "Other"}})


def test_locale_shards_replaced_while_the_site_is_built_fail_the_build(store, tmp_path,
                                                                       monkeypatch):
    write_locale_shards(store, tmp_path / "shards")
    site = tmp_path / "site"
    build(store, site, locale_shards=tmp_path / "shards")
    published = files(site)
    link_part = site_build._Build._link_part

    def replaced_first(self, folder, part):
        if os.fspath(folder) == os.fspath(tmp_path / "shards"):
            write_locale_shards(store, Path(folder))  # a new folder swapped in
        return link_part(self, folder, part)

    monkeypatch.setattr(site_build._Build, "_link_part", replaced_first)
    with pytest.raises(LocaleShardsError, match="replaced while the site was built"):
        build(store, site, locale_shards=tmp_path / "shards")
    assert files(site) == published
    shutil.rmtree(tmp_path / "shards")
