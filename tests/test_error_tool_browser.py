"""The error-annotation tool (paper §5) in a real browser, and Table 5 from what it downloads.

The sample comes from the store of tests/statistics_helpers.py plus a system with hostile
output (script tags, attribute breakers); the pages are built by the real builder and driven
with Chromium. Every page records console errors, dialogs and contacted hosts: none may appear
but the local server. Each test gets a fresh browser context (empty storage).
"""

from __future__ import annotations

import json
import re

import pytest
from browser_helpers import NEEDS_CHROMIUM, ToolPage, serve
from error_helpers import copy_store, sample_config
from playwright.sync_api import expect
from statistics_helpers import build_statistics_store

from cultivar_assets.engines.base import EngineInfo
from cultivar_assets.error_analysis.file import read_error_file
from cultivar_assets.error_analysis.sample import build_error_sample
from cultivar_assets.error_analysis.store import ingest_error_files
from cultivar_assets.error_analysis.table import read_table5
from cultivar_assets.error_analysis.tool import build_error_tools
from cultivar_assets.error_analysis.types import CODES
from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.site.diff import word_diff
from cultivar_assets.store.records import (
    dataset_fingerprint,
    read_test_sets,
    write_translations,
)
from cultivar_assets.translation import TranslationRow, TranslationRun

pytestmark = NEEDS_CHROMIUM
HOSTILE = '</script><script>alert(1)</script> <img src=x onerror=alert(2)> "><svg onload=alert(3)>'
MODELS = ["copy-source-baseline", "memoriser", "hostile"]
LOCALES = ["cmn_Hans_China", "deu_Latn_Germany"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The six systems of statistics_helpers and a seventh whose every output is hostile."""
    folder = tmp_path_factory.mktemp("error_tool")
    store, _ = build_statistics_store(folder / "tool.duckdb", folder / "cache")
    rows = [TranslationRow("hostile", test_set.name, segment.segment_id, segment.source,
                           segment.reference, f"{HOSTILE} {segment.segment_id}", HOSTILE, ())
            for test_set in read_test_sets(store) for segment in test_set.segments]
    spec = load_models().get("copy-source-baseline").model_copy(
        update={"id": "hostile", "type": "LLM", "family": "Test"})
    run = TranslationRun(spec, "f", EngineInfo("test", "0", None, None), "h", rows, 0, 0, 0.0)
    write_translations(store, run, dataset_fingerprint(store))
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=100)
    score_model(store, "hostile", config)
    aggregate(store, config=config)
    return store


@pytest.fixture(scope="module")
def config():
    return sample_config(locales=LOCALES, models=MODELS, n_instances=3)


@pytest.fixture(scope="module")
def sample(store, config):
    return build_error_sample(store, config)


@pytest.fixture(scope="module")
def root(tmp_path_factory, sample):
    root = tmp_path_factory.mktemp("error_pages")
    build_error_tools(sample, root)
    return root


@pytest.fixture(scope="module")
def server(root):
    with serve(root) as url:
        yield url


class ErrorTool(ToolPage):
    def group(self, iid: int):
        return self.page.locator(f"#group-{iid}")

    def check(self, iid: int, system_index: int, code: str):
        return self.group(iid).locator("fieldset.system").nth(system_index).locator(
            f"input[data-code={code}]")

    def done(self, iid: int):
        return self.group(iid).locator("[data-role=done]")

    def marks(self) -> dict[str, list[str]]:
        out = {}
        for box in self.page.locator("fieldset.system").all():
            out[box.get_attribute("data-key")] = [
                c.get_attribute("data-code") for c in box.locator("input[data-code]").all()
                if c.is_checked()]
        return out


@pytest.fixture
def tool(browser, server, sample):
    opened = []

    def open_tool(locale: str = LOCALES[0]) -> ErrorTool:
        opened.append(ErrorTool(browser, f"{server}/{locale}/index.html"))
        return opened[-1]

    yield open_tool
    for each in opened:
        each.close()


def test_marks_counts_and_done_freeze_the_instance(tool, sample):
    task = sample.by_locale()[LOCALES[0]]
    first = task.instance_ids[0]
    t = tool()
    assert t.page.inner_text("#progress") == "0 / 3 instances done, 0 errors marked"
    t.check(first, 0, "NE").check()
    t.check(first, 0, "OM").check()
    assert t.group(first).locator("[data-role=count]").inner_text() == "2 errors marked"
    t.check(first, 1, "MT").focus()  # keyboard: 1-9 toggle the focused translation's types
    t.page.keyboard.press("2")
    assert t.check(first, 1, "PY").is_checked()
    t.page.keyboard.press("2")
    assert not t.check(first, 1, "PY").is_checked()
    t.page.keyboard.press("9")
    assert t.check(first, 1, "RF").is_checked()
    assert t.page.inner_text("#progress") == "0 / 3 instances done, 3 errors marked"
    t.done(first).check()
    assert t.group(first).locator("[data-role=state]").inner_text() == "done"
    assert t.check(first, 0, "NE").get_attribute("aria-disabled") == "true"
    t.check(first, 0, "OM").click(force=True)  # frozen (aria-disabled): the click changes nothing
    assert t.check(first, 0, "OM").is_checked()
    assert t.page.inner_text("#progress") == "1 / 3 instances done, 3 errors marked"
    t.done(first).focus()
    t.page.keyboard.press("Control+Enter")  # not done any more: editable again
    assert not t.done(first).is_checked()
    assert t.check(first, 0, "NE").get_attribute("aria-disabled") == "false"
    assert t.page.inner_text("#status") == f"{LOCALES[0]}_{first}: not done any more."
    t.check(first, 0, "NE").focus()
    t.page.keyboard.press("Alt+ArrowDown")
    second = task.instance_ids[1]
    assert t.page.evaluate("document.activeElement.closest('article').id") == f"group-{second}"
    t.page.keyboard.press("k")
    assert t.page.evaluate("document.activeElement.closest('article').id") == f"group-{first}"


def test_reload_restores_and_reset_clears(tool, sample):
    first = sample.by_locale()[LOCALES[0]].instance_ids[0]
    t = tool()
    start = t.marks()
    t.page.fill("#annotator", "A. Nonym")
    t.check(first, 2, "UT").check()
    t.group(first).locator("[data-role=note]").nth(2).fill("left in Chinese")
    marked = t.marks()
    t.open()
    assert t.marks() == marked and t.page.input_value("#annotator") == "A. Nonym"
    assert t.group(first).locator("[data-role=note]").nth(2).input_value() == "left in Chinese"
    assert "Restored the draft saved in this browser" in t.page.inner_text("#status")
    t.page.click("#reset")
    t.page.get_by_role("button", name="Yes, reset the draft").click()
    assert t.marks() == start
    t.open()
    assert t.marks() == start


def test_annotate_download_ingest_table5_and_load_into_a_fresh_profile(tool, sample, store,
                                                                       config, tmp_path):
    """End to end: marks clicked in the page, the downloaded file validated and ingested, Table 5
    counted from it; loaded into a fresh profile it restores every mark."""
    folder = tmp_path / "returned"
    folder.mkdir()
    clicked: dict[str, list[str]] = {}
    for locale in LOCALES:
        task = sample.by_locale()[locale]
        t = tool(locale)
        t.page.fill("#annotator", "annotator-3")
        for k, item in enumerate(task.items):
            codes = [CODES[k % 9]] if item.model_id != "copy-source-baseline" else []
            if item.model_id == "memoriser":
                codes = sorted({*codes, "NE"}, key=CODES.index)
            clicked[item.key] = codes
            box = t.page.locator(f"fieldset.system[data-key='{item.key}']")
            for code in codes:
                box.locator(f"input[data-code={code}]").check()
        for iid in task.instance_ids:
            t.done(iid).check()
        assert t.page.inner_text("#progress").startswith("3 / 3 instances done")
        path = t.download(folder / f"{task.task_id}.errors.json")
        assert "ready to hand in" in t.page.inner_text("#status")
        file = read_error_file(path, sample.by_locale())
        assert {a.key: list(a.errors) for a in file.annotations} == {
            i.key: clicked[i.key] for i in task.items}
        assert file.annotator == "annotator-3" and not file.is_demo

        fresh = tool(locale)
        fresh.page.set_input_files("#load", str(path))
        expect(fresh.page.locator("#status")).to_have_text(re.compile(r"\S"))
        assert f"Loaded 9 translations from {path.name}" in fresh.page.inner_text("#status")
        assert fresh.marks() == t.marks()
        again = json.loads(fresh.download(tmp_path / f"again-{locale}.json").read_text("utf-8"))
        first = json.loads(path.read_text("utf-8"))
        assert again["items"] == first["items"] and again["task"] == first["task"]

    db = copy_store(store, tmp_path / "table5.duckdb")
    ingest_error_files(db, sample, config.model_copy(update={"annotations_dir": str(folder)}))
    table5, correlations = read_table5(db)
    assert len(table5) == 6
    for row in table5:
        mine = [codes for key, codes in clicked.items()
                if key.startswith(f"{row['locale']}_") and key.endswith(f":{row['model_id']}")]
        assert row["total"] == sum(len(c) for c in mine)
        assert row["ne"] == sum("NE" in c for c in mine)
    assert {r["language"] for r in correlations} == {"cmn", "deu"}


def test_files_for_another_task_are_refused(tool, sample, tmp_path):
    t = tool(LOCALES[0])
    first = sample.by_locale()[LOCALES[0]].instance_ids[0]
    t.check(first, 0, "NE").check()
    before = t.marks()
    other = tool(LOCALES[1])
    path = other.download(tmp_path / "german.json")
    t.page.set_input_files("#load", str(path))
    expect(t.page.locator("#error")).to_have_text(re.compile(r"\S"))
    german = sample.by_locale()[LOCALES[1]].task_id
    assert t.page.inner_text("#error") == (
        f"Refused german.json: it belongs to task {german} (locale {LOCALES[1]}), not to this "
        f"task {sample.by_locale()[LOCALES[0]].task_id} (locale {LOCALES[0]}). Nothing was "
        "loaded.")
    broken = tmp_path / "broken.json"
    broken.write_text(path.read_text("utf-8")[:-40], "utf-8")
    t.page.set_input_files("#load", str(broken))
    expect(t.page.locator("#error")).to_have_text(re.compile("broken.json: it is not valid JSON"))
    assert t.marks() == before


def test_hostile_output_stays_text_and_controls_have_names(tool, sample):
    t = tool()
    task = sample.by_locale()[LOCALES[0]]
    hostile = next(i for i in task.items if i.model_id == "hostile")
    box = t.page.locator(f"fieldset.system[data-key='{hostile.key}']")
    assert HOSTILE in box.locator("[data-role=hypothesis]").inner_text()
    assert t.page.locator("img, svg, iframe, object, embed").count() == 0
    assert t.page.locator("script").count() == 4  # the data block and the three scripts
    assert t.page.get_by_role("checkbox", name="system 1: Named entity (NE)").count() == 3
    assert t.page.get_by_role("checkbox", name=re.compile(r"^Done: every translation")).count(
        ) == 3
    assert t.page.get_by_label("Your annotator label").count() == 1
    assert t.page.get_by_label("Load JSON", exact=True).count() == 1
    assert "Pinyin / romanisation" in t.page.inner_text("#instructions")
    t.page.select_option("#show", "done")
    assert t.page.inner_text("#shown") == "0 of 3 instances shown"


def test_the_tool_works_from_a_file_url(browser, root, sample, tmp_path):
    t = ErrorTool(browser, (root / LOCALES[1] / "index.html").as_uri())
    first = sample.by_locale()[LOCALES[1]].instance_ids[0]
    t.check(first, 1, "AD").check()
    t.open()
    assert t.check(first, 1, "AD").is_checked()
    document = json.loads(t.download(tmp_path / "offline.json").read_text("utf-8"))
    assert [i["errors"] for i in document["items"]][1] == ["AD"]
    t.close()


def focused_key(t: ErrorTool) -> str | None:
    """The item key of the translation whose checkbox has the focus."""
    return t.page.evaluate("""() => { const box = document.activeElement.closest(
      "fieldset.system"); return box ? box.dataset.key : document.activeElement.tagName; }""")


def test_keys_move_between_instances_and_systems_and_never_type(tool, sample):
    """The first j goes to the first instance's first translation; n goes to the next
    translation (on into the next instance); digits tick the current one; none of it types."""
    task = sample.by_locale()[LOCALES[0]]
    keys = [item.key for item in task.items]  # instance by instance, systems in order
    t = tool()
    t.page.keyboard.press("j")
    assert focused_key(t) == keys[0]
    assert t.group(task.instance_ids[0]).get_attribute("aria-current") == "true"
    t.page.keyboard.press("n")
    assert focused_key(t) == keys[1]
    t.page.keyboard.press("1")
    t.page.keyboard.press("n")
    t.page.keyboard.press("n")  # past the last system: the next instance's first
    assert focused_key(t) == keys[3]
    t.page.keyboard.press("N")
    assert focused_key(t) == keys[2]
    t.page.keyboard.press("j")
    t.page.keyboard.press("k")
    assert focused_key(t) == keys[0]
    assert t.marks() == {key: (["NE"] if key == keys[1] else []) for key in keys}
    note = t.group(task.instance_ids[0]).locator("[data-role=note]").first
    note.focus()
    t.page.keyboard.type("jn1")  # in the note these are letters
    assert note.input_value() == "jn1" and focused_key(t) == keys[0]
    t.page.keyboard.press("Escape")
    t.page.keyboard.press("j")
    assert focused_key(t) == keys[3]
    assert t.marks()[keys[0]] == []


def test_done_ticks_stay_clearly_visible_and_say_how_to_unfreeze(tool, sample):
    first = sample.by_locale()[LOCALES[0]].instance_ids[0]
    t = tool()
    t.check(first, 0, "NE").check()
    t.done(first).check()
    ticked, unticked = t.check(first, 0, "NE"), t.check(first, 0, "PY")
    style = """el => { const label = el.closest("label"), s = getComputedStyle(label);
      return [getComputedStyle(el).opacity, s.opacity, s.backgroundColor, s.fontWeight,
              el.disabled]; }"""
    tick, other = ticked.evaluate(style), unticked.evaluate(style)
    assert tick[:2] == ["1", "1"] and tick[4] is False  # not greyed out as a disabled box is
    assert tick[2] != other[2] and int(tick[3]) >= 600 > int(other[3])
    assert ticked.evaluate("el => getComputedStyle(el.closest('label'), '::after').content"
                           ) == '" \u2713"'
    unticked.click(force=True)  # aria-disabled: Playwright would wait for it to be enabled
    notice = t.group(first).locator("fieldset.system").first.locator("[data-role=frozen]")
    expect(notice).to_be_visible()
    assert "untick \u201cDone\u201d" in notice.inner_text()
    assert not unticked.is_checked()
    t.group(first).locator("[data-role=note]").nth(1).focus()
    t.page.keyboard.type("x")
    expect(t.group(first).locator("fieldset.system").nth(1).locator("[data-role=frozen]")
           ).to_be_visible()
    t.done(first).uncheck()
    assert notice.is_hidden()


def marked(locator) -> list[str]:
    return locator.locator("mark.changed").all_inner_texts()


def changed(spans) -> list[str]:
    return [span.text for span in spans if span.changed]


def test_source_references_and_outputs_are_highlighted_with_the_browsers_diff(
        tool, sample, store):
    """The marks are those of site/diff.py (whose browser twin textdiff.js the segment
    browser uses; tests/test_site_js.py holds the two together); German: word mode."""
    task = sample.by_locale()[LOCALES[1]]
    originals = {(r["locale"], r["instance_id"]): r for r in store.query("instances")}
    t = tool(LOCALES[1])
    some = False
    for iid in task.instance_ids:
        item = next(i for i in task.items if i.instance_id == iid)
        row = originals[(LOCALES[1], iid)]
        group = t.group(iid)
        source = changed(word_diff(row["source_original"], item.source, "word")[1])
        before, after = word_diff(item.original_reference, item.reference, "word")
        assert marked(group.locator("[data-role=source]")) == source
        assert marked(group.locator("[data-role=reference]")) == changed(after)
        assert marked(group.locator("[data-role=original-reference]")) == changed(before)
        assert group.locator("[data-role=source]").inner_text() == item.source
        for each in (i for i in task.items if i.instance_id == iid):
            box = t.page.locator(f"fieldset.system[data-key='{each.key}']")
            hyp = box.locator("[data-role=hypothesis]")
            assert marked(hyp) == changed(word_diff(item.reference, each.hypothesis, "word")[1])
            assert hyp.inner_text() == each.hypothesis
        some = some or bool(source)
    assert some  # the sample's localised sources do differ from their originals


def test_load_over_unsaved_marks_asks_first(tool, sample, tmp_path):
    first = sample.by_locale()[LOCALES[0]].instance_ids[0]
    other = tool()
    other.check(first, 1, "AD").check()
    path = other.download(tmp_path / "theirs.json")
    t = tool()
    t.check(first, 0, "NE").check()
    t.check(first, 0, "OM").check()
    mine = t.marks()
    t.page.set_input_files("#load", str(path))
    question = t.page.locator("#load-question")
    expect(question).to_be_visible()
    assert question.inner_text() == (
        "Load theirs.json in place of the work in this browser? It would replace 1 of 9 "
        "translations marked, noted or done (2 error marks, 0 notes, 0 instances done), not "
        "all of it in a downloaded file (Download JSON keeps it).")
    t.page.get_by_role("button", name="Cancel").click()
    assert t.marks() == mine
    t.page.set_input_files("#load", str(path))
    t.page.get_by_role("button", name="Yes, replace my work").click()
    assert t.marks() == other.marks()


def test_instructions_collapse_after_the_first_visit_and_the_header_fits_a_phone(tool):
    t = tool()
    t.page.set_viewport_size({"width": 390, "height": 844})
    header = "document.getElementById('tool-header').getBoundingClientRect().height"
    assert t.page.evaluate("document.getElementById('instructions').open")
    assert t.page.evaluate(header) <= 844 / 4
    t.check(int(t.page.locator("article.item").first.get_attribute("data-id")), 0, "NE").check()
    t.open()
    assert not t.page.evaluate("document.getElementById('instructions').open")
    assert "Restored the draft" in t.page.inner_text("#status")
    assert t.page.evaluate(header) <= 844 / 4
