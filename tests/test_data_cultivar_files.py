"""Local Cultivar datasets in the project's published format (JSONL / parquet, two layouts)."""

from __future__ import annotations

import json
import re

import pytest
from data_helpers import (
    cultivar_rows,
    original_english,
    original_source,
    write_jsonl,
    write_parquet,
)
from pydantic import ValidationError

from cultivar_assets.data.cultivar_files import find_locale_files, read_locale
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import DataError
from cultivar_assets.registry import UnknownEntryError

DE, CH, ES = "deu_Latn_Germany", "deu_Latn_Switzerland", "spa_Latn_Spain"


def local(root, locales=(DE, ES), **kwargs) -> DataConfig:
    return DataConfig(kind="local", cultivar_path=str(root), locales=list(locales), **kwargs)


def check_loaded(data, ids_by_locale: dict[str, list[int]]) -> None:
    assert data.is_demo is False
    assert data.missing == []
    assert data.locales == list(ids_by_locale)
    for locale, ids in ids_by_locale.items():
        rows = data.instances[locale]
        assert [r.instance_id for r in rows] == ids
        language = "_".join(locale.split("_")[:2])
        for r in rows:
            assert r.source_localised == f"[{locale}] localised sentence {r.instance_id}"
            assert r.english_localised == f"Localised English for {locale}, number {r.instance_id}."
            assert r.source_original == original_source(language, r.instance_id)
            assert r.english_original == original_english(r.instance_id)


# --- layouts and formats ---------------------------------------------------------------------


def test_flat_jsonl_layout(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [4, 0, 2]))  # unordered on disk
    write_jsonl(tmp_path / f"{ES}.jsonl", cultivar_rows(ES, [1, 3]))
    data = load_benchmark(local(tmp_path))
    check_loaded(data, {DE: [0, 2, 4], ES: [1, 3]})
    assert str(tmp_path) in data.source


def test_flat_parquet_layout(tmp_path):
    write_parquet(tmp_path / f"{DE}.parquet", cultivar_rows(DE, [0, 1]))
    write_parquet(tmp_path / f"{ES}.parquet", cultivar_rows(ES, [5]))
    check_loaded(load_benchmark(local(tmp_path)), {DE: [0, 1], ES: [5]})


def test_hub_layout_with_several_parquet_shards(tmp_path):
    shards = tmp_path / "data" / DE
    write_parquet(shards / "train-00000-of-00002.parquet", cultivar_rows(DE, [0, 1]))
    write_parquet(shards / "train-00001-of-00002.parquet", cultivar_rows(DE, [7]))
    write_parquet(tmp_path / "data" / ES / "train.parquet", cultivar_rows(ES, [2]))
    (tmp_path / "README.md").write_text("# a dataset card\n")
    files = find_locale_files(tmp_path)
    assert sorted(files) == [DE, ES]
    assert len(files[DE]) == 2
    check_loaded(load_benchmark(local(tmp_path)), {DE: [0, 1, 7], ES: [2]})


def test_locale_folder_without_data_prefix(tmp_path):
    write_parquet(tmp_path / DE / "part.parquet", cultivar_rows(DE, [3]))
    assert list(find_locale_files(tmp_path)) == [DE]


def test_files_not_named_after_a_locale_are_ignored(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0]))
    write_jsonl(tmp_path / "notes.jsonl", [{"x": 1}])
    write_jsonl(tmp_path / "deu_Latn_Germany.txt", [{"x": 1}])
    assert find_locale_files(tmp_path) == {DE: [tmp_path / f"{DE}.jsonl"]}


def test_column_map_renames_columns(tmp_path):
    rename = {"id": "idx", "source_localised": "src_loc", "english_localised": "eng_loc",
              "source_original": "src_orig", "english_original": "eng_orig", "locale": "lc"}
    for locale, ids in ((DE, [0, 1]), (ES, [2])):
        rows = [{rename.get(k, k): v for k, v in row.items()} for row in cultivar_rows(locale, ids)]
        write_parquet(tmp_path / f"{locale}.parquet", rows)
    check_loaded(load_benchmark(local(tmp_path, column_map=rename)), {DE: [0, 1], ES: [2]})
    with pytest.raises(DataError, match="src_loc"):  # without the map the columns are missing
        load_benchmark(local(tmp_path))


def test_blank_lines_in_jsonl_are_skipped(tmp_path):
    path = tmp_path / f"{DE}.jsonl"
    rows = cultivar_rows(DE, [0, 1])
    path.write_text("\n" + json.dumps(rows[0]) + "\n   \n" + json.dumps(rows[1]) + "\n\n", "utf-8")
    assert [i.instance_id for i in read_locale(DE, [path])] == [0, 1]


def test_texts_are_stripped(tmp_path):
    rows = cultivar_rows(DE, [0])
    rows[0]["source_localised"] = "  padded source \t"
    path = write_jsonl(tmp_path / f"{DE}.jsonl", rows)
    assert read_locale(DE, [path])[0].source_localised == "padded source"


def test_locale_column_is_optional(tmp_path):
    path = write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0], with_locale=False))
    assert read_locale(DE, [path])[0].locale == DE


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["id", "source_localised", "english_localised"])
def test_missing_required_column_names_column_and_file(tmp_path, column):
    rows = cultivar_rows(DE, [0, 1])
    for row in rows:
        del row[column]
    path = write_parquet(tmp_path / f"{DE}.parquet", rows)
    with pytest.raises(DataError) as info:
        load_benchmark(local(tmp_path, locales=[DE]))
    message = str(info.value)
    assert repr(column) in message
    assert str(path) in message
    assert DE in message


def test_missing_mapped_column_names_the_dataset_column(tmp_path):
    path = write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0]))
    with pytest.raises(DataError) as info:
        read_locale(DE, [path], {"english_localised": "english_target"})
    assert "'english_target'" in str(info.value)
    assert str(path) in str(info.value)


def test_unknown_locale_in_config_raises_with_suggestion():
    # UnknownEntryError (a KeyError), or pydantic's ValidationError wrapping it (a ValueError)
    with pytest.raises((UnknownEntryError, ValueError),
                       match=r"'deu_Latn_Germny'.*'deu_Latn_Germany'"):
        DataConfig(kind="local", cultivar_path="x", locales=["deu_Latn_Germny"])


def test_unknown_config_field_is_rejected():
    with pytest.raises(ValueError, match="extra"):
        DataConfig(kind="local", cultivar_pth="x")


def test_row_locale_disagreeing_with_file_raises(tmp_path):
    rows = cultivar_rows(DE, [0, 1])
    rows[1]["locale"] = CH
    path = write_jsonl(tmp_path / f"{DE}.jsonl", rows)
    with pytest.raises(DataError) as info:
        load_benchmark(local(tmp_path, locales=[DE]))
    message = str(info.value)
    assert f"{path}:2: " in message
    assert repr(CH) in message and repr(DE) in message


# (how to break row 2 of a JSONL file, the problem the message must state for file:line 2)
BAD_ROWS = {
    "missing column": (lambda r: r.pop("english_localised"),
                       "has no 'english_localised' (column 'english_localised' is missing)"),
    "text is a list": (lambda r: r.update(english_localised=["a", "b"]),
                       "has a list in 'english_localised', not a text"),
    "text is a number": (lambda r: r.update(source_localised=7),
                         "has a int in 'source_localised', not a text"),
    "blank text": (lambda r: r.update(english_original="   "), "has a blank 'english_original'"),
    "null text": (lambda r: r.update(source_localised=None),  # was reported as "missing"
                  "has no 'source_localised' (column 'source_localised' is null)"),
    "negative id": (lambda r: r.update(id=-1), "has a negative id -1"),
    "negative id text": (lambda r: r.update(id="-3"), "has a negative id -3"),
    "no id": (lambda r: r.pop("id"), "has no id"),
    "null id": (lambda r: r.update(id=None), "has no id"),
    "text id": (lambda r: r.update(id="abc"), "has a non-integer id 'abc'"),
    "fraction id": (lambda r: r.update(id="1.5"), "has a non-integer id '1.5'"),
    "float id": (lambda r: r.update(id=2.5), "has an id of type float (2.5), not an integer"),
    "boolean id": (lambda r: r.update(id=True), "has an id of type bool (True), not an integer"),
    "list id": (lambda r: r.update(id=[1]), "has an id of type list ([1]), not an integer"),
    "duplicate id": (lambda r: r.update(id=0), "repeats id 0 (first at {path}:1)"),
    "other locale": (lambda r: r.update(locale=CH),
                     f"has locale {CH!r}, expected {DE!r}"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_bad_row_is_reported_with_its_file_line_and_problem(tmp_path, case):
    breaks, problem = BAD_ROWS[case]
    rows = cultivar_rows(DE, [0, 1, 2])
    breaks(rows[1])
    path = write_jsonl(tmp_path / f"{DE}.jsonl", rows)
    with pytest.raises(DataError) as info:
        load_benchmark(local(tmp_path, locales=[DE]))
    assert f"{path}:2: {problem.format(path=path)}" in str(info.value)


def test_every_bad_row_of_a_file_is_listed_at_once(tmp_path):
    rows = cultivar_rows(DE, list(range(5)))
    rows[1]["id"] = -1
    rows[3]["english_localised"] = ""
    rows[4]["id"] = 0
    path = write_jsonl(tmp_path / f"{DE}.jsonl", rows)
    with pytest.raises(DataError, match="3 problem") as info:
        read_locale(DE, [path])
    for line in (2, 4, 5):
        assert f"{path}:{line}: " in str(info.value)


def test_parquet_rows_are_named_by_row_number(tmp_path):
    rows = cultivar_rows(DE, [0, 1])
    rows[1]["source_localised"] = "  "
    path = write_parquet(tmp_path / f"{DE}.parquet", rows)
    with pytest.raises(DataError, match=rf"{re.escape(str(path))} row 2: .*'source_localised'"):
        read_locale(DE, [path])


def test_duplicate_ids_across_shards_name_both_places(tmp_path):
    first = write_parquet(tmp_path / "data" / DE / "a.parquet", cultivar_rows(DE, [0, 1]))
    second = write_parquet(tmp_path / "data" / DE / "b.parquet", cultivar_rows(DE, [1]))
    with pytest.raises(DataError) as info:
        load_benchmark(local(tmp_path, locales=[DE]))
    message = str(info.value)
    assert f"{second} row 1: " in message and f"{first} row 2" in message and "id 1" in message


def test_invalid_json_line_names_file_and_line(tmp_path):
    path = tmp_path / f"{DE}.jsonl"
    good = [json.dumps(r) for r in cultivar_rows(DE, [0, 1])]
    path.write_text(good[0] + "\n" + good[1] + "\n" + '{"id": 2, "source_localised": \n', "utf-8")
    with pytest.raises(DataError, match="JSON") as info:
        load_benchmark(local(tmp_path, locales=[DE]))
    assert f"{path}:3:" in str(info.value)


def test_json_line_that_is_not_an_object_raises_data_error(tmp_path):
    path = tmp_path / f"{DE}.jsonl"
    path.write_text(json.dumps(cultivar_rows(DE, [0])[0]) + "\n[1, 2]\n", "utf-8")
    with pytest.raises(DataError, match=rf"{path.name}:2"):
        read_locale(DE, [path])


def test_garbage_parquet_raises_data_error(tmp_path):
    path = tmp_path / f"{DE}.parquet"
    path.write_bytes(b"this is not a parquet file at all\x00\x01\x02")
    with pytest.raises(DataError) as info:
        load_benchmark(local(tmp_path, locales=[DE]))
    assert str(path) in str(info.value)


def test_truncated_parquet_raises_data_error(tmp_path):
    path = write_parquet(tmp_path / f"{DE}.parquet", cultivar_rows(DE, [0, 1, 2]))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DataError, match=re.escape(str(path))):
        read_locale(DE, [path])


def test_jsonl_that_is_not_utf8_raises_data_error(tmp_path):
    path = tmp_path / f"{DE}.jsonl"
    path.write_bytes(b'{"id": 0, "source_localised": "\xff\xfe"}\n')
    with pytest.raises(DataError, match="UTF-8") as info:
        read_locale(DE, [path])
    assert str(path) in str(info.value)


def test_directory_named_like_a_parquet_file_is_not_data(tmp_path):
    (tmp_path / f"{DE}.parquet").mkdir()
    with pytest.raises(DataError, match=re.escape(str(tmp_path))):
        load_benchmark(local(tmp_path, locales=[DE]))


def test_directory_named_like_a_parquet_file_beside_real_data_is_reported_missing(tmp_path):
    (tmp_path / f"{DE}.parquet").mkdir()
    write_jsonl(tmp_path / f"{ES}.jsonl", cultivar_rows(ES, [0]))
    data = load_benchmark(local(tmp_path))
    assert data.locales == [ES]
    assert [m.locale for m in data.missing] == [DE]  # not dropped silently
    with pytest.raises(DataError, match=f"cultivar_{DE}"):
        load_benchmark(local(tmp_path, on_missing="fail"))


def test_empty_file_raises(tmp_path):
    (tmp_path / f"{DE}.jsonl").write_text("\n", "utf-8")
    with pytest.raises(DataError, match=re.escape(str(tmp_path / f"{DE}.jsonl"))):
        load_benchmark(local(tmp_path, locales=[DE]))


def test_missing_directory_raises(tmp_path):
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "nowhere"))):
        load_benchmark(local(tmp_path / "nowhere"))


def test_local_kind_needs_a_path():
    """Said when the settings are read (it was said only when the test sets were loaded)."""
    with pytest.raises(ValidationError, match=r"'local'.*cultivar_path"):
        DataConfig(kind="local")


# --- expected but missing locales ------------------------------------------------------------


def test_on_missing_skip_records_a_missing_item(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0, 1]))
    data = load_benchmark(local(tmp_path, locales=[DE, ES]))
    assert data.locales == [DE]
    assert len(data.missing) == 1
    item = data.missing[0]
    assert (item.test_set, item.kind, item.language, item.locale) == (
        f"cultivar_{ES}", "cultivar", "spa_Latn", ES)
    assert str(tmp_path) in item.reason
    assert [t.name for t in data.test_sets()] == ["flores_deu_Latn", f"cultivar_{DE}"]


def test_on_missing_fail_raises(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0, 1]))
    with pytest.raises(DataError, match=f"cultivar_{ES}"):
        load_benchmark(local(tmp_path, locales=[DE, ES], on_missing="fail"))


def test_all_27_locales_expected_by_default(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0]))
    data = load_benchmark(DataConfig(kind="local", cultivar_path=str(tmp_path)))
    assert data.locales == [DE]
    assert len(data.missing) == 26
    assert {m.kind for m in data.missing} == {"cultivar"}
    assert DE not in {m.locale for m in data.missing}


def test_none_of_the_expected_locales_present_raises(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0]))
    with pytest.raises(DataError, match=re.escape(str(tmp_path))):
        load_benchmark(local(tmp_path, locales=[ES]))


def test_unselected_locales_are_noted(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0]))
    write_jsonl(tmp_path / f"{ES}.jsonl", cultivar_rows(ES, [0]))
    data = load_benchmark(local(tmp_path, locales=[DE]))
    assert data.locales == [DE]
    assert data.notes == [f"locales in the data but not selected: {ES}"]


# --- original FLORES sentences from the dataset ------------------------------------------------


def test_without_original_columns_flores_dataset_raises(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0], originals=False))
    write_jsonl(tmp_path / f"{ES}.jsonl", cultivar_rows(ES, [0], originals=False))
    with pytest.raises(DataError) as info:
        load_benchmark(local(tmp_path))
    message = str(info.value)
    assert "source_original" in message and "english_original" in message
    assert DE in message and ES in message
    assert "flores='local'" in message and "'hub'" in message


def test_flores_local_needs_a_path(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0], originals=False))
    with pytest.raises(ValidationError, match=r"flores='local'.*flores_path"):
        local(tmp_path, locales=[DE], flores="local")


def test_flores_union_over_two_locales_of_a_language(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0, 1, 3]))
    write_jsonl(tmp_path / f"{CH}.jsonl", cultivar_rows(CH, [1, 2]))
    data = load_benchmark(local(tmp_path, locales=[DE, CH]))
    flores = data.test_sets()[0]
    assert flores.name == "flores_deu_Latn"
    assert [s.segment_id for s in flores.segments] == [0, 1, 2, 3]
    assert [s.source for s in flores.segments] == [original_source("deu_Latn", i) for i in range(4)]
    assert [s.reference for s in flores.segments] == [original_english(i) for i in range(4)]


def test_originals_that_differ_between_locales_of_a_language_raise(tmp_path):
    write_jsonl(tmp_path / f"{DE}.jsonl", cultivar_rows(DE, [0, 1]))
    rows = cultivar_rows(CH, [1])
    rows[0]["source_original"] = "a different original"
    write_jsonl(tmp_path / f"{CH}.jsonl", rows)
    with pytest.raises(DataError, match=r"instance 1: .*deu_Latn"):
        load_benchmark(local(tmp_path, locales=[DE, CH]))
