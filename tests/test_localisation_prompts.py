"""The localisation prompt templates: the paper's text exactly, names from the registry, hashes,
the few-shot version for base models, and bad templates refused with the file and the name."""

from __future__ import annotations

import re

import pytest
import yaml

from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.localisation.prompts import (
    get_prompt,
    prompt_registry,
    prompt_values,
)

# Figure 4 of the paper (Appendix A), with {src_name} = German, {tgt_name} = English and
# {src_location} = Switzerland, typed from the figure.
PAPER_SYSTEM = (
    "I will provide a pair of German-English parallel sentences. Your task is to localize both "
    "sentences to Switzerland by rephrasing the named entities. This includes but is not limited "
    "to culturally, historically, geographically, and politically relevant entities. The "
    "rephrased German and English sentences must remain parallel. Maintain the original "
    "grammatical structure, tone, and sentence length as closely as the new entities allow. "
    "Output in the exact same format without any formatting or explanatory text:\n"
    "German: ...\nEnglish: ..."
)


def test_the_paper_prompt_word_for_word():
    prompt = get_prompt("cultivar-paper")
    values = prompt_values("deu_Latn_Switzerland", "Der Satz {src_name}.", "The {sentence}.")
    request = prompt.request(values, 64)
    assert request.kind == "chat" and request.prompt is None
    assert request.messages == (
        ("system", PAPER_SYSTEM),
        ("user", "German: Der Satz {src_name}.\nEnglish: The {sentence}."),  # braces stay text
    )
    assert request.max_new_tokens == 64 and request.stop == ()
    assert request.language == "deu_Latn"


def test_names_come_from_the_locale_registry():
    assert prompt_values("cmn_Hans_Singapore", "s", "e") == {
        "src_name": "Mandarin Chinese", "tgt_name": "English", "src_location": "Singapore",
        "src_text": "s", "tgt_text": "e", "language": "cmn_Hans"}
    us = get_prompt("cultivar-paper").request(prompt_values("hin_Deva_US", "स", "e"), 8)
    # wording is the interface: the paper's prompt, as the model reads it
    assert us.messages[0][1].startswith("I will provide a pair of Hindi-English parallel")
    # wording is the interface: the paper's prompt, as the model reads it
    assert "to localize both sentences to US by" in us.messages[0][1]
    with pytest.raises(ValueError, match="'deu_Latn_Austria'"):
        prompt_values("deu_Latn_Austria", "s", "e")


def test_retry_turns_carry_the_answer_and_the_reason():
    prompt = get_prompt("cultivar-paper")
    values = prompt_values("spa_Latn_Spain", "Hola.", "Hello.")
    request = prompt.request(values, 8, (("Claro: Hola.", "no line starts with 'Spanish:'"),))
    roles = [role for role, _ in request.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert request.messages[2][1] == "Claro: Hola."
    # wording is the interface: the retry turn the model reads
    assert request.messages[3][1] == (
        "Your answer could not be read (no line starts with 'Spanish:'). Output only the two "
        "localised sentences, in exactly this format and nothing else:\nSpanish: ...\n"
        "English: ...")


def test_the_few_shot_version_for_base_models():
    prompt = get_prompt("cultivar-paper-fewshot")
    assert prompt.kind == "plain" and "label" not in prompt.definition
    values = prompt_values("deu_Latn_Switzerland", "Ein Satz.", "A sentence.")
    text = prompt.request(values, 128).prompt
    assert text.startswith(PAPER_SYSTEM + "\n\nFrench: Mardi, la maire de Lyon")
    # wording is the interface: docs/building-a-benchmark.md (the few-shot prompt)
    assert "\nLocalised to Canada:\nFrench: Mardi, la mairesse de Québec" in text
    # wording is the interface: docs/building-a-benchmark.md (the few-shot prompt)
    assert "\nLocalised to Brazil:\nPortuguese: O festival de jazz de Salvador" in text
    # wording is the interface: docs/building-a-benchmark.md (the few-shot prompt)
    assert text.endswith("\n\nGerman: Ein Satz.\nEnglish: A sentence.\nLocalised to "
                         "Switzerland:\nGerman:")
    assert prompt.answer_prefix(values) == "German:"
    assert prompt.stop == ("\n\n", "\nLocalised to")
    assert not prompt.can_retry and get_prompt("cultivar-paper").can_retry


def _write(tmp_path, templates: dict, name: str = "prompts.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"templates": templates}, allow_unicode=True), "utf-8")
    return path


PAPER = get_prompt("cultivar-paper").definition


def test_a_changed_word_changes_the_hash(tmp_path):
    same = _write(tmp_path, {"mine": dict(PAPER)})
    changed = _write(tmp_path, {"mine": {**PAPER, "system": PAPER["system"].replace(
        "rephrasing", "replacing")}}, "changed.yaml")
    paper = get_prompt("cultivar-paper")
    assert get_prompt("mine", same).prompt_hash == paper.prompt_hash
    assert get_prompt("mine", changed).prompt_hash != paper.prompt_hash
    assert len(paper.prompt_hash) == 64
    assert get_prompt("cultivar-paper-fewshot").prompt_hash != paper.prompt_hash
    assert {"cultivar-paper", "cultivar-paper-fewshot", "mine"} <= set(prompt_registry(same))


@pytest.mark.parametrize(("change", "message"), [
    ({"system": PAPER["system"].replace("{src_location}", "the location")},
     "template 'bad': the system and user texts lack the placeholders {src_location}"),
    ({"user": "{src_name}: {src_text}"},
     "template 'bad': the system and user texts lack the placeholders {tgt_text}"),
    ({"user": PAPER["user"] + " {location}"},
     "template 'bad': user: unknown placeholders {location}"),
    ({"system": PAPER["system"] + " {oops"},
     "template 'bad': system: bad placeholder syntax"),
    ({"kind": "completion"}, "template 'bad': kind must be chat or plain, not 'completion'"),
    ({"kind": "plain"}, "template 'bad': a plain template needs answer_prefix"),
    ({"shots": [{"src_name": "French"}]}, "template 'bad': worked examples (shots) need an "
                                          "answer text"),
    ({"temperature": 0.3}, "template 'bad': unknown fields temperature"),
])
def test_a_bad_template_is_refused_with_the_file_and_the_name(tmp_path, change, message):
    path = _write(tmp_path, {"bad": {**PAPER, **change}})
    with pytest.raises(ConstructionError) as error:
        prompt_registry(path)
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)


def test_prompts_files_that_cannot_be_used(tmp_path):
    with pytest.raises(ConstructionError, match=re.escape(str(tmp_path / "nope.yaml"))):
        prompt_registry(tmp_path / "nope.yaml")
    clash = _write(tmp_path, {"cultivar-paper": dict(PAPER)})
    with pytest.raises(ConstructionError, match=r"'cultivar-paper'.*localisation_prompts\.yaml"):
        prompt_registry(clash)
    empty = tmp_path / "empty.yaml"
    empty.write_text("styles: {}\n", "utf-8")
    with pytest.raises(ConstructionError, match=rf"{re.escape(str(empty))}.*'templates'"):
        prompt_registry(empty)
    with pytest.raises(ValueError, match=r"'cultivar-papr'.*'cultivar-paper'"):
        get_prompt("cultivar-papr")
