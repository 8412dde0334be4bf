"""End to end, as an annotator would: the tool page built from the stored drafts, opened in
Chromium; two items edited, one reverted, all confirmed, the JSON downloaded; the file handed in
with `cultivar build ingest`, then Table 1 and the built dataset's rows checked."""

from __future__ import annotations

import json

import pytest
import yaml
from browser_helpers import NEEDS_CHROMIUM
from build_helpers import build_drafts
from test_postedit_browser import Tool

from cultivar_assets.cli import main
from cultivar_assets.construction.annotation.postedit_build import build_tools, stored_task
from cultivar_assets.construction.annotation.text_edits import count_edits
from cultivar_assets.construction.dataset import build_dataset
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

pytestmark = NEEDS_CHROMIUM
LOCALE = "deu_Latn_Germany"


def test_an_annotators_file_becomes_table1_and_dataset_rows(browser, tmp_path, capsys):
    construction = build_drafts(tmp_path, [LOCALE], tmp_path / "build.duckdb")
    store = Store(tmp_path / "build.duckdb")
    (tool_page,) = build_tools(store, tmp_path / "tools", [LOCALE])
    task = stored_task(store, LOCALE)
    drafts = task.by_id()
    revert = next(i for i, d in drafts.items() if i not in (3, 6)
                  and (d.source_draft, d.english_draft) != (d.source_original, d.english_original))
    kept = next(i for i in drafts if i not in (3, 6, revert))

    t = Tool(browser, tool_page.page.as_uri())
    t.page.fill("#annotator", "annotator-e2e")
    t.box(3).fill(drafts[3].source_draft + " In Berlin.")  # item 3: both sides
    t.box(3, "english").fill(drafts[3].english_draft + " In Berlin.")
    t.box(6, "english").fill(drafts[6].english_draft + " By train.")  # item 6: English only
    t.item(revert).get_by_role("button", name="Revert to the original FLORES entry").click()
    for iid in drafts:
        t.item(iid).get_by_role("checkbox", name="Confirm final version").check()
    assert t.page.inner_text("#progress").startswith("12 / 12 reviewed")
    download = t.download(tmp_path / "handed-in.json")
    t.close()

    settings = Settings(database=str(store.path), construction=construction)
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json")), "utf-8")
    assert main(["--config", str(config), "build", "ingest", str(download)]) == 0
    out = capsys.readouterr().out
    assert f"{LOCALE}: " in out and "handed-in.json" in out

    (row,) = store.query("annotation_summary")
    assert (row["kept_llm_paraphrase"], row["reverted_to_flores"], row["edited_source_only"],
            row["edited_target_only"], row["edited_both"]) == (9, 1, 0, 1, 1)
    assert row["annotator"] == "annotator-e2e"
    english_edits = [1, 1]  # " In Berlin." and " By train.": one run of new tokens each
    if drafts[revert].english_draft != drafts[revert].english_original:
        english_edits.append(count_edits(drafts[revert].english_draft,
                                         drafts[revert].english_original, "word"))
    assert row["avg_edits_english"] == pytest.approx(sum(english_edits) / len(english_edits))

    built = build_dataset(store, tmp_path / "dataset", [LOCALE])
    rows = {r["id"]: r for r in built.rows[LOCALE]}
    assert rows[3]["source_localised"] == drafts[3].source_draft + " In Berlin."
    assert rows[3]["english_localised"] == drafts[3].english_draft + " In Berlin."
    assert rows[6]["english_localised"] == drafts[6].english_draft + " By train."
    assert rows[revert]["source_localised"] == drafts[revert].source_original
    assert (rows[3]["action"], rows[6]["action"], rows[revert]["action"],
            rows[kept]["action"]) == ("edited", "edited", "reverted", "kept")
    assert rows[kept]["source_localised"] == drafts[kept].source_draft
    assert rows[kept]["draft_hash"] == drafts[kept].draft_hash
    assert built.table1 == store.query("annotation_summary")
    on_disk = [json.loads(line) for line in
               (tmp_path / "dataset" / f"{LOCALE}.jsonl").read_text("utf-8").splitlines()]
    assert on_disk == built.rows[LOCALE]
