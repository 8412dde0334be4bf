"""Table 1 (construction/annotation/stats.py) on hand-made tasks whose counts are worked out by
hand, in Python and in the store's ``annotation_summary`` view."""

from __future__ import annotations

import json

import pytest
from annotation_helpers import PROMPT_HASH, annotation_document

from cultivar_assets.construction.annotation.file import read_annotation_file
from cultivar_assets.construction.annotation.stats import TABLE1_FIELDS, table1_row
from cultivar_assets.construction.annotation.store import ingest_annotation_file
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.construction.localisation.drafts import Draft
from cultivar_assets.store.database import Store


def draft(locale, iid, original, paraphrase):
    flagged = paraphrase is None
    return Draft(locale, iid, original[0], original[1],
                 None if flagged else paraphrase[0], None if flagged else paraphrase[1],
                 "unparseable answer" if flagged else "\n".join(paraphrase), flagged,
                 "no English line" if flagged else None, PROMPT_HASH)


G = "deu_Latn_Germany"
GERMAN = [  # (original, LLM paraphrase or None when flagged, final)
    (("Anna wohnt in Rom.", "Anna lives in Rome."),
     ("Lena wohnt in Köln.", "Lena lives in Cologne."), None),  # kept
    (("Paolo fährt nach Mailand.", "Paolo drives to Milan."),
     ("Jonas fährt nach Hamburg.", "Jonas drives to Hamburg."),
     ("Jonas fährt nach Bremen.", "Jonas drives to Hamburg.")),  # source only: 1 edit
    (("Maria isst Pasta in Neapel.", "Maria eats pasta in Naples."),
     ("Sabine isst Pasta in Berlin.", "Sabine eats pasta in Berlin."),
     ("Sabine isst Pasta in Berlin.", "Sabine eats pizza in Munich.")),  # target only: 2 edits
    (("Der Tiber fließt durch Rom.", "The Tiber flows through Rome."),
     ("Der Rhein fließt durch Köln.", "The Rhine flows through Cologne."),
     ("Die Elbe fließt durch Dresden.", "The Elbe flows through Dresden.")),  # both: 2 and 2
    (("Luigi kauft Brot.", "Luigi buys bread."), ("Klaus kauft Brot.", "Klaus buys bread."),
     ("Luigi kauft Brot.", "Luigi buys bread.")),  # reverted: 1 and 1
    (("Er mag Mozart.", "He likes Mozart."), ("Er mag Bach.", "He likes Mozart."),
     ("Er mag Mozart.", "He likes Mozart.")),  # reverted, English unchanged: source 1
    (("Sofia liebt Venedig.", "Sofia loves Venice."), None,
     ("Sofia liebt Lübeck.", "Sofia loves Lübeck.")),  # flagged, edited both: 1 and 1
    (("Pietro malt Florenz.", "Pietro paints Florence."), None, None),  # flagged, left: reverted
    (("Heute regnet es.", "It rains today."), ("Heute regnet es.", "It rains today."),
     None),  # the LLM changed nothing: kept
]

C = "cmn_Hans_China"
CHINESE = [
    (("约翰住在纽约。", "John lives in New York."),
     ("李明住在上海。", "Li Ming lives in Shanghai."),
     ("李明住在北京。", "Li Ming lives in Beijing.")),  # both: 上海 -> 北京 is 1 edit; 1
    (("玛丽在巴黎工作。", "Mary works in Paris."),
     ("王芳在杭州工作。", "Wang Fang works in Hangzhou."),
     ("张伟在杭州教书。", "Wang Fang works in Hangzhou.")),  # source only: 王芳, 工作: 2 edits
    (("彼得在柏林。", "Peter is in Berlin."), ("小红在西安。", "Xiao Hong is in Xi'an."), None),
    (("汤姆喜欢伦敦。", "Tom likes London."), ("小明喜欢成都。", "Xiao Ming likes Chengdu."),
     ("汤姆喜欢伦敦。", "Tom likes London.")),  # reverted: 2 and 2
]

EXPECTED = {
    G: {"n_instances": 9, "n_flagged": 2, "kept_llm_paraphrase": 2, "reverted_to_flores": 3,
        "edited_source_only": 1, "edited_target_only": 1, "edited_both": 2,
        # sources changed among revised: 1 (Bremen) + 2 (Elbe, Dresden) + 1 + 1 + 1 (Lübeck)
        "avg_edits_source": 6 / 5, "n_revised_source_changed": 5,
        # English changed among revised: 2 (pizza, Munich) + 2 + 1 + 1 (Lübeck)
        "avg_edits_english": 6 / 4, "n_revised_english_changed": 4},
    C: {"n_instances": 4, "n_flagged": 0, "kept_llm_paraphrase": 1, "reverted_to_flores": 1,
        "edited_source_only": 1, "edited_target_only": 0, "edited_both": 1,
        "avg_edits_source": (1 + 2 + 2) / 3, "n_revised_source_changed": 3,
        "avg_edits_english": (1 + 2) / 2, "n_revised_english_changed": 2},
}


def ingested(tmp_path, locale, rows, store=None):
    drafts = [draft(locale, i, original, paraphrase)
              for i, (original, paraphrase, _) in enumerate(rows)]
    task = AnnotationTask.from_drafts(drafts)
    finals = {i: final for i, (_, _, final) in enumerate(rows) if final is not None}
    path = tmp_path / f"{task.task_id}.annotations.json"
    path.write_text(json.dumps(annotation_document(task, finals), ensure_ascii=False), "utf-8")
    if store is not None:
        ingest_annotation_file(store, path, task)
    return read_annotation_file(path, task)


@pytest.mark.parametrize(("locale", "rows"), [(G, GERMAN), (C, CHINESE)])
def test_table1_on_hand_made_tasks(tmp_path, locale, rows):
    file = ingested(tmp_path, locale, rows)
    row = table1_row(locale, file.annotations).as_dict()
    expected = EXPECTED[locale]
    assert {k: row[k] for k in expected} == pytest.approx(expected)


def test_store_view_matches_the_python_table(tmp_path):
    store = Store(tmp_path / "t1.duckdb")
    files = {loc: ingested(tmp_path, loc, rows, store) for loc, rows in ((G, GERMAN),
                                                                          (C, CHINESE))}
    view = {r["locale"]: r for r in store.query("annotation_summary")}
    assert sorted(view) == [C, G]
    for locale, file in files.items():
        python = table1_row(locale, file.annotations).as_dict()
        for field in (*TABLE1_FIELDS, "n_instances", "n_flagged", "n_revised_source_changed",
                      "n_revised_english_changed"):
            assert view[locale][field] == pytest.approx(python[field]), (locale, field)
        assert view[locale]["annotator"] == "annotator-1"
    rows = store.query("locale_annotations", locale=C)
    assert [(r["source_edits"], r["english_edits"], r["source_mode"]) for r in rows] == [
        (1, 1, "char"), (2, 0, "char"), (0, 0, "char"), (2, 2, "char")]


def test_table1_refuses_unconfirmed_or_foreign_annotations(tmp_path):
    file = ingested(tmp_path, G, GERMAN)
    with pytest.raises(ValueError, match="other locales"):
        table1_row(C, file.annotations)
    from dataclasses import replace

    pending = [replace(file.annotations[0], confirmed=False), *file.annotations[1:]]
    with pytest.raises(ValueError, match="unconfirmed: \\[0\\]"):
        table1_row(G, pending)


def test_the_card_shows_computed_table1_apart_from_the_reported_one(tmp_path):
    from cultivar_assets.publish.card import build_card

    store = Store(tmp_path / "card.duckdb")
    ingested(tmp_path, G, GERMAN, store)
    locales = [{"locale": G, "language": "deu", "script": "Latn", "location": "Germany",
                "language_name": "German", "official_or_de_facto": True, "n_instances": 9,
                "flores_plus_code": "deu_Latn", "location_short": "DE"}]
    body = build_card(locales, is_demo=False, include_originals=False,
                      annotation_summary=store.query("annotation_summary")).body
    computed = body.index("## Annotation statistics (computed from the annotation files)")
    reported = body.index("## Annotation statistics (reported)")
    assert computed < reported
    assert "| `deu_Latn_Germany` | 2 | 3 | 1 | 1 | 2 | 1.20 | 1.50 | 9 |" in body
    assert "| `deu_Latn_Germany` | 117 | 0 | 3 | 2 | 78 | 4.48 | 4.46 |" in body  # the paper's
    plain = build_card(locales, is_demo=False, include_originals=False).body
    assert "computed from the annotation files" not in plain
