"""Reading localisation answers: strict about the two labelled lines, forgiving about wrapping."""

from __future__ import annotations

import pytest

from cultivar_assets.construction.localisation.answer import (
    MalformedAnswer,
    ParsedAnswer,
    parse_answer,
)

GOOD = ParsedAnswer("Der FC Basel gewann in Bern.", "FC Basel won in Bern.")


@pytest.mark.parametrize("answer", [
    "German: Der FC Basel gewann in Bern.\nEnglish: FC Basel won in Bern.",
    "  German:   Der FC Basel gewann in Bern.  \r\n\r\nEnglish: FC Basel won in Bern.\n\n",
    'German: "Der FC Basel gewann in Bern."\nEnglish: “FC Basel won in Bern.”',
    "German: „Der FC Basel gewann in Bern.“\nEnglish: 'FC Basel won in Bern.'",
    "```\nGerman: Der FC Basel gewann in Bern.\nEnglish: FC Basel won in Bern.\n```",
    "```text\nGerman: Der FC Basel gewann in Bern.\nEnglish: FC Basel won in Bern.\n```\n",
    "<think>Basel is in Switzerland.\nSo: German: no</think>\nGerman: Der FC Basel gewann in "
    "Bern.\nEnglish: FC Basel won in Bern.",
    "**German:** Der FC Basel gewann in Bern.\n**English:** FC Basel won in Bern.",
    "- german: Der FC Basel gewann in Bern.\n- ENGLISH： FC Basel won in Bern.",
])
def test_forgiven_wrappings(answer):
    assert parse_answer(answer, "German", "English") == GOOD


def test_the_answer_is_cut_at_the_first_stop_string():
    answer = (" Der FC Basel gewann in Bern.\nEnglish: FC Basel won in Bern.\nLocalised to "
              "Switzerland:\nGerman: noch einer")
    assert parse_answer("German:" + answer, "German", "English",
                        ("\n\n", "\nLocalised to")) == GOOD
    assert isinstance(parse_answer("German:" + answer, "German", "English"), MalformedAnswer)


def test_quotes_inside_a_text_are_kept():
    answer = 'German: "Ja", sagte er, "gut"\nEnglish: "Yes," he said.'
    assert parse_answer(answer, "German", "English") == ParsedAnswer(
        '"Ja", sagte er, "gut"', '"Yes," he said.')


def test_an_unchanged_pair_is_a_valid_draft():
    assert parse_answer("Hindi: वही वाक्य।\nEnglish: The same.", "Hindi", "English") == (
        ParsedAnswer("वही वाक्य।", "The same."))


@pytest.mark.parametrize(("answer", "reason"), [
    ("", "the answer is empty"),
    ("Der FC Basel gewann.\nFC Basel won.", "no line starts with 'German:'"),
    ("German: Der FC Basel gewann.", "no line starts with 'English:'"),
    ("German: A.\nEnglish: B.\nGerman: C.\nEnglish: D.", "2 lines start with 'German:'"),
    ("English: FC Basel won.\nGerman: Der FC Basel gewann.",
     "the 'English:' line comes before the 'German:' line"),
    ("Here is the localised pair:\nGerman: A.\nEnglish: B.",
     "1 unlabelled line (first: 'Here is the localised pair:')"),
    ("German: A.\nEnglish: B.\nNote: I replaced Toronto.", "1 unlabelled line"),
    ("German: A\nweiter\nEnglish: B.", "1 unlabelled line (first: 'weiter')"),
    ("German:\nEnglish: B.", "the 'German:' line is empty"),
    ('German: A.\nEnglish: ""', "the 'English:' line is empty"),
    ("<think>hmm German: A.\nEnglish: B.", "an unclosed reasoning block (<think>)"),
    ("```\nGerman: A.\n```\n```\nEnglish: B.\n```", "4 code fence lines"),
    ("Sure!\n```\nGerman: A.\nEnglish: B.\n```", "text outside the code block"),
])
def test_malformed_answers_say_why(answer, reason):
    result = parse_answer(answer, "German", "English")
    assert isinstance(result, MalformedAnswer)
    assert result.reason.startswith(reason)
