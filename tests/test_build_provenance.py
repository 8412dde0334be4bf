"""The card and the site's dataset page say what this build did, from its own records:
the localiser and the annotator labels that ran, none of the paper's claims about its own
method, each Table 1 once under one title; the demo's played-back localiser is named."""

from __future__ import annotations

import html
import json
import re

import pytest
from annotation_helpers import annotation_document
from build_helpers import build_drafts

from cultivar_assets.construction.annotation.postedit_build import ingest_files, stored_task
from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.config import demo_annotations_dir, demo_construction
from cultivar_assets.construction.dataset import build_dataset
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.publish.card import card_for_store
from cultivar_assets.site.build import build_site
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_dataset

pytestmark = pytest.mark.usefixtures("shared_site_caches")  # charts and templates: once a session

LOCALES = ["spa_Latn_Spain", "hin_Deva_India"]
# the paper's claims about its own dataset, which a build's texts must not make
PAPER_CLAIMS = re.compile(r"GPT-5\.5|gpt-5\.5|native speaker|lives or has lived|658 sentences|"
                          r"200 per locale|corrected by hand", re.IGNORECASE)


def _evaluate_build(store: Store, folder) -> None:
    write_dataset(store, load_benchmark(DataConfig(kind="built", cultivar_path=str(folder))))


def _page(store: Store, out) -> str:
    card = card_for_store(store)
    build_site(store, out, card_markdown=card.page_body, query_page="off")
    return (out / "dataset.html").read_text("utf-8")


@pytest.fixture(scope="module")
def openai_build(tmp_path_factory):
    """A build whose localiser is an OpenAI-compatible model named my-localiser-1 (the local
    fake server) and whose annotation files carry the annotator label ann-a."""
    root = tmp_path_factory.mktemp("provenance")
    build_drafts(root, LOCALES, root / "build.duckdb", model="my-localiser-1")
    store = Store(root / "build.duckdb")
    paths = []
    for locale in LOCALES:
        task = stored_task(store, locale)
        d0 = task.drafts[0]
        path = root / f"{locale}.json"
        path.write_text(json.dumps(annotation_document(
            task, {d0.instance_id: (d0.source_original, d0.english_original)},
            annotator="ann-a")), "utf-8")
        paths.append(path)
    ingest_files(store, paths)
    build_dataset(store, root / "dataset", LOCALES)
    _evaluate_build(store, root / "dataset")
    return root, store


def test_the_card_names_the_localiser_and_annotator_of_the_build(openai_build):
    root, store = openai_build
    body = card_for_store(store).body
    method = body[body.index("## How the data was made"):body.index("## Annotation statistics")]
    assert "`my-localiser-1`" in method and "engine `openai`" in method
    assert "annotator label `ann-a`" in method
    assert "1 reverted" in method and "11 kept" in method  # counts per action, from the file
    assert "- **Instances per locale:** `hin_Deva_India` 12, `spa_Latn_Spain` 12" in method \
        or "- **Instances per locale:** `spa_Latn_Spain` 12, `hin_Deva_India` 12" in method
    assert "- **Corrections file:** none" in method  # no corrections file was used
    assert "`cultivar-paper`" in method  # the prompt template the records name
    assert not PAPER_CLAIMS.search(body), PAPER_CLAIMS.search(body)
    computed = body[body.index("(computed from the annotation files)"):]
    assert "ann-a" in computed.split("\n\n")[1]  # the table says whose files it is computed from
    manifest = json.loads((root / "dataset" / ".cultivar-build.json").read_text("utf-8"))
    assert manifest["source_benchmark"]["kind"] == "demo"
    assert manifest["provenance"]["localisation"]["spa_Latn_Spain"]["model"] == "my-localiser-1"
    assert manifest["provenance"]["annotation"]["hin_Deva_India"]["annotator"] == "ann-a"


def test_the_dataset_page_names_them_and_shows_each_table1_once(openai_build, tmp_path):
    _, store = openai_build
    page = _page(store, tmp_path / "site")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "my-localiser-1" in text and "ann-a" in text
    assert not PAPER_CLAIMS.search(text), PAPER_CLAIMS.search(text)
    assert page.count("<h1") == 1
    assert page.count('id="table1-computed"') == 1 and page.count('id="table1-reported"') == 1
    assert text.count("Annotation statistics") == 0  # the card's copies are not repeated
    assert text.count("How the data was made") == 1


def test_the_demo_build_names_its_played_back_localiser(tmp_path):
    construction = demo_construction()
    store = Store(tmp_path / "demo.duckdb")
    build_selection(construction.source, construction.selection, store, show_bar=False)
    build_localisation(construction.localisation, store)
    ingest_files(store, sorted(demo_annotations_dir().glob("*.annotations.json")))
    locales = construction.localisation.locale_keys()
    build_dataset(store, tmp_path / "dataset", locales)
    _evaluate_build(store, tmp_path / "dataset")
    body = card_for_store(store).body
    method = body[body.index("## How the data was made"):body.index("## Annotation statistics")]
    assert "engine `replay`" in method and "recorded answers played back" in method
    assert "recorded with engine `transformers`, model `google/gemma-3-270m`" in method
    assert "These are the demo's shipped annotation files" in method
    computed = body[body.index("(computed from the annotation files)"):]
    assert "demo's shipped annotation files" in computed and "treated" not in computed.split(
        "## Annotation statistics (reported)")[0]
    assert not PAPER_CLAIMS.search(method)
    page = html.unescape(re.sub(r"<[^>]+>", "", _page(store, tmp_path / "site")))
    assert "recorded answers played back" in page and "google/gemma-3-270m" in page


LOCALE_ROW = {"locale": "deu_Latn_Germany", "language": "deu", "script": "Latn",
              "location": "Germany", "language_name": "German", "official_or_de_facto": True,
              "n_instances": 3, "flores_plus_code": "deu_Latn", "location_short": "DE"}


def test_the_papers_method_is_stated_only_for_the_papers_dataset_and_as_the_papers():
    from cultivar_assets.publish.card import build_card

    paper = build_card([LOCALE_ROW], is_demo=False, include_originals=False, kind="hub").body
    method = paper[paper.index("## How the data was made"):paper.index("## Annotation")]
    assert "the paper reports that GPT-5.5 \\(`gpt-5.5-2026-0423`\\)" in method
    assert "Chen et al., 2026, §2" in method and "not a record of this toolkit" in method
    for kind in ("built", "demo", None):
        body = build_card([LOCALE_ROW], is_demo=kind == "demo", include_originals=False,
                          kind=kind).body
        method = body[body.index("## How the data was made"):body.index("## Annotation")]
        assert not PAPER_CLAIMS.search(method), (kind, method)
    unrecorded = build_card([LOCALE_ROW], is_demo=False, include_originals=False,
                            kind="built").body
    assert "holds no provenance record" in unrecorded  # a build from before the record


def test_another_hub_revision_is_not_the_builds_source():
    from cultivar_assets.data.build_record import check_originals_source
    from cultivar_assets.data.testsets import DataError

    built = {"kind": "flores", "split": "dev", "origin": "hub", "repo": "o/f", "revision": "v2"}
    check_originals_source(built, {**built}, "ds")
    with pytest.raises(DataError, match=r"\(o/f@v2\).*\(o/f@v4\)"):
        check_originals_source(built, {**built, "revision": "v4"}, "ds")


@pytest.mark.parametrize("origin", [
    {"origin": "local", "path": "/home/someone/flores200_dataset"},
    {"origin": "hub", "repo": "openlanguagedata/flores_plus", "revision": "v2.1"},
])
def test_a_devtest_builds_card_and_page_name_the_devtest_split(origin):
    """The ids of a build from FLORES devtest index devtest, and the originals are taken from
    devtest: neither the card nor the dataset page (the card's page body) says dev."""
    from cultivar_assets.publish.card import build_card

    source = {"kind": "flores", "split": "devtest", **origin}
    card = build_card([LOCALE_ROW], is_demo=False, include_originals=False, kind="built",
                      build_provenance={"source_benchmark": source})
    for text in (card.body, card.page_body):
        data = text[text.index("## Data"):]
        data = data[:data.index("\n## ")] if "\n## " in data else data
        assert "0-based line index in the FLORES devtest set" in data
        assert "devtest split) by `id`" in data
        assert "set `flores_split: devtest`" in data  # how to read it back with its originals
        assert not re.search(r"\bdev (set|split)\b", data), data
    assert "someone" not in card.body  # the local folder is not published


def test_a_build_from_a_parallel_file_names_the_file_not_flores():
    from cultivar_assets.publish.card import build_card

    source = {"kind": "files", "path": "/data/mine/parallel.tsv", "file_sha256": "ab" * 32}
    body = build_card([LOCALE_ROW], is_demo=False, include_originals=False, kind="built",
                      build_provenance={"source_benchmark": source}).body
    data = body[body.index("## Data"):body.index("## Locales")]
    assert "FLORES" not in data and "parallel.tsv" in data and "/data/mine" not in data


def test_no_published_page_names_a_path_of_the_build_machine(openai_build, tmp_path):
    """The footer says where the data came from without the build's folder:
    no page or script of the site names the folder the dataset was built in or the machine's
    home."""
    root, store = openai_build
    _page(store, tmp_path / "site")
    machine_paths = {str(root), str(root / "dataset"), str(tmp_path)}
    texts = [p for p in (tmp_path / "site").rglob("*")
             if p.suffix in (".html", ".js", ".json", ".csv", ".md", ".txt", ".svg")]
    assert any(p.name == "index.html" for p in texts)
    leaks = sorted(f"{p.relative_to(tmp_path / 'site')}: {path}" for p in texts
                   for path in machine_paths if path in p.read_text("utf-8", errors="replace"))
    assert not leaks, leaks
    footer = (tmp_path / "site" / "index.html").read_text("utf-8").split('<footer class="site">')[1]
    assert "Cultivar built by this project (from " in footer
    fingerprint = store.query("dataset")[0]["fingerprint"]
    assert f"fingerprint {fingerprint[:12]}" in footer


def test_the_public_source_names_no_local_folder():
    from cultivar_assets.data.build_record import public_source

    local = public_source({"kind": "local", "source": "Cultivar files in /home/ann/cultivar-v1"})
    assert local == "Cultivar files (folder cultivar-v1)"
    built = public_source({"kind": "built", "is_demo": False, "fingerprint": "f" * 64,
                           "source": "Cultivar built by this project in /home/ann/ds (...)",
                           "build_provenance": json.dumps({"source_benchmark": {
                               "kind": "flores", "split": "devtest", "origin": "local",
                               "path": "/home/ann/flores200"}})})
    assert "/home/ann" not in built and "FLORES devtest in flores200" in built
