"""LLM localisation drafts (paper §2.2): what the localisation step produces and people post-edit.

A *draft* is one instance of one locale as the LLM returned it: the source benchmark's original
source–English pair and the localised pair parsed from the answer. A draft whose answer could not
be parsed (after the bounded retries) is kept *flagged*, with the raw answer: never dropped, never
replaced by the original. Hashes (sha256, hex) of the canonical JSON of: ``draft_hash``,
``[locale, instance_id, source_original, english_original, source_draft, english_draft,
raw_answer, flagged]`` (changes whenever anything the annotator sees changes); ``drafts_hash``, a
locale's ``[instance_id, draft_hash]`` pairs in id order (recorded by annotation files);
``prompt_hash``, the prompt template's definition. A *task* is one locale's drafts handed to
annotators, ``task_id = <locale>-<drafts_hash[:12]>``.

:func:`draft_checks` (ours) gives each parsed draft the codes of the checks it fails
(``source_not_in_script``: under :data:`MIN_SCRIPT_SHARE` of its letters in the locale's script;
``source_equals_english``; ``source_equals_original``), on whitespace-collapsed texts; they are a
function of the hashed fields, so not part of ``draft_hash``. :data:`DRAFTS_FILE` is the drafts
beside each tool page, which :func:`read_drafts_file` reads back checking every hash.
:func:`localiser_description` names what ran, from the engine and model, never from the prompt
template or the settings. Each definition in full: ``docs/drafts.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import regex

from cultivar_assets.data.locales import get_locale


def _sha256(value: object) -> str:
    blob = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Draft:
    """One LLM-localised instance (see the module docstring)."""

    locale: str
    instance_id: int
    source_original: str
    english_original: str
    source_draft: str | None  # None when the answer could not be parsed (flagged)
    english_draft: str | None
    raw_answer: str  # the LLM's last answer, as returned
    flagged: bool
    flag_reason: str | None
    prompt_hash: str

    @property
    def draft_hash(self) -> str:
        return _sha256([self.locale, self.instance_id, self.source_original,
                        self.english_original, self.source_draft, self.english_draft,
                        self.raw_answer, self.flagged])

    @property
    def checks(self) -> tuple[str, ...]:
        """The codes of the checks this draft fails (module docstring)."""
        return draft_checks(self)

    def as_dict(self) -> dict:
        return {**asdict(self), "draft_hash": self.draft_hash, "checks": list(self.checks)}


def drafts_hash(drafts: Sequence[Draft]) -> str:
    """The hash of a locale's drafts (see the module docstring)."""
    return _sha256([[d.instance_id, d.draft_hash] for d in sorted(drafts,
                                                                   key=lambda d: d.instance_id)])


def task_id(locale: str, drafts: Sequence[Draft]) -> str:
    """``<locale>-<drafts_hash[:12]>``: names one post-editing task."""
    return f"{locale}-{drafts_hash(drafts)[:12]}"


MIN_SCRIPT_SHARE = 0.5  # ours: at least half of the source side's letters in the locale's script
# ISO 15924 codes of the locale registry that are not Unicode script names themselves
SCRIPT_ALIASES = {"Hans": ("Han",), "Hant": ("Han",), "Jpan": ("Han", "Hiragana", "Katakana"),
                  "Kore": ("Hangul", "Han")}
SCRIPT_NAMES = {"Arab": "Arabic", "Beng": "Bengali", "Cyrl": "Cyrillic", "Deva": "Devanagari",
                "Hans": "Han (simplified)", "Hant": "Han (traditional)", "Jpan": "Japanese",
                "Kore": "Korean", "Latn": "Latin", "Telu": "Telugu"}
CHECKS = {
    "source_not_in_script": "the {language} side is not in the {script} script",
    "source_equals_english": "the {language} side is the English sentence",
    "source_equals_original": "the {language} side is the original sentence, not localised",
}
_LETTER = regex.compile(r"\p{L}")


def _normal(text: str) -> str:
    return " ".join(text.split())


def script_share(text: str, script: str) -> float | None:
    """The share of the letters of ``text`` whose Unicode script is ``script`` (an ISO 15924
    code of the locale registry); None when ``text`` has no letter."""
    letters = _LETTER.findall(text)
    if not letters:
        return None
    names = SCRIPT_ALIASES.get(script, (script,))
    pattern = regex.compile("|".join(rf"\p{{Script={name}}}" for name in names))
    return sum(1 for c in letters if pattern.match(c)) / len(letters)


def draft_checks(draft: Draft) -> tuple[str, ...]:
    """The codes of :data:`CHECKS` that ``draft`` fails, in that order (module docstring)."""
    if draft.flagged or draft.source_draft is None:
        return ()
    source = _normal(draft.source_draft)
    share = script_share(source, get_locale(draft.locale).script)
    failed = {
        "source_not_in_script": share is None or share < MIN_SCRIPT_SHARE,
        "source_equals_english": source in {_normal(draft.english_draft or ""),
                                            _normal(draft.english_original)},
        "source_equals_original": source == _normal(draft.source_original),
    }
    return tuple(code for code in CHECKS if failed[code])


def check_text(code: str, locale: str) -> str:
    """What the check ``code`` found, in words, for a draft of ``locale``."""
    entry = get_locale(locale)
    return CHECKS[code].format(language=entry.language_name,
                               script=SCRIPT_NAMES.get(entry.script, entry.script))


def recorded_from(engine: str, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a ``replay`` recording says it was recorded from (None: another engine, or the
    recording does not say or cannot be read; the engine itself reports an unreadable one)."""
    if engine != "replay" or not options.get("answers"):
        return None
    from cultivar_assets.engines.replay import read_recorded_from

    return read_recorded_from(options["answers"])


def localiser_description(engine: str, model: str, revision: str | None,
                          recorded_from: Mapping[str, Any] | None = None) -> str:
    """How drafts made by ``engine`` and ``model`` are described (module docstring);
    ``recorded_from``: the recording's own record of what it was recorded from (``replay``)."""
    if engine == "replay":
        if not recorded_from or not recorded_from.get("model"):
            return ("recorded answers played back (engine replay; the recording does not say "
                    "which model recorded them)")
        inner = localiser_description(str(recorded_from.get("engine") or "engine not recorded"),
                                      str(recorded_from["model"]), recorded_from.get("revision"))
        return f"recorded answers played back (recorded from {inner})"
    return f"{model} ({engine}{f', revision {revision}' if revision else ''})"


def configured_localiser(config: Any) -> str:
    """:func:`localiser_description` of a localisation configuration (``LocalisationConfig``:
    its engine, model, revision and, for ``replay``, the recording it names)."""
    return localiser_description(config.engine, config.model, config.revision,
                                 recorded_from(config.engine, config.engine_options))


DRAFTS_FILE = "drafts.jsonl"


def drafts_jsonl(drafts: Sequence[Draft]) -> str:
    """The drafts file's text: one JSON object per draft, ids ascending, with ``task_id``, every
    field of the draft, its ``draft_hash`` and its ``checks``."""
    ordered = sorted(drafts, key=lambda d: d.instance_id)
    task = task_id(ordered[0].locale, ordered) if ordered else ""
    return "".join(json.dumps({"task_id": task, **d.as_dict()}, ensure_ascii=False) + "\n"
                   for d in ordered)


def read_drafts_file(path: str | Path) -> list[Draft]:
    """The drafts of a drafts file; a ValueError naming the file and line when a line is not a
    draft or its text does not match its ``draft_hash``."""
    names = [f.name for f in fields(Draft)]
    drafts = []
    lines = Path(path).read_text("utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            draft = Draft(**{name: row[name] for name in names})
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}, line {number}: not a draft ({error})") from None
        if draft.draft_hash != row.get("draft_hash"):
            raise ValueError(f"{path}, line {number}: the draft {draft.locale}_"
                             f"{draft.instance_id} does not match its draft_hash")
        drafts.append(draft)
    return drafts
