"""Source benchmarks: FLORES (local releases, dev and devtest), parallel files, the demo data."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from data_helpers import fake_english, fake_source, make_flores_dir, shared_flores_dir, write_jsonl
from pydantic import ValidationError

from cultivar_assets.data.flores import LocalFlores, flores_line_index, read_metadata_tsv
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig, load_source_benchmark
from cultivar_assets.data.testsets import DataError

METADATA_HEADER = "URL\tdomain\ttopic\thas_image\thas_hyperlink\n"


def write_metadata(root, topics: list[str], split: str = "dev"):
    rows = "".join(f"https://example.org/{i}\twikinews\t{t}\tno\tno\n"
                   for i, t in enumerate(topics))
    (root / f"metadata_{split}.tsv").write_text(METADATA_HEADER + rows, "utf-8")


def fake_release(tmp_path, n=4, split="dev", topics=None, languages=("deu_Latn", "zho_Hans")):
    files = {"eng_Latn": fake_english(n), **{code: fake_source(code, n) for code in languages}}
    root = make_flores_dir(tmp_path / "flores", files, split)
    write_metadata(root, topics or [f"Topic {i}" for i in range(n)], split)
    return root


def flores_config(root, **kwargs) -> SourceBenchmarkConfig:
    return SourceBenchmarkConfig(kind="flores", path=str(root), **kwargs)


# --- FLORES, local -----------------------------------------------------------------------------


def test_local_flores_dev_with_metadata(tmp_path):
    root = fake_release(tmp_path, topics=["Science/Earth Science", "", "travel", "Sports"])
    bench = load_source_benchmark(flores_config(root, languages=["deu_Latn", "cmn_Hans"]))
    assert bench.name == "flores-dev" and not bench.is_demo
    assert bench.ids() == [0, 1, 2, 3]
    first = bench.instances[0]
    assert first.english == "Made-up English dev line 0."
    assert dict(first.sources) == {"deu_Latn": "deu_Latn made-up dev line 0",
                                   "cmn_Hans": "zho_Hans made-up dev line 0"}  # FLORES-200 name
    assert (first.domain, first.topic) == ("wikinews", "Science/Earth Science")
    assert bench.instances[1].topic is None  # an empty topic is no topic
    assert bench.metadata_from == str(root / "metadata_dev.tsv")
    assert bench.missing == {}


def test_missing_languages_are_reported_or_fail(tmp_path):
    root = fake_release(tmp_path, languages=("deu_Latn",))
    bench = load_source_benchmark(flores_config(root, languages=["deu_Latn", "gom_Deva"]))
    assert bench.languages == ("deu_Latn",)
    assert "gom_Deva is not part of FLORES-200" in bench.missing["gom_Deva"]
    with pytest.raises(DataError, match=rf"gom_Deva.*{re.escape(str(root))}"):
        load_source_benchmark(flores_config(root, languages=["deu_Latn", "gom_Deva"],
                                            on_missing="fail"))


def test_all_languages_by_default(tmp_path):
    bench = load_source_benchmark(flores_config(fake_release(tmp_path)))
    assert bench.languages == ("cmn_Hans", "deu_Latn")
    assert len(bench.missing) == 19  # the other Cultivar source languages


def test_devtest_split(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": ["t0", "t1", "t2"],
                                      "deu_Latn": ["u0", "u1", "u2"]}, "devtest")
    write_metadata(root, ["a", "b", "c"], "devtest")
    bench = load_source_benchmark(flores_config(root, split="devtest", languages=["deu_Latn"]))
    assert bench.name == "flores-devtest"
    assert (bench.instances[2].english, bench.instances[2].sources["deu_Latn"]) == ("t2", "u2")
    assert bench.instances[2].topic == "c"
    with pytest.raises(DataError, match=rf"English.*{re.escape(str(root))}"):
        load_source_benchmark(flores_config(root, split="dev"))  # no dev/ in this release


def test_metadata_is_required_unless_switched_off(tmp_path):
    root = fake_release(tmp_path)
    (root / "metadata_dev.tsv").unlink()
    with pytest.raises(DataError, match=r"metadata_dev\.tsv.*metadata: false"):
        load_source_benchmark(flores_config(root))
    bench = load_source_benchmark(flores_config(root, metadata=False, languages=["deu_Latn"]))
    assert {(i.domain, i.topic) for i in bench.instances} == {(None, None)}
    assert bench.metadata_from is None


def test_metadata_of_another_length_is_an_error(tmp_path):
    root = fake_release(tmp_path, n=4)
    write_metadata(root, ["a", "b", "c"])
    with pytest.raises(DataError, match=r"metadata_dev\.tsv.*\b3\b.*eng_Latn\.dev.*\b4\b"):
        load_source_benchmark(flores_config(root))


def test_empty_english_side_and_empty_sentences_are_errors(tmp_path):
    root = make_flores_dir(tmp_path / "a", {"eng_Latn": []})
    with pytest.raises(DataError, match=r"eng_Latn\.dev: .*empty"):
        load_source_benchmark(flores_config(root, metadata=False))
    root = make_flores_dir(tmp_path / "b", {"eng_Latn": ["e0", " ", "e2"],
                                            "deu_Latn": ["d0", "d1", "d2"]})
    with pytest.raises(DataError, match=r"eng_Latn\.dev: .*\[1\]"):
        load_source_benchmark(flores_config(root, metadata=False))
    root = make_flores_dir(tmp_path / "c", {"eng_Latn": ["e0", "e1"], "deu_Latn": ["d0", ""]})
    with pytest.raises(DataError, match=r"deu_Latn\.dev: .*\[1\]"):
        load_source_benchmark(flores_config(root, metadata=False, languages=["deu_Latn"]))


def test_misaligned_files_are_an_error(tmp_path):
    root = make_flores_dir(tmp_path, {"eng_Latn": ["e0", "e1"], "deu_Latn": ["d0"]})
    with pytest.raises(DataError, match=r"deu_Latn\.dev.*\b1\b.*eng_Latn\.dev.*\b2\b"):
        load_source_benchmark(flores_config(root, metadata=False, languages=["deu_Latn"]))


def test_configuration_errors():
    with pytest.raises(ValidationError, match="'fra_Latn'"):
        SourceBenchmarkConfig(kind="flores", languages=["fra_Latn"])
    with pytest.raises(DataError, match=r"'flores'.*\bpath\b"):
        load_source_benchmark(SourceBenchmarkConfig(kind="flores"))
    with pytest.raises(DataError, match=r"'flores'.*\brevision\b"):
        load_source_benchmark(SourceBenchmarkConfig(kind="flores", flores="hub"))


# --- FLORES+ tables and the id assumption ------------------------------------------------------


def test_flores_line_index_is_the_flores_plus_id():
    assert [flores_line_index(i, "f") for i in (0, 1, 996)] == [0, 1, 996]
    for bad in (-1, True, "3", 2.0, None):
        with pytest.raises(DataError, match=rf"^file\.jsonl: .*{re.escape(repr(bad))}"):
            flores_line_index(bad, "file.jsonl")


def test_local_flores_plus_files_join_on_id_not_row_order(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    order = [2, 0, 3, 1]
    pq.write_table(pa.table({"id": order, "text": [f"E{i}" for i in order],
                             "domain": ["wikinews"] * 4, "topic": [f"t{i}" for i in order]}),
                   dev / "eng_Latn.parquet")
    write_jsonl(dev / "deu_Latn.jsonl", [{"id": i, "text": f"D{i}", "split": "dev",
                                          "variant": None} for i in reversed(range(4))])
    bench = load_source_benchmark(flores_config(tmp_path, languages=["deu_Latn"]))
    assert [(i.instance_id, i.english, i.sources["deu_Latn"], i.topic)
            for i in bench.instances] == [(k, f"E{k}", f"D{k}", f"t{k}") for k in range(4)]


@pytest.mark.parametrize(("rows", "message"), [
    ([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}],
     r"ids are not 0\.\.1 \(lowest 1, highest 2, missing \[0\]\).*flores_line_index"),
    ([{"id": 0, "text": "a"}, {"id": 2, "text": "b"}], r"ids are not 0\.\.1 .*missing \[1\]"),
    ([{"id": 0, "text": "a"}, {"id": 0, "text": "b", "variant": "x"}],
     r"id 0 occurs more than once \(variant 'x'\)"),
    ([{"id": 0, "text": "a", "split": "devtest"}], "id 0 belongs to split 'devtest', not 'dev'"),
    ([{"id": 0, "sentence": "a"}], r"not a FLORES\+ file: no 'text' column"),
    ([{"id": "0", "text": "a"}], "id '0' is not a non-negative integer"),
    ([{"id": 0, "text": None}], r"id 0 has no text"),
])
def test_flores_plus_files_that_break_the_assumptions_are_errors(tmp_path, rows, message):
    path = write_jsonl(tmp_path / "dev" / "eng_Latn.jsonl", rows)
    with pytest.raises(DataError, match=message) as info:
        LocalFlores(tmp_path).read_file(["eng_Latn"])
    assert str(path) in str(info.value)


# --- the real FLORES-200 release: devtest as a second source ------------------------------------


def test_real_flores_devtest_is_a_second_source():
    root = shared_flores_dir()
    bench = load_source_benchmark(flores_config(root, split="devtest"))
    assert bench.name == "flores-devtest" and len(bench.instances) == 1012
    assert len(bench.languages) == 20 and set(bench.missing) == {"gom_Deva"}
    assert all(i.english and len(i.sources) == 20 for i in bench.instances)
    metadata = read_metadata_tsv(root / "metadata_devtest.tsv")
    assert [(i.domain, i.topic) for i in bench.instances] == metadata
    assert bench.instances[0].english == LocalFlores(root, "devtest").read(["eng_Latn"])[0]
    dev = load_source_benchmark(flores_config(root, languages=["deu_Latn"]))
    assert len(dev.instances) == 997
    assert dev.instances[0].english != bench.instances[0].english


# --- parallel files ------------------------------------------------------------------------------


ROWS = [
    {"id": 5, "eng_Latn": "A bridge opens in Turin.", "deu_Latn": "Eine Brücke in Turin.",
     "spa_Latn": "Un puente en Turín.", "topic": "travel"},
    {"id": 2, "eng_Latn": "Oslo won.", "deu_Latn": "Oslo gewann.", "spa_Latn": "Oslo ganó.",
     "topic": ""},
]


def write_tsv(path, rows):
    header = list(rows[0])
    lines = ["\t".join(header)] + ["\t".join(str(r[c]) for c in header) for r in rows]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv", ".parquet"])
def test_parallel_files_in_three_formats(tmp_path, suffix):
    path = tmp_path / f"bench{suffix}"
    if suffix == ".jsonl":
        write_jsonl(path, ROWS)
    elif suffix == ".tsv":
        write_tsv(path, ROWS)
    else:
        pq.write_table(pa.Table.from_pylist(ROWS), path)
    bench = load_source_benchmark(SourceBenchmarkConfig(kind="files", path=str(path)))
    assert bench.name == f"files:bench{suffix}"
    assert bench.ids() == [2, 5]
    assert bench.languages == ("deu_Latn", "spa_Latn")
    assert dict(bench.instances[1].sources) == {"deu_Latn": "Eine Brücke in Turin.",
                                                "spa_Latn": "Un puente en Turín."}
    assert [i.topic for i in bench.instances] == [None, "travel"]


def test_parallel_file_column_names_are_configurable(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl",
                       [{"n": 0, "en": "Oslo won.", "german": "Oslo gewann."}])
    bench = load_source_benchmark(SourceBenchmarkConfig(
        kind="files", path=str(path), id_column="n", english_column="en",
        language_columns={"deu_Latn": "german"}, languages=["deu_Latn"]))
    assert bench.instances[0].sources == {"deu_Latn": "Oslo gewann."}


@pytest.mark.parametrize(("rows", "message"), [
    ([], "no rows"),
    ([{"id": 0, "text": "x"}], r"no column 'eng_Latn'"),
    ([{"id": 0, "eng_Latn": " ", "deu_Latn": "d"}], "id 0 has an empty English sentence"),
    ([{"id": 0, "eng_Latn": "e", "deu_Latn": ""}], "id 0 has an empty deu_Latn sentence"),
    ([{"id": 0, "eng_Latn": "e", "deu_Latn": "d"}, {"id": 0, "eng_Latn": "f", "deu_Latn": "g"}],
     "id 0 occurs more than once"),
    ([{"id": -4, "eng_Latn": "e", "deu_Latn": "d"}], "id -4 is not a non-negative integer"),
])
def test_bad_parallel_files_name_the_file_and_the_item(tmp_path, rows, message):
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    with pytest.raises(DataError, match=message) as info:
        load_source_benchmark(SourceBenchmarkConfig(kind="files", path=str(path),
                                                    languages=["deu_Latn"]))
    assert str(path) in str(info.value)


def test_parallel_file_format_and_existence(tmp_path):
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "x.tsv"))):
        load_source_benchmark(SourceBenchmarkConfig(kind="files", path=str(tmp_path / "x.tsv")))
    (tmp_path / "x.csv").write_text("id,eng_Latn\n0,e\n", "utf-8")
    with pytest.raises(DataError, match=r"'\.csv'"):
        load_source_benchmark(SourceBenchmarkConfig(kind="files", path=str(tmp_path / "x.csv")))


def test_tsv_row_with_too_few_fields_is_an_error(tmp_path):
    path = tmp_path / "b.tsv"
    path.write_text("id\teng_Latn\tdeu_Latn\n0\tOslo won.\n", "utf-8")
    with pytest.raises(DataError, match=re.escape(f"{path}:2: ")):
        load_source_benchmark(SourceBenchmarkConfig(kind="files", path=str(path)))


# --- the demo data -------------------------------------------------------------------------------


def test_demo_source_is_the_demo_originals():
    from cultivar_assets.data.sources import DataConfig, load_benchmark

    bench = load_source_benchmark(SourceBenchmarkConfig())
    assert bench.is_demo and bench.name == "demo" and bench.ids() == list(range(12))
    assert bench.languages == ("cmn_Hans", "deu_Latn", "hin_Deva", "spa_Latn")
    data = load_benchmark(DataConfig())
    de = {r.instance_id: r for r in data.instances["deu_Latn_Germany"]}
    assert [i.english for i in bench.instances] == [de[i].english_original for i in range(12)]
    assert [i.sources["deu_Latn"] for i in bench.instances] == [
        de[i].source_original for i in range(12)]
    assert {(i.domain, i.topic) for i in bench.instances} == {(None, None)}
    with pytest.raises(DataError, match="pol_Latn"):
        load_source_benchmark(SourceBenchmarkConfig(languages=["pol_Latn"], on_missing="fail"))
