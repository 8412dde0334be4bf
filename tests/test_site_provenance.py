"""The dataset's provenance on the site: Table 1 computed from an ingested annotation file next
to the reported one, and each instance's LLM draft and post-editing action on its locale page
(hostile drafts as text; a draft that repeats the FLORES original hidden where originals are)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from annotation_helpers import annotation_document, demo_drafts

from cultivar_assets.construction.annotation.store import ingest_annotation_file
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.site.build import build_site

pytestmark = pytest.mark.usefixtures("shared_site_caches")  # charts and templates: once a session

LOCALE = "deu_Latn_Germany"


@pytest.fixture(scope="module")
def store(tmp_path_factory, hostile_store_copy):
    root = tmp_path_factory.mktemp("provenance")
    store = hostile_store_copy(root)
    drafts = demo_drafts(LOCALE, hostile=True, flagged=True)
    echo = drafts[3]  # an LLM that returned the FLORES source unchanged; the annotator edited it
    drafts[3] = replace(echo, source_draft=echo.source_original)
    task = AnnotationTask.from_drafts(drafts)
    finals = {echo.instance_id: (echo.source_draft + " (edited)", echo.english_draft)}
    path = root / f"{task.task_id}.annotations.json"
    path.write_text(json.dumps(annotation_document(task, finals), ensure_ascii=False), "utf-8")
    ingest_annotation_file(store, path, task)
    store.hidden_source = echo.source_original
    return store


@pytest.fixture(scope="module")
def site(store, tmp_path_factory):
    """The site of :func:`store` with the demo's settings (originals shown); tests only read
    it."""
    out = tmp_path_factory.mktemp("provenance_site") / "site"
    build_site(store, out, query_page="off")
    return out


def test_table1_and_provenance_are_shown(site):
    dataset = (site / "dataset.html").read_text()
    assert 'id="table1-computed"' in dataset and f">{LOCALE}</th>" in dataset
    assert 'id="table1-reported"' in dataset and ">yor_Latn_Nigeria</th>" in dataset
    table1 = json.loads((site / "downloads" / "annotation_summary.json").read_text())
    assert [row["locale"] for row in table1] == [LOCALE] and table1[0]["n_instances"] == 12
    page = (site / "locales" / f"{LOCALE}.html").read_text()
    assert page.count('class="provenance"') == 12
    assert "Post-editing: kept" in page and "Post-editing: edited" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert "(no draft)" in page and "the draft was flagged" in page


def test_a_draft_that_repeats_the_original_is_hidden_with_the_originals(store, site, tmp_path):
    build_site(store, tmp_path / "public", show_originals=False, query_page="off")
    page = (tmp_path / "public" / "locales" / f"{LOCALE}.html").read_text()
    assert store.hidden_source not in page
    assert "this draft repeats the original FLORES text" in page
    # demo data: originals shown
    assert store.hidden_source in (site / "locales" / f"{LOCALE}.html").read_text()


def test_each_draft_line_says_which_side_it_is(site):
    """The LLM draft row holds two lines, the source's and the English: each is labelled."""
    page = (site / "locales" / f"{LOCALE}.html").read_text()
    rows = re.findall(r'<tr class="provenance">(.*?)</tr>', page, flags=re.S)
    assert len(rows) == 12
    for row in rows:
        labels = re.findall(r'<span class="draft-side">([^<]*)</span>', row)
        assert labels == ["Source:", "English:"], row
