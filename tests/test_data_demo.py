"""The bundled demo dataset, loaded through ``load_benchmark(DataConfig())``."""

from __future__ import annotations

import json
import shutil

import pytest

from cultivar_assets.data.sources import DataConfig, demo_dataset_dir, load_benchmark

DEMO_LOCALES = [
    "cmn_Hans_China", "deu_Latn_Germany", "deu_Latn_Switzerland",
    "hin_Deva_India", "hin_Deva_US", "spa_Latn_Spain",
]
DEMO_LANGUAGES = ["cmn_Hans", "deu_Latn", "hin_Deva", "spa_Latn"]


@pytest.fixture(scope="module")
def demo():
    return load_benchmark(DataConfig())


def test_demo_and_real_data_never_share_a_database(tmp_path, monkeypatch):
    from cultivar_assets.settings import Settings

    monkeypatch.setenv("CULTIVAR_HOME", str(tmp_path))
    demo = Settings().database_path
    local = Settings(data=DataConfig(kind="local", cultivar_path="x")).database_path
    hub = Settings(data=DataConfig(kind="hub")).database_path
    assert len({demo, local, hub}) == 3
    assert all(path.parent == tmp_path / "db" for path in (demo, local, hub))


def test_demo_has_six_locales_four_languages_twelve_instances(demo):
    assert demo.is_demo is True
    assert sorted(demo.locales) == DEMO_LOCALES
    assert sorted(demo.languages) == DEMO_LANGUAGES
    assert demo.missing == []
    assert demo.notes == []
    assert "demo" in demo.source
    for locale, rows in demo.instances.items():
        assert len(rows) == 12, locale
        assert [r.instance_id for r in rows] == list(range(12))
        assert all(r.locale == locale for r in rows)
        for r in rows:
            assert r.source_localised and r.english_localised
            assert r.source_original and r.english_original


def test_demo_test_sets_flores_first_then_cultivar(demo):
    test_sets = demo.test_sets()
    assert len(test_sets) == 10
    flores, cultivar = test_sets[:4], test_sets[4:]
    assert [t.kind for t in flores] == ["flores"] * 4
    assert [t.kind for t in cultivar] == ["cultivar"] * 6
    assert sorted(t.name for t in flores) == [f"flores_{lang}" for lang in DEMO_LANGUAGES]
    assert sorted(t.name for t in cultivar) == [f"cultivar_{loc}" for loc in DEMO_LOCALES]
    for t in flores:
        assert t.locale is None
        assert t.name == f"flores_{t.language}"
    for t in cultivar:
        assert t.name == f"cultivar_{t.locale}"
        assert t.language == "_".join(t.locale.split("_")[:2])


def test_segment_ids_are_instance_ids_shared_by_original_and_localised(demo):
    by_name = {t.name: t for t in demo.test_sets()}
    for locale, rows in demo.instances.items():
        language = "_".join(locale.split("_")[:2])
        cultivar = by_name[f"cultivar_{locale}"]
        flores = by_name[f"flores_{language}"]
        assert [s.segment_id for s in cultivar.segments] == [r.instance_id for r in rows]
        flores_by_id = {s.segment_id: s for s in flores.segments}
        for row, segment in zip(rows, cultivar.segments, strict=True):
            assert (segment.source, segment.reference) == (
                row.source_localised, row.english_localised)
            original = flores_by_id[row.instance_id]
            assert (original.source, original.reference) == (
                row.source_original, row.english_original)


def test_flores_test_set_of_a_two_locale_language_is_the_union(demo):
    by_name = {t.name: t for t in demo.test_sets()}
    ids = set()
    for locale in ("deu_Latn_Germany", "deu_Latn_Switzerland"):
        ids |= {r.instance_id for r in demo.instances[locale]}
    assert [s.segment_id for s in by_name["flores_deu_Latn"].segments] == sorted(ids)
    # the localised versions differ from each other and from the original
    de, ch = by_name["cultivar_deu_Latn_Germany"], by_name["cultivar_deu_Latn_Switzerland"]
    assert de.segments[0].source != ch.segments[0].source
    assert de.segments[0].source != by_name["flores_deu_Latn"].segments[0].source


def test_fingerprint_is_stable_across_loads(demo):
    again = load_benchmark(DataConfig())
    assert again.fingerprint() == demo.fingerprint()
    assert len(demo.fingerprint()) == 64


def test_fingerprint_changes_when_a_text_changes(demo, tmp_path):
    copy = tmp_path / "demo"
    shutil.copytree(demo_dataset_dir(), copy)
    config = DataConfig(kind="local", cultivar_path=str(copy), locales=DEMO_LOCALES)
    same = load_benchmark(config)
    assert same.is_demo is False
    assert same.fingerprint() == demo.fingerprint()  # same instances, same missing items

    path = copy / "spa_Latn_Spain.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    rows[3]["english_localised"] += " (edited)"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    changed = load_benchmark(config)
    assert changed.fingerprint() != demo.fingerprint()


def test_demo_with_a_selection_of_locales():
    data = load_benchmark(DataConfig(locales=["hin_Deva_US", "spa_Latn_Spain"]))
    assert data.locales == ["hin_Deva_US", "spa_Latn_Spain"]
    assert [t.name for t in data.test_sets()] == [
        "flores_hin_Deva", "flores_spa_Latn", "cultivar_hin_Deva_US", "cultivar_spa_Latn_Spain"]
    assert any("deu_Latn_Germany" in note for note in data.notes)  # not selected, but noted
