"""Tokens (textdiff.py) and edit counts (construction/annotation/text_edits.py) on hand-made
cases, and their JavaScript twin (site/static/textdiff.js) run through node on the same cases."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest
from conftest import REPO_ROOT

from cultivar_assets.construction.annotation.text_edits import (
    count_edits,
    mode_for_locale,
)
from cultivar_assets.textdiff import (
    JOINERS,
    WHITESPACE,
    _encode,
    changed_flags,
    diff_ops,
    token_texts,
    tokenize,
)

# (before, after, mode, edits, changed tokens), each worked out by hand.
EDIT_CASES = [
    # The paper's Figure 1 (deu_Latn_Germany_3): one replaced name; its "German diff: 4".
    ("Der Pilot wurde als Staffelführer Dilokrit Pattavee identifiziert.",
     "Der Pilot wurde als Staffelführer Werner Mölders identifiziert.", "word", 1, 4),
    # Figure 1 (deu_Latn_Germany_5): three names replaced apart; "German diff: 6".
    ("Der 28-jährige Vidal war vor drei Spielzeiten von Sevilla zu Barça gekommen.",
     "Der 28-jährige Goretzka war vor drei Spielzeiten von Schalke zu Bayern gekommen.",
     "word", 3, 6),
    ("28-year-old Vidal joined Barça three seasons ago, from Sevilla.",
     "28-year-old Goretzka joined Bayern three seasons ago, from Schalke.", "word", 3, 6),
    ("in Berlin.", "in Berlin Mitte.", "word", 1, 1),  # an insertion only
    ("the old town hall of Bern", "the town hall of Bern", "word", 1, 1),  # a deletion only
    ("at 9:30 am", "at 10:30 am", "word", 1, 2),  # punctuation is its own token
    ("Anna Schmidt from Köln", "Jan Meier from Köln", "word", 1, 4),  # adjacent: one run
    ("Anna Schmidt from Köln", "Anna Schmidt from Köln", "word", 0, 0),
    ("Anna  Schmidt", "Anna Schmidt", "word", 0, 0),  # whitespace is no token
    # Devanagari: vowel signs and viramas stay inside their words.
    ("प्रधानमंत्री नरेंद्र मोदी ने दिल्ली में कहा", "प्रधानमंत्री राहुल गांधी ने मुंबई में कहा",
     "word", 2, 6),
    # Chinese, character mode: 北京 -> 清华 is one run of two characters each side.
    ("我在北京大学工作。", "我在清华大学工作。", "char", 1, 4),
    ("张伟在上海见了李娜。", "王芳在上海见了刘洋。", "char", 2, 8),
    # Japanese: 田中 -> 山田 keeps 田, so 山 (inserted) and 中 (deleted) are two runs.
    ("東京駅で田中さんに会った。", "大阪駅で山田さんに会った。", "char", 3, 6),
    ("在UTC时间9点", "在UTC时间10点", "char", 1, 3),  # Latin and digits: characters too
    ("", "Neuer Text", "word", 1, 2),
    ("Alter Text", "", "word", 1, 2),
]

TOKEN_CASES = [
    ("Baden-Württemberg's 3 km²", "word",
     ["Baden", "-", "Württemberg", "'", "s", "3", "km²"]),
    ("a\u00a0b\u3000c\u2009d\n e", "word", ["a", "b", "c", "d", "e"]),
    ("می\u200cخواهم بروم", "word", ["می\u200cخواهم", "بروم"]),  # ZWNJ inside a word
    ("ok 👍🏽!", "word", ["ok", "👍", "🏽", "!"]),  # astral code points, one each
    ("प्रधानमंत्री ने", "word", ["प्रधानमंत्री", "ने"]),
    ("北京 2025年", "char", ["北", "京", "2", "0", "2", "5", "年"]),
    ("东京\u3000タワー", "char", ["东", "京", "タ", "ワ", "ー"]),
]


def count_changed_tokens(before: str, after: str, mode: str) -> int:
    """Tokens removed from ``before`` plus tokens added in ``after`` (the tool's "changed"
    count, from the highlighting flags)."""
    flags_a, flags_b = changed_flags(before, after, mode)
    return sum(flags_a) + sum(flags_b)


@pytest.mark.parametrize(("before", "after", "mode", "edits", "changed"), EDIT_CASES)
def test_edit_counts_on_hand_made_cases(before, after, mode, edits, changed):
    assert count_edits(before, after, mode) == edits
    assert count_changed_tokens(before, after, mode) == changed


@pytest.mark.parametrize(("text", "mode", "expected"), TOKEN_CASES)
def test_tokenisation_on_hand_made_cases(text, mode, expected):
    tokens = tokenize(text, mode)
    assert [t.text for t in tokens] == expected
    assert all(text[t.start:t.end] == t.text for t in tokens)


def test_mode_follows_the_locales_script():
    assert mode_for_locale("cmn_Hans_China") == "char"
    assert mode_for_locale("jpn_Jpan_Japan") == "char"
    assert mode_for_locale("deu_Latn_Germany") == "word"
    assert mode_for_locale("hin_Deva_India") == "word"
    assert mode_for_locale("acm_Arab_Iraq") == "word"
    with pytest.raises(ValueError, match="'German'"):
        mode_for_locale("German")
    with pytest.raises(ValueError, match="'words'"):
        tokenize("x", "words")


WORDS = ["Berlin", "München", "Anna", "die", "der", "FC", "9:30", "Uhr", ",", ".", "(", ")",
         "नरेंद्र", "मोदी", "ने", "दिल्ली", "北京", "大学", "的", "山田", "さん", "😀",
         "Straße", "km²", "don't", "«", "»", "–", "2025"]
# tab and line feed (allowed in a final text), a lone surrogate, a joiner, a mark
ODD_WORDS = ["a\tb", "x\ny", "\ud800", "می\u200cخواهم", "e\u0301", "\u00a0", "\u3000"]


def random_cases(n: int, seed: int = 11, max_words: int = 14, max_changes: int = 5,
                 words: list[str] = WORDS) -> list[tuple[str, str, str]]:
    """Sentences of mixed-script words with random replacements, insertions and deletions."""
    rng = random.Random(seed)
    cases = []
    for index in range(n):
        mode = "char" if index % 3 == 0 else "word"
        a = [rng.choice(words) for _ in range(rng.randint(0, max_words))]
        b = list(a)
        for _ in range(rng.randint(0, max_changes)):
            kind = rng.random()
            if kind < 0.4 and b:
                b[rng.randrange(len(b))] = rng.choice(words)
            elif kind < 0.7:
                b.insert(rng.randint(0, len(b)), rng.choice(words))
            elif b:
                del b[rng.randrange(len(b))]
        joiner = "" if mode == "char" and index % 2 else " "
        cases.append((joiner.join(a), joiner.join(b), mode))
    return cases


NODE_SCRIPT = """
const T = require(process.argv[1]);
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = cases.map(([a, b, mode]) => {
  const c = T.compare(a, b, mode);
  return {before: c.before.map(t => t.text), after: c.after.map(t => t.text),
          edits: c.edits, changed: c.changedTokens, count: T.countEdits(a, b, mode)};
});
process.stdout.write(JSON.stringify(out));
"""


def run_js(cases: list[tuple[str, str, str]]) -> list[dict]:
    script = REPO_ROOT / "site" / "static" / "textdiff.js"
    result = subprocess.run(["node", "-e", NODE_SCRIPT, str(script)],
                            input=json.dumps(cases), capture_output=True, text=True, check=True,
                            timeout=60)
    return json.loads(result.stdout)


needs_node = pytest.mark.skipif(shutil.which("node") is None,
                                reason="needs node to run the tool's JavaScript")


@needs_node
def test_javascript_agrees_with_python_on_the_hand_made_cases():
    cases = [(a, b, mode) for a, b, mode, _, _ in EDIT_CASES]
    cases += [(text, text, mode) for text, mode, _ in TOKEN_CASES]
    results = run_js(cases)
    for (a, b, _mode, edits, changed), js in zip(EDIT_CASES, results, strict=False):
        assert (js["edits"], js["count"], js["changed"]) == (edits, edits, changed), (a, b)
    for (_text, _mode, expected), js in zip(TOKEN_CASES, results[len(EDIT_CASES):],
                                           strict=True):
        assert js["before"] == expected


@needs_node
def test_javascript_agrees_with_python_on_random_edits():
    cases = random_cases(600)
    results = run_js(cases)
    disagreements = []
    for (a, b, mode), js in zip(cases, results, strict=True):
        python = {"before": [t.text for t in tokenize(a, mode)],
                  "after": [t.text for t in tokenize(b, mode)],
                  "edits": count_edits(a, b, mode), "changed": count_changed_tokens(a, b, mode)}
        if {k: js[k] for k in python} != python:
            disagreements.append((a, b, mode, js, python))
    assert disagreements == []
    assert sum(count_edits(a, b, m) > 0 for a, b, m in cases) > 300  # the cases do edit


def reference_tokens(text: str, mode: str) -> list[str]:
    """The tokenisation of the module docstring, one code point at a time (as the JavaScript
    does it): the reference the regular-expression tokeniser is checked against."""
    import unicodedata

    def word(char: str) -> bool:
        return char in JOINERS or unicodedata.category(char)[0] in "LMN"

    tokens, position = [], 0
    while position < len(text):
        if text[position] in WHITESPACE:
            position += 1
            continue
        end = position + 1
        if mode == "word" and word(text[position]):
            while end < len(text) and word(text[end]):
                end += 1
        tokens.append(text[position:end])
        position = end
    return tokens


def test_the_cpp_diff_and_the_tokeniser_agree_with_the_pure_python_references():
    """text_edits runs diff-match-patch's C++ port; Google's pure-Python port (the library the
    counts were defined with) must find the same diffs, token for token."""
    from diff_match_patch import diff_match_patch

    reference = diff_match_patch()
    reference.Diff_Timeout = 0
    cases = (random_cases(1500, seed=21, max_words=60, max_changes=12)
             + random_cases(500, seed=22, words=WORDS + ODD_WORDS))
    for a, b, mode in cases:
        tokens_a, tokens_b = token_texts(a, mode), token_texts(b, mode)
        assert tokens_a == reference_tokens(a, mode), (a, mode)
        left, right = _encode(tokens_a, tokens_b)
        expected = [(op, len(part)) for op, part in reference.diff_main(left, right, False)]
        assert diff_ops(tokens_a, tokens_b) == expected, (a, b, mode)


@needs_node
def test_javascript_agrees_with_python_on_long_and_odd_texts():
    """Longer texts (up to 120 words, 30 changes) and odd characters: tab, line feed, a lone
    surrogate, joiners, combining marks, no-break and ideographic spaces."""
    cases = (random_cases(150, seed=31, max_words=120, max_changes=30)
             + random_cases(150, seed=32, words=WORDS + ODD_WORDS))
    results = run_js(cases)
    for (a, b, mode), js in zip(cases, results, strict=True):
        assert (js["before"], js["edits"], js["changed"]) == (
            token_texts(a, mode), count_edits(a, b, mode), count_changed_tokens(a, b, mode)), (
            a, b, mode)
