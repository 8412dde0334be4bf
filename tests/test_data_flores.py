"""Original FLORES sentences: a fake release built in tmp_path, and the real FLORES-200 dev set."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from data_helpers import (
    cultivar_rows,
    fake_english,
    fake_source,
    make_flores_dir,
    shared_flores_dir,
    write_jsonl,
)

from cultivar_assets.data.flores import (
    LocalFlores,
    file_codes,
    read_originals,
)
from cultivar_assets.data.locales import source_languages
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import DataError

# --- candidate file names --------------------------------------------------------------------


def test_file_codes():
    assert file_codes("eng_Latn") == ["eng_Latn"]
    assert file_codes("deu_Latn") == ["deu_Latn"]
    assert file_codes("cmn_Hans") == ["cmn_Hans", "zho_Hans"]
    assert file_codes("fil_Latn") == ["fil_Latn", "tgl_Latn"]
    assert file_codes("gom_Deva") == ["gom_Deva"]
    with pytest.raises(DataError, match="'fra_Latn'"):
        file_codes("fra_Latn")


def test_local_flores_directory_must_exist(tmp_path):
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "missing"))):
        LocalFlores(tmp_path / "missing")


# --- a fake release in tmp_path --------------------------------------------------------------


def test_fake_release_dev_files(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(6),
                                      "deu_Latn": fake_source("de", 6)})
    sources, english, missing = read_originals(LocalFlores(root), ["deu_Latn"], [5, 1, 3])
    assert missing == {}
    assert sources == {"deu_Latn": {1: "de made-up dev line 1", 3: "de made-up dev line 3",
                                    5: "de made-up dev line 5"}}
    assert english[5] == "Made-up English dev line 5."
    assert sorted(english) == [1, 3, 5]


def test_old_flores_plus_layout_dev_dot_code(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "dev.eng_Latn").write_text("e0\ne1\n", "utf-8")
    (dev / "dev.spa_Latn").write_text("s0\ns1\n", "utf-8")
    sources, english, _ = read_originals(LocalFlores(tmp_path), ["spa_Latn"], [1])
    assert (sources["spa_Latn"][1], english[1]) == ("s1", "e1")


def test_flores200_names_are_used_when_the_flores_plus_name_is_absent(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(3), "zho_Hans": fake_source("zh", 3),
                                      "tgl_Latn": fake_source("tl", 3)})
    sources, _, missing = read_originals(LocalFlores(root), ["cmn_Hans", "fil_Latn"], [0])
    assert missing == {}
    assert sources == {"cmn_Hans": {0: "zh made-up dev line 0"},
                       "fil_Latn": {0: "tl made-up dev line 0"}}


def test_flores_plus_name_wins_over_flores200_name(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(2),
                                      "zho_Hans": fake_source("old", 2),
                                      "cmn_Hans": fake_source("new", 2)})
    sources, _, _ = read_originals(LocalFlores(root), ["cmn_Hans"], [1])
    assert sources["cmn_Hans"][1] == "new made-up dev line 1"


def test_parquet_layout_is_sorted_by_id(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    order = [3, 0, 4, 1, 2]
    pq.write_table(pa.table({"id": order, "text": [f"E{i}" for i in order]}),
                   dev / "eng_Latn.parquet")
    pq.write_table(pa.table({"text": [f" D{i} " for i in order], "id": order}),
                   dev / "deu_Latn.parquet")
    reader = LocalFlores(tmp_path)
    assert reader.read(["eng_Latn"]) == ["E0", "E1", "E2", "E3", "E4"]
    sources, english, _ = read_originals(reader, ["deu_Latn"], [0, 2, 4])
    assert [(i, sources["deu_Latn"][i], english[i]) for i in (0, 2, 4)] == [
        (0, "D0", "E0"), (2, "D2", "E2"), (4, "D4", "E4")]


def test_parquet_without_text_column_raises(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    pq.write_table(pa.table({"id": [0], "sentence": ["x"]}), dev / "eng_Latn.parquet")
    with pytest.raises(DataError, match="no 'text' column"):
        LocalFlores(tmp_path).read(["eng_Latn"])


def test_misaligned_line_counts_raise(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(5),
                                      "deu_Latn": fake_source("de", 4)})
    with pytest.raises(DataError) as info:
        read_originals(LocalFlores(root), ["deu_Latn"], [0])
    # both files named, with their counts (the message named neither file)
    german, english = (re.escape(str(root / "dev" / name)) for name in ("deu_Latn.dev",
                                                                         "eng_Latn.dev"))
    assert re.search(rf"{german}\D*\b4\b.*{english}\D*\b5\b", str(info.value))


def test_empty_lines_name_the_file(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(5),
                                      "deu_Latn": fake_source("de", 5)})
    path = root / "dev" / "deu_Latn.dev"
    lines = path.read_text("utf-8").split("\n")
    lines[2] = ""
    path.write_text("\n".join(lines), "utf-8")
    with pytest.raises(DataError, match=rf"{re.escape(str(path))}.*\[2\]"):
        read_originals(LocalFlores(root), ["deu_Latn"], [0, 2])


def test_a_directory_where_a_flores_file_belongs_is_named(tmp_path):
    """A directory named deu_Latn.dev was taken for a missing language (the run went on, exit 0,
    with every ∆ of German shown as '–')."""
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(5)})
    (root / "dev" / "deu_Latn.dev").mkdir()
    named = re.escape(str(root / "dev" / "deu_Latn.dev"))
    with pytest.raises(DataError, match=rf"{named}.*directory"):
        read_originals(LocalFlores(root), ["deu_Latn"], [0])


def test_missing_english_raises(tmp_path):
    root = make_flores_dir(tmp_path, {"deu_Latn": fake_source("de", 5)})
    with pytest.raises(DataError, match=rf"English.*{re.escape(str(root))}") as info:
        read_originals(LocalFlores(root), ["deu_Latn"], [0])
    assert "eng_Latn" in str(info.value)


def test_last_line_without_newline_is_kept(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "eng_Latn.dev").write_text("e0\ne1\ne2", "utf-8")
    (dev / "deu_Latn.dev").write_text("d0\nd1\nd2\n", "utf-8")
    reader = LocalFlores(tmp_path)
    assert reader.read(["eng_Latn"]) == ["e0", "e1", "e2"]
    sources, english, _ = read_originals(reader, ["deu_Latn"], [2])
    assert (sources["deu_Latn"][2], english[2]) == ("d2", "e2")


def test_stray_whitespace_is_stripped(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "eng_Latn.dev").write_bytes(b"  e0 \r\n\te1\t\r\n")
    (dev / "deu_Latn.dev").write_text(" d0\nd1   \n", "utf-8")
    reader = LocalFlores(tmp_path)
    assert reader.read(["eng_Latn"]) == ["e0", "e1"]
    assert reader.read(["deu_Latn"]) == ["d0", "d1"]


def test_unicode_line_separators_do_not_split_lines(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "eng_Latn.dev").write_text("a\u2028b\nc\x85d\n", "utf-8")
    assert LocalFlores(tmp_path).read(["eng_Latn"]) == ["a\u2028b", "c\x85d"]


def test_ids_out_of_range_and_empty_english_lines_raise(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": ["e0", "", "e2"], "deu_Latn": ["d0", "d1", "d2"]})
    reader = LocalFlores(root)
    with pytest.raises(DataError, match=r"\[3\].*\b3\b"):
        read_originals(reader, ["deu_Latn"], [0, 3])
    with pytest.raises(DataError, match=r"\[-1\]"):
        read_originals(reader, ["deu_Latn"], [-1])
    with pytest.raises(DataError, match=r"empty.*\[1\]"):
        read_originals(reader, ["deu_Latn"], [1])


def test_empty_source_line_raises(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": ["e0", "e1", "e2"],
                                      "deu_Latn": ["d0", "  ", "d2"]})
    with pytest.raises(DataError, match="empty"):
        read_originals(LocalFlores(root), ["deu_Latn"], [0, 1])


def test_null_text_in_parquet_is_not_the_string_none(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    pq.write_table(pa.table({"id": [0, 1], "text": ["e0", "e1"]}), dev / "eng_Latn.parquet")
    pq.write_table(pa.table({"id": [0, 1], "text": [None, "d1"]}), dev / "deu_Latn.parquet")
    with pytest.raises(DataError, match=r"deu_Latn\.parquet: id 0\b.*\btext\b"):
        read_originals(LocalFlores(tmp_path), ["deu_Latn"], [0, 1])


def test_missing_language_is_reported_or_fails(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": fake_english(3),
                                      "deu_Latn": fake_source("de", 3)})
    reader = LocalFlores(root)
    sources, _, missing = read_originals(reader, ["deu_Latn", "spa_Latn"], [0])
    assert list(sources) == ["deu_Latn"]
    assert list(missing) == ["spa_Latn"]
    assert "no FLORES file for spa_Latn" in missing["spa_Latn"]
    assert str(root) in missing["spa_Latn"]


def test_load_benchmark_with_fake_flores_replaces_dataset_originals(tmp_path):
    data_dir = tmp_path / "cultivar"
    write_jsonl(data_dir / "spa_Latn_Spain.jsonl", cultivar_rows("spa_Latn_Spain", [1, 2]))
    flores = make_flores_dir(tmp_path / "flores",
                             {"eng_Latn": fake_english(4), "spa_Latn": fake_source("es", 4)})
    data = load_benchmark(DataConfig(kind="local", cultivar_path=str(data_dir),
                                     locales=["spa_Latn_Spain"], flores="local",
                                     flores_path=str(flores)))
    rows = data.instances["spa_Latn_Spain"]
    assert [(r.source_original, r.english_original) for r in rows] == [
        ("es made-up dev line 1", "Made-up English dev line 1."),
        ("es made-up dev line 2", "Made-up English dev line 2.")]
    assert "FLORES files in" in data.source


# --- the real FLORES-200 dev set (skipped when ../shared/data/flores200 is absent) -----------

REAL_IDS = [0, 2, 5, 996]


@pytest.fixture(scope="module")
def real_flores():
    return LocalFlores(shared_flores_dir())


@pytest.fixture(scope="module")
def real_english(real_flores):
    return real_flores.read(["eng_Latn"])


def test_real_english_dev_has_997_lines(real_english):
    assert len(real_english) == 997
    assert real_english[0].startswith("On Monday")
    assert all(real_english)


def test_real_flores_all_21_languages(real_flores, real_english):
    sources, english, missing = read_originals(real_flores, list(source_languages()), REAL_IDS)
    assert len(source_languages()) == 21
    assert list(sources) == [lang for lang in source_languages() if lang != "gom_Deva"]
    assert english == {i: real_english[i] for i in REAL_IDS}
    for language, by_id in sources.items():
        assert sorted(by_id) == REAL_IDS
        assert all(by_id[i] and by_id[i] != english[i] for i in REAL_IDS), language
    assert list(missing) == ["gom_Deva"]
    assert "FLORES-200" in missing["gom_Deva"] and "FLORES+" in missing["gom_Deva"]


def test_real_flores_renamed_languages_come_from_flores200_files(real_flores):
    sources, _, _ = read_originals(real_flores, ["cmn_Hans", "fil_Latn"], REAL_IDS)
    zho = real_flores.read(["zho_Hans"])
    tgl = real_flores.read(["tgl_Latn"])
    assert sources["cmn_Hans"] == {i: zho[i] for i in REAL_IDS}
    assert sources["fil_Latn"] == {i: tgl[i] for i in REAL_IDS}
    assert len(zho) == len(tgl) == 997


def test_real_flores_id_out_of_range(real_flores):
    with pytest.raises(DataError, match=r"\[997\].*\b997\b"):
        read_originals(real_flores, ["deu_Latn"], [0, 997])


def test_read_originals_on_real_flores(real_flores, real_english):
    sources, english, missing = read_originals(real_flores, ["deu_Latn", "gom_Deva"], [5])
    assert list(sources) == ["deu_Latn"]
    assert english == {5: real_english[5]}
    assert list(missing) == ["gom_Deva"]


def test_load_benchmark_local_dataset_with_real_flores(tmp_path, real_flores, real_english):
    data_dir = tmp_path / "cultivar"
    write_jsonl(data_dir / "deu_Latn_Germany.jsonl", [
        {"id": 0, "locale": "deu_Latn_Germany",
         "source_localised": "Am Montag gewann der erfundene Verein in Musterstadt.",
         "english_localised": "On Monday the made-up club won in Sample Town."},
        {"id": 2, "locale": "deu_Latn_Germany",
         "source_localised": "Die erfundene Bürgermeisterin eröffnete eine Brücke.",
         "english_localised": "The made-up mayor opened a bridge."},
    ])
    write_jsonl(data_dir / "gom_Deva_India.jsonl", [
        {"id": 0, "locale": "gom_Deva_India", "source_localised": "कल्पित वाक्य शून्य",
         "english_localised": "Invented sentence zero."},
        {"id": 2, "locale": "gom_Deva_India", "source_localised": "कल्पित वाक्य दोन",
         "english_localised": "Invented sentence two."},
    ])
    config = DataConfig(kind="local", cultivar_path=str(data_dir),
                        locales=["deu_Latn_Germany", "gom_Deva_India"],
                        flores="local", flores_path=str(shared_flores_dir()))
    data = load_benchmark(config)
    german = real_flores.read(["deu_Latn"])

    de = data.instances["deu_Latn_Germany"]
    assert [(r.instance_id, r.source_original, r.english_original) for r in de] == [
        (0, german[0], real_english[0]), (2, german[2], real_english[2])]
    assert de[0].english_original.startswith("On Monday")

    gom = data.instances["gom_Deva_India"]
    assert [r.source_original for r in gom] == [None, None]
    assert [r.english_original for r in gom] == [real_english[0], real_english[2]]
    assert gom[1].source_localised == "कल्पित वाक्य दोन"

    [item] = data.missing
    assert (item.test_set, item.kind, item.language) == ("flores_gom_Deva", "flores", "gom_Deva")
    assert "FLORES+" in item.reason

    names = [t.name for t in data.test_sets()]
    assert names == ["flores_deu_Latn", "cultivar_deu_Latn_Germany", "cultivar_gom_Deva_India"]
    gom_set = data.test_sets()[-1]
    assert [(s.segment_id, s.reference) for s in gom_set.segments] == [
        (0, "Invented sentence zero."), (2, "Invented sentence two.")]

    with pytest.raises(DataError, match="flores_gom_Deva"):
        load_benchmark(config.model_copy(update={"on_missing": "fail"}))
