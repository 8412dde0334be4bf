"""The digests behind the source assets' data versions (cultivar_assets/versions/inputs.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cultivar_assets.construction.config import demo_construction
from cultivar_assets.data.sources import DataConfig
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.settings import Settings
from cultivar_assets.versions import inputs


def test_a_section_digest_leaves_cache_folders_out_and_refuses_unknown_sections(tmp_path):
    settings = Settings()
    base = inputs.section_digest(settings, "engine")
    moved = settings.model_copy(update={"engine": EngineSettings(cache_dir=str(tmp_path))})
    assert inputs.section_digest(moved, "engine") == base
    changed = settings.model_copy(update={"engine": EngineSettings(max_new_tokens=7)})
    assert inputs.section_digest(changed, "engine") != base
    with pytest.raises(KeyError, match="'engines'"):
        inputs.section_digest(settings, "engines")


def test_an_annotation_file_changes_only_its_locales_digest(tmp_path):
    construction = demo_construction()
    folder = tmp_path / "annotations"
    shutil.copytree(construction.annotation.folder_path(), folder)
    construction.annotation = construction.annotation.model_copy(update={"folder": str(folder)})
    settings = Settings(construction=construction)
    locales = ["hin_Deva_US", "deu_Latn_Germany"]
    before = {loc: inputs.annotation_files_digest(settings, loc) for loc in locales}
    assert len(set(before.values())) == 2 and inputs.NONE not in before.values()
    (path,) = Path(folder).glob("hin_Deva_US-*.annotations.json")
    path.write_bytes(path.read_bytes() + b"\n")
    after = {loc: inputs.annotation_files_digest(settings, loc) for loc in locales}
    assert {loc for loc in locales if before[loc] != after[loc]} == {"hin_Deva_US"}
    assert inputs.annotation_files_digest(settings, "tur_Latn_Turkey") == inputs.NONE


def test_unpinned_hub_data_has_a_new_digest_at_every_observation():
    unpinned = Settings(data=DataConfig(kind="hub"))
    assert inputs.unpinned_hub_repos(unpinned) == ["pinzhenchen/Cultivar-flores"]
    assert inputs.data_files_digest(unpinned) != inputs.data_files_digest(unpinned)
    pinned = Settings(data=DataConfig(kind="hub", cultivar_revision="abc123"))
    assert inputs.data_files_digest(pinned) == inputs.data_files_digest(pinned)
    other = Settings(data=DataConfig(kind="hub", cultivar_revision="def456"))
    assert inputs.data_files_digest(other) != inputs.data_files_digest(pinned)
