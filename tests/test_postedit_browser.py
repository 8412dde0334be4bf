"""The post-editing tool in a real browser (Debian's Chromium driven by Playwright).

Tools are built from the bundled demo data (German with a hostile and a flagged draft; Chinese).
Every page records console errors, dialogs and the hosts it contacts: none may appear but the
local server. Each test gets a fresh browser context, i.e. a fresh profile with empty storage.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from annotation_helpers import HOSTILE, annotation_document, demo_drafts
from browser_helpers import NEEDS_CHROMIUM, ToolPage, serve
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from cultivar_assets.construction.annotation.file import read_annotation_file
from cultivar_assets.construction.annotation.postedit_tool import build_postedit_tool
from cultivar_assets.construction.annotation.stats import table1_row
from cultivar_assets.construction.annotation.store import ingest_annotation_file
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.construction.annotation.text_edits import count_edits
from cultivar_assets.store.database import Store

pytestmark = NEEDS_CHROMIUM


@pytest.fixture(scope="module")
def tasks() -> dict[str, AnnotationTask]:
    return {"de": AnnotationTask.from_drafts(demo_drafts(hostile=True, flagged=True)),
            "zh": AnnotationTask.from_drafts(demo_drafts("cmn_Hans_China"))}


@pytest.fixture(scope="module")
def root(tmp_path_factory, tasks) -> Path:
    root = tmp_path_factory.mktemp("postedit")
    build_postedit_tool(tasks["de"].drafts, root / "de")
    build_postedit_tool(tasks["zh"], root / "zh")
    return root


@pytest.fixture(scope="module")
def server(root):
    with serve(root) as url:
        yield url


class Tool(ToolPage):
    """The post-editing tool: its items, boxes, highlights and all the values it holds."""

    def item(self, iid: int):
        return self.page.locator(f"#item-{iid}")

    def box(self, iid: int, side: str = "source"):
        return self.item(iid).locator(f"[data-role={side}-box]")

    def marks(self, iid: int, role: str) -> list[str]:
        return self.item(iid).locator(f"[data-role={role}] mark.changed").all_inner_texts()

    def values(self) -> dict:
        items = self.page.locator("article.item")
        return {"annotator": self.page.input_value("#annotator"),
                "items": [(items.nth(i).locator("[data-role=source-box]").input_value(),
                           items.nth(i).locator("[data-role=english-box]").input_value(),
                           items.nth(i).locator("[data-role=confirm]").is_checked())
                          for i in range(items.count())]}


@pytest.fixture
def tool(browser, server):
    opened = []

    def open_tool(name: str = "de") -> Tool:
        opened.append(Tool(browser, f"{server}/{name}/index.html"))
        return opened[-1]

    yield open_tool
    for each in opened:
        each.close()


def test_highlights_follow_the_annotators_edits(tool, tasks):
    t = tool()
    # nothing done yet: the flagged draft (its boxes start from the original) is not a change
    assert t.page.inner_text("#progress") == "0 / 12 reviewed, 0 pairs changed"
    assert "Jonas Becker" in t.marks(0, "source-current")
    assert "Lucas Moreira" in t.marks(0, "source-original")
    assert t.item(0).locator("[data-role=source-edits]").inner_text() == (
        "edits to the LLM paraphrase: 0")
    before = t.item(0).locator("[data-role=source-diff]").inner_text()
    assert before.startswith("German diff: ")

    draft = tasks["de"].by_id()[0]
    edited = draft.source_draft.replace("Jonas Becker", "Thomas Müller")
    t.box(0).fill(edited)
    assert "Thomas Müller" in t.marks(0, "source-current")
    assert "Jonas Becker" not in " ".join(t.marks(0, "source-current"))
    assert t.item(0).locator("[data-role=source-edits]").inner_text() == (
        "edits to the LLM paraphrase: 1")
    assert t.item(0).locator("[data-role=action]").inner_text() == "edited"
    assert t.page.inner_text("#progress") == "0 / 12 reviewed, 1 pair changed"

    t.box(0).fill(draft.source_original)  # back to the original: nothing is highlighted
    assert t.marks(0, "source-current") == [] and t.marks(0, "source-original") == []
    assert t.item(0).locator("[data-role=source-diff]").inner_text() == "German diff: 0"


def test_confirm_freezes_the_boxes_and_unticking_unfreezes_them(tool):
    t = tool()
    box = t.box(3)
    start = box.input_value()
    confirm = t.item(3).get_by_role("checkbox", name="Confirm final version")
    confirm.check()
    assert t.item(3).locator("[data-role=state]").inner_text() == "confirmed"
    assert box.get_attribute("readonly") is not None
    box.focus()
    t.page.keyboard.type("typed while frozen")
    assert box.input_value() == start
    assert t.item(3).get_by_role("button", name="Revert to the original FLORES entry").is_disabled()
    assert t.page.inner_text("#progress").startswith("1 / 12 reviewed")

    confirm.uncheck()
    assert box.get_attribute("readonly") is None
    box.focus()
    t.page.keyboard.press("Control+End")
    t.page.keyboard.type(" Neu")
    assert box.input_value() == start + " Neu"
    assert t.page.inner_text("#progress").startswith("0 / 12 reviewed")


def test_reload_restores_the_draft_and_reset_clears_it(tool):
    t = tool()
    start = t.values()
    t.page.fill("#annotator", "A. Nonym")
    t.box(3, "english").fill("An English sentence I wrote.")
    t.item(4).get_by_role("checkbox", name="Confirm final version").check()
    edited = t.values()
    t.open()  # reload
    assert t.values() == edited
    assert "Restored the draft saved in this browser" in t.page.inner_text("#status")

    t.page.click("#reset")
    t.page.get_by_role("button", name="Cancel").click()
    assert t.values() == edited
    t.page.click("#reset")
    t.page.get_by_role("button", name="Yes, reset the draft").click()
    assert t.values() == start
    t.open()
    assert t.values() == start
    assert t.page.inner_text("#status") == ""


def test_download_validates_ingests_and_loads_into_a_fresh_profile(tool, tasks, tmp_path):
    """End to end: edit two items, revert one, confirm all, download; the file validates, gives
    Table 1 and the store's view; loaded into a fresh profile it restores every field."""
    task = tasks["de"]
    drafts = task.by_id()
    t = tool()
    t.page.fill("#annotator", "annotator-7")
    t.box(0).fill(drafts[0].source_draft.replace("Jonas Becker", "Thomas Müller"))
    t.box(0, "english").fill(drafts[0].english_draft.replace("Jonas Becker", "Thomas Müller"))
    t.box(5, "english").fill(drafts[5].english_draft + " Indeed.")
    t.item(7).get_by_role("button", name="Revert to the original FLORES entry").click()
    for iid in drafts:
        t.item(iid).get_by_role("checkbox", name="Confirm final version").check()
    assert t.page.inner_text("#progress") == "12 / 12 reviewed, 3 pairs changed"
    shown = {iid: (t.item(iid).locator("[data-role=source-edits]").inner_text(),
                   t.item(iid).locator("[data-role=english-edits]").inner_text())
             for iid in drafts}
    path = t.download(tmp_path / "download.json")
    assert "ready to hand in" in t.page.inner_text("#status")
    filled = t.values()

    file = read_annotation_file(path, task)  # the real download passes the validator
    assert json.loads(path.read_text("utf-8"))["task"]["annotator"] == "annotator-7"
    by_id = {a.instance_id: a for a in file.annotations}
    assert [by_id[i].action for i in (0, 5, 7, 2, 1)] == [
        "edited", "edited", "reverted", "reverted", "kept"]
    for iid, annotation in by_id.items():  # the tool's counts are Python's counts
        prefix = "edits to the original: " if annotation.flagged else (
            "edits to the LLM paraphrase: ")
        assert shown[iid] == (f"{prefix}{annotation.source_edits}",
                              f"{prefix}{annotation.english_edits}")
    row = table1_row(task.locale, file.annotations)
    assert (row.kept_llm_paraphrase, row.reverted_to_flores, row.edited_source_only,
            row.edited_target_only, row.edited_both) == (8, 2, 0, 1, 1)
    assert row.n_revised_english_changed == 3  # item 0, item 5, item 7 (reverted)
    revert_edits = count_edits(drafts[7].english_draft, drafts[7].english_original, "word")
    assert row.avg_edits_english == pytest.approx((1 + 1 + revert_edits) / 3)

    store = Store(tmp_path / "e2e.duckdb")
    ingest_annotation_file(store, path, task)
    (summary,) = store.query("annotation_summary")
    assert summary["kept_llm_paraphrase"] == 8 and summary["annotator"] == "annotator-7"
    assert summary["avg_edits_english"] == pytest.approx(row.avg_edits_english)

    fresh = tool()
    assert fresh.values() != filled
    fresh.page.set_input_files("#load", str(path))
    expect(fresh.page.locator("#status")).to_have_text(re.compile(r"\S"))
    assert "Loaded 12 items from download.json" in fresh.page.inner_text("#status")
    assert fresh.values() == filled
    assert fresh.page.inner_text("#progress") == "12 / 12 reviewed, 3 pairs changed"
    fresh.open()  # the loaded file is now the autosaved draft
    assert fresh.values() == filled
    again = json.loads(fresh.download(tmp_path / "again.json").read_text("utf-8"))
    first = json.loads(path.read_text("utf-8"))
    assert again["task"] == first["task"]
    assert again["items"] == first["items"]  # every field, timestamps included


def load_and_read(t: Tool, path: Path) -> tuple[str, str]:
    t.page.evaluate("document.getElementById('error').textContent = ''")  # wait for this one
    t.page.set_input_files("#load", str(path))
    expect(t.page.locator("#error")).to_have_text(re.compile(r"\S"))
    return t.page.inner_text("#error"), t.page.inner_text("#status")


def test_files_for_another_task_or_other_drafts_are_refused(tool, tasks, tmp_path):
    t = tool()
    t.box(0).fill("Mein eigener Satz.")
    before = t.values()
    other_task = AnnotationTask.from_drafts(demo_drafts("spa_Latn_Spain"))
    spanish = tmp_path / "spanish.json"
    spanish.write_text(json.dumps(annotation_document(other_task)), "utf-8")
    error, _ = load_and_read(t, spanish)
    assert "spanish.json" in error and "\n" not in error
    assert re.search(rf"{other_task.task_id} \(locale spa_Latn_Spain\).*"
                     rf"{tasks['de'].task_id} \(locale deu_Latn_Germany\)", error)
    assert t.values() == before

    drafts = list(tasks["de"].drafts)
    drafts[4] = replace(drafts[4], english_draft="A different draft.")
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(annotation_document(AnnotationTask.from_drafts(drafts))), "utf-8")
    error, _ = load_and_read(t, stale)
    assert "deu_Latn_Germany" in error and "drafts" in error
    assert t.values() == before

    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(annotation_document(tasks["de"]))[:-30], "utf-8")
    error, _ = load_and_read(t, broken)
    assert "broken.json" in error and "JSON" in error
    assert t.values() == before
    t.open()
    assert t.values() == before  # nothing refused reached the autosave either


def test_hostile_text_in_drafts_stays_text(tool, tasks):
    t = tool()
    hostile = tasks["de"].by_id()[1]
    item = t.item(1)
    assert t.box(1).input_value() == hostile.source_draft
    assert t.box(1, "english").input_value() == hostile.english_draft
    current = item.locator("[data-role=source-current]").inner_text()
    assert HOSTILE[0] in current and "{{7*7}}" in current and "49" not in current
    assert HOSTILE[1] in item.locator("[data-role=english-current]").inner_text()
    assert HOSTILE[3] in item.locator("[data-role=english-current]").inner_text()
    t.box(1).fill(hostile.source_draft + ' <img src=x onerror=alert(3)> "><svg onload=alert(4)>')
    assert "onerror=alert(3)" in " ".join(t.marks(1, "source-current"))
    assert t.page.locator("img, svg, iframe, object, embed").count() == 0
    assert t.page.locator("script").count() == 7  # the data block and the six scripts
    raw = t.item(2).locator("pre.raw-answer").inner_text()
    assert raw.endswith(HOSTILE[0])


def test_flagged_drafts_are_marked_with_the_raw_answer(tool, tasks):
    t = tool()
    flagged = tasks["de"].by_id()[2]
    item = t.item(2)
    assert "flagged" in (item.get_attribute("class") or "")
    note = item.get_by_role("note").inner_text()
    assert "Flagged draft." in note and "no 'English:' line in the answer" in note
    assert t.box(2).input_value() == flagged.source_original
    assert item.locator("[data-role=source-edits]").inner_text() == "edits to the original: 0"
    assert item.locator("[data-role=action]").inner_text() == "reverted to FLORES"
    t.page.select_option("#show", "flagged")
    assert t.page.locator("article.item:visible").count() == 1
    assert t.page.inner_text("#shown") == "1 of 12 items shown"


def active(t: Tool) -> str:
    """What has the focus: an element's id, or its item's heading as "heading <key>"."""
    return t.page.evaluate("""() => {
      const el = document.activeElement;
      return el.tagName === "H2" ? "heading " + el.textContent : el.id || el.tagName; }""")


def test_j_and_k_move_between_items_and_never_type(tool):
    """On a fresh page the first j goes to item 0; moves focus the item (its heading), never an
    edit box, so a second j moves on instead of being typed into a sentence and autosaved."""
    t = tool()
    start = t.values()
    progress = t.page.inner_text("#progress")
    t.page.keyboard.press("j")
    assert active(t) == "heading deu_Latn_Germany_0"
    assert t.item(0).get_attribute("aria-current") == "true"
    t.page.keyboard.press("j")
    t.page.keyboard.press("j")
    assert active(t) == "heading deu_Latn_Germany_2"
    t.page.keyboard.press("k")
    assert active(t) == "heading deu_Latn_Germany_1"
    assert t.item(0).get_attribute("aria-current") is None
    assert t.values() == start and t.page.inner_text("#progress") == progress
    assert t.item(1).locator("[data-role=action]").inner_text() == "LLM paraphrase kept"

    t.page.keyboard.press("Enter")  # Enter goes into the current item
    assert active(t) == "item-1-source"
    t.page.keyboard.press("j")  # in a text box j is a letter like any other
    assert t.box(1).input_value() == "j" + start["items"][1][0]
    t.page.keyboard.press("Backspace")
    t.page.keyboard.press("Escape")  # out of the box: the shortcuts work again
    assert active(t) == "heading deu_Latn_Germany_1"
    t.page.keyboard.press("Tab")  # Tab goes into the boxes as usual
    assert active(t) == "item-1-source"
    t.page.keyboard.press("Alt+ArrowDown")  # from a box too, and out of it
    assert active(t) == "heading deu_Latn_Germany_2"
    t.page.keyboard.press("Control+Enter")
    assert t.item(2).locator("[data-role=confirm]").is_checked()
    assert t.page.inner_text("#status") == "deu_Latn_Germany_2: confirmed."
    t.page.keyboard.press("Alt+ArrowUp")
    t.page.keyboard.press("Control+Enter")
    assert t.item(1).locator("[data-role=confirm]").is_checked()
    t.item(4).locator("[data-role=confirm]").focus()  # a checkbox is not a text field
    t.page.keyboard.press("j")
    assert active(t) == "heading deu_Latn_Germany_5"
    t.page.click("#next-pending")
    assert active(t) == "heading deu_Latn_Germany_6"
    t.open()  # nothing the keys did was typed into the saved draft
    assert [row[:2] for row in t.values()["items"]] == [row[:2] for row in start["items"]]


def test_shortcuts_never_fire_in_a_text_field(tool):
    t = tool()
    t.page.focus("#annotator")
    t.page.keyboard.type("jk")
    assert t.page.input_value("#annotator") == "jk"
    t.page.focus("#show")
    t.page.keyboard.press("j")
    assert active(t) == "show" and t.page.input_value("#show") == "all"
    t.page.evaluate("""() => { const p = document.createElement("p");
      p.contentEditable = "true"; p.id = "editable"; document.querySelector("main").append(p); }""")
    t.page.focus("#editable")
    t.page.keyboard.type("jk")
    assert active(t) == "editable" and t.page.inner_text("#editable") == "jk"


def test_a_frozen_box_says_how_to_unfreeze_it(tool):
    t = tool()
    t.item(3).get_by_role("checkbox", name="Confirm final version").check()
    note = t.item(3).locator("[data-role=english-frozen]")
    assert note.is_hidden()
    t.box(3, "english").focus()
    t.page.keyboard.type("x")
    expect(note).to_be_visible()
    assert "untick \u201cConfirm final version\u201d" in note.inner_text()
    assert note.get_attribute("aria-live") == "polite"
    box_id = t.box(3, "english").get_attribute("id")
    assert note.get_attribute("id") in t.box(3, "english").get_attribute("aria-describedby")
    assert box_id == "item-3-english"
    t.item(3).get_by_role("checkbox", name="Confirm final version").uncheck()
    assert note.is_hidden()


def test_the_llm_draft_stays_visible_after_an_edit_or_a_revert(tool, tasks):
    drafts = tasks["de"].by_id()
    t = tool()
    draft = t.item(0).locator("[data-role=source-draft]")
    assert draft.is_hidden()  # kept: the rephrased text is the draft
    t.box(0).fill(drafts[0].source_draft.replace("Jonas Becker", "Thomas Müller"))
    expect(draft).to_be_visible()
    assert draft.inner_text() == drafts[0].source_draft
    assert "Jonas Becker" in t.marks(0, "source-draft")  # highlighted against the original
    assert t.item(0).locator("[data-role=english-draft]").is_hidden()  # that side is unchanged
    t.item(7).get_by_role("button", name="Revert to the original FLORES entry").click()
    for side in ("source", "english"):
        shown = t.item(7).locator(f"[data-role={side}-draft]")
        expect(shown).to_be_visible()
        assert shown.inner_text() == getattr(drafts[7], f"{side}_draft")
    t.open()  # after a reload too
    expect(t.item(7).locator("[data-role=english-draft]")).to_be_visible()
    t.item(7).get_by_role("button", name="Restore the LLM paraphrase").click()
    assert t.item(7).locator("[data-role=english-draft]").is_hidden()


def test_load_over_unsaved_work_asks_what_it_would_replace(tool, tasks, tmp_path):
    task = tasks["de"]
    finals = {0: (task.by_id()[0].source_original, task.by_id()[0].english_original)}
    path = tmp_path / "other-work.json"
    path.write_text(json.dumps(annotation_document(task, finals)), "utf-8")
    t = tool()
    t.box(5, "english").fill(task.by_id()[5].english_draft + " Indeed, indeed.")
    t.item(6).get_by_role("checkbox", name="Confirm final version").check()
    mine = t.values()
    t.page.set_input_files("#load", str(path))
    question = t.page.locator("#load-question")
    expect(question).to_be_visible()
    assert question.inner_text() == (
        "Load other-work.json in place of the work in this browser? It would replace 2 of 12 "
        "items changed (1 edit to the starting texts, 1 confirmed), not all of it in a "
        "downloaded file (Download JSON keeps it).")
    assert active(t) == "load-no"
    t.page.get_by_role("button", name="Cancel").click()
    assert t.values() == mine
    assert t.page.inner_text("#status") == (
        "Nothing was loaded from other-work.json: your work is unchanged.")
    t.page.set_input_files("#load", str(path))
    t.page.get_by_role("button", name="Yes, replace my work").click()
    assert "Loaded 12 items from other-work.json" in t.page.inner_text("#status")
    assert t.box(0).input_value() == task.by_id()[0].source_original
    assert t.box(5, "english").input_value() == task.by_id()[5].english_draft

    t.item(4).get_by_role("checkbox", name="Confirm final version").uncheck()  # a change
    t.download(tmp_path / "mine.json")  # downloaded: nothing would be lost, so no question
    t.page.set_input_files("#load", str(path))
    expect(t.page.locator("#status")).to_have_text(re.compile("^Loaded 12 items"))
    assert t.page.locator("#load-confirm").is_hidden()


PHONE = {"width": 390, "height": 844}


def test_instructions_collapse_after_the_first_visit_and_the_header_fits_a_phone(tool):
    t = tool()  # the first visit: the instructions are open
    t.page.set_viewport_size(PHONE)
    header = "document.getElementById('tool-header').getBoundingClientRect().height"
    assert t.page.evaluate("document.getElementById('instructions').open")
    assert t.page.evaluate(header) <= PHONE["height"] / 4
    t.box(0, "english").fill("Some edit.")
    t.open()  # a later visit of the same task: collapsed, and the restore message is shown
    assert not t.page.evaluate("document.getElementById('instructions').open")
    assert "Restored the draft" in t.page.inner_text("#status")
    height = t.page.evaluate(header)
    assert height <= PHONE["height"] / 4, height
    t.page.keyboard.press("j")  # the current item starts below the sticky header
    top = t.page.evaluate("document.getElementById('item-0').getBoundingClientRect().top")
    assert top >= height
    t.page.goto(t.url.replace("/de/", "/zh/"))  # another task: its first visit
    t.page.wait_for_selector("html[data-ready=true]")
    assert t.page.evaluate("document.getElementById('instructions').open")


def test_every_control_has_an_accessible_name(tool):
    t = tool()
    page = t.page
    assert page.get_by_label("Revised rephrased German sentence").count() == 12
    assert page.get_by_label("Revised rephrased English sentence").count() == 12
    assert page.get_by_role("checkbox", name="Confirm final version").count() == 12
    assert page.get_by_label("Your annotator label").count() == 1
    assert page.get_by_label("Load JSON", exact=True).count() == 1
    # messages are announced: #status (role status), #error (role alert), the counters (output)
    assert page.get_by_role("status").count() == 3 and page.get_by_role("alert").count() == 1
    assert page.locator("#status").get_attribute("role") == "status"
    for button in page.locator("button").all():
        assert button.inner_text().strip() or button.get_attribute("aria-label")
    assert page.get_by_role("heading", name="deu_Latn_Germany_11").count() == 1
    assert "Revert to the original FLORES entry" in page.inner_text("#instructions")


def test_chinese_highlights_single_characters(tool, tasks):
    t = tool("zh")
    draft = tasks["zh"].by_id()[3]
    original = draft.source_original
    k = original.index("，") + 1  # a character inside a clause (no spaces in Chinese)
    t.box(3).fill(original[:k] + "鑫" + original[k + 1:])
    assert t.marks(3, "source-current") == ["鑫"]  # character diff: one character marked
    assert t.marks(3, "source-original") == [original[k]]
    assert t.item(3).locator("[data-role=source-diff]").inner_text() == (
        "Mandarin Chinese diff: 2")
    edits = count_edits(draft.source_draft, t.box(3).input_value(), "char")
    assert t.item(3).locator("[data-role=source-edits]").inner_text() == (
        f"edits to the LLM paraphrase: {edits}")
    assert t.box(3).get_attribute("lang") == "cmn-Hans"


def test_the_tool_works_from_a_file_url(browser, root, tmp_path):
    t = Tool(browser, (root / "de" / "index.html").as_uri())
    t.box(0, "english").fill("Written offline.")
    t.open()
    assert t.box(0, "english").input_value() == "Written offline."
    path = t.download(tmp_path / "offline.json")
    assert json.loads(path.read_text("utf-8"))["items"][0]["final"]["english"] == (
        "Written offline.")
    t.close()


def test_a_request_leaving_the_machine_is_recorded_aborted_and_fails_the_page(browser, server):
    """:class:`ToolPage` intercepts only requests that go neither to the local server nor to a
    file: one to another host is recorded and aborted, and closing the page fails on it."""
    t = Tool(browser, f"{server}/de/index.html")
    with pytest.raises(PlaywrightError, match="ERR_FAILED"):  # the page's CSP stops a fetch
        t.page.goto("http://example.com/x")
    assert t.hosts == {"example.com"}  # the local server's requests were not intercepted
    with pytest.raises(AssertionError, match=r"example\.com|Failed to load"):
        t.close()
