"""Localisation prompt templates (paper §2.2, Appendix A): a registry of data, and the requests.

Templates live in ``localisation_prompts.yaml`` (its header documents the fields and the
placeholders); more can come from a YAML file of the same form (``prompts_file`` in the
settings). A template's *hash* (``prompt_hash``, stored with every draft) is the sha256 of its
canonical JSON definition, worked examples included, so any change to the wording, the examples,
the stop strings or the retry message changes it.

Rendering (:meth:`LocalisationPrompt.request`) fills the placeholders with Python's
``str.format`` rules; the values (names, location, sentences) are inserted as they are and never
read as templates themselves, so braces in a sentence are safe. Names come from the locale
registry (:func:`prompt_values`): ``src_name`` the language's English name, ``tgt_name``
"English", ``src_location`` the locale's location.

A template is checked when it is loaded: its kind, the fields that kind needs, the format syntax
of every text, no unknown placeholder, the five required placeholders (``src_name``,
``tgt_name``, ``src_location``, ``src_text``, ``tgt_text``) in the system and user texts together,
and ``src_text`` and ``tgt_text`` in the user text; a bad template is a
:class:`~cultivar_assets.construction.errors.ConstructionError` naming the file and the template.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from cultivar_assets.config_files import ConfigFileError, load_yaml_text, read_text_file
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.data.locales import get_locale
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.registry import Registry

PromptKind = Literal["chat", "plain"]
TGT_NAME = "English"
REQUIRED = ("src_name", "tgt_name", "src_location", "src_text", "tgt_text")
IN_USER = ("src_text", "tgt_text")
EXAMPLE_FIELDS = ("src_name", "src_location", "src_text", "tgt_text", "src_localised",
                  "tgt_localised")
# placeholders allowed in each text of a template
_ALLOWED = {
    "system": set(REQUIRED), "user": set(REQUIRED), "answer_prefix": set(REQUIRED),
    "answer": {*REQUIRED, "src_localised", "tgt_localised"},
    "retry": {*REQUIRED, "reason"},
}
_FIELDS = {
    "chat": {"required": {"kind", "system", "user"},
             "optional": {"description", "answer", "shots", "retry", "stop"}},
    "plain": {"required": {"kind", "system", "user", "answer_prefix"},
              "optional": {"description", "answer", "shots", "separator", "stop", "retry"}},
}
BUNDLED = "localisation_prompts.yaml"


def placeholders(text: str) -> set[str]:
    """The ``{name}`` fields of a format string (a ValueError for bad brace syntax)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@dataclass(frozen=True)
class LocalisationPrompt:
    """One template of the registry (fields: the YAML file's header)."""

    name: str
    kind: PromptKind
    description: str
    definition: dict[str, Any]  # the template's entry, worked examples included
    source: str  # the file it came from

    @property
    def prompt_hash(self) -> str:
        blob = json.dumps(self.definition, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()

    @property
    def stop(self) -> tuple[str, ...]:
        return tuple(self.definition.get("stop", []))

    @property
    def can_retry(self) -> bool:
        """A retry changes the request (a chat template with a retry message)."""
        return self.kind == "chat" and bool(self.definition.get("retry"))

    def _fill(self, key: str, values: Mapping[str, str]) -> str:
        return self.definition[key].format_map(values)

    def _examples(self) -> list[tuple[str, str]]:
        """(user text, answer text) of each worked example."""
        examples = []
        for shot in self.definition.get("shots", []):
            values = {**shot, "tgt_name": TGT_NAME}
            examples.append((self._fill("user", values), self._fill("answer", values)))
        return examples

    def answer_prefix(self, values: Mapping[str, str]) -> str:
        """What a plain prompt ends with and the answer continues (empty for chat)."""
        return self._fill("answer_prefix", values) if self.kind == "plain" else ""

    def request(self, values: Mapping[str, str], max_new_tokens: int,
                retries: tuple[tuple[str, str], ...] = ()) -> GenerationRequest:
        """The request for one instance (``values``: :func:`prompt_values`).

        ``retries``: (malformed answer, reason) of earlier attempts, in order; each becomes an
        assistant turn and the ``retry`` message (chat templates only).
        """
        if self.kind == "chat":
            messages = [("system", self._fill("system", values))]
            for user, answer in self._examples():
                messages += [("user", user), ("assistant", answer)]
            messages.append(("user", self._fill("user", values)))
            for answer, reason in retries:
                messages += [("assistant", answer),
                             ("user", self._fill("retry", {**values, "reason": reason}))]
            prompt, chat = None, tuple(messages)
        else:
            if retries:
                raise ValueError(f"prompt {self.name!r} is plain: it has no retry turns")
            parts = [self._fill("system", values)]
            parts += [f"{user}\n{answer}" for user, answer in self._examples()]
            parts.append(f"{self._fill('user', values)}\n{self.answer_prefix(values)}")
            prompt, chat = self.definition.get("separator", "\n\n").join(parts), None
        return GenerationRequest(source=values["src_text"], language=values["language"],
                                 kind=self.kind, prompt=prompt, messages=chat, stop=self.stop,
                                 max_new_tokens=max_new_tokens)


def prompt_values(locale: str, source: str, english: str) -> dict[str, str]:
    """The placeholder values for one instance of ``locale`` (names from the locale registry)."""
    entry = get_locale(locale)
    return {"src_name": entry.language_name, "tgt_name": TGT_NAME,
            "src_location": entry.location, "src_text": source, "tgt_text": english,
            "language": entry.source_language}


def _check(entry: Any) -> list[str]:
    """Every problem of one template entry."""
    if not isinstance(entry, dict):
        return [f"must be a mapping, not {type(entry).__name__}"]
    kind = entry.get("kind")
    if kind not in _FIELDS:
        return [f"kind must be chat or plain, not {kind!r}"]
    problems = []
    fields = _FIELDS[kind]
    missing = sorted(fields["required"] - set(entry))
    if missing:
        problems.append(f"a {kind} template needs {', '.join(missing)}")
    if "label" in entry:
        problems.append("label: a template carries no label (a localiser is described by the "
                        "engine and model that ran, drafts.localiser_description); remove it")
    unknown = sorted(set(entry) - fields["required"] - fields["optional"] - {"label"})
    if unknown:
        problems.append(f"unknown fields {', '.join(unknown)}")
    shots = entry.get("shots", [])
    if shots and "answer" not in entry:
        problems.append("worked examples (shots) need an answer text")
    found: dict[str, set[str]] = {}
    for key in _ALLOWED:
        if key not in entry:
            continue
        text = entry[key]
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{key} must be a non-empty text")
            continue
        try:
            found[key] = placeholders(text)
        except ValueError as error:
            problems.append(f"{key}: bad placeholder syntax ({error}); write {{{{ and }}}} for "
                            "literal braces")
            continue
        extra = sorted(found[key] - _ALLOWED[key])
        if extra:
            problems.append(f"{key}: unknown placeholders {', '.join('{' + p + '}' for p in extra)}"
                            f" (known: {', '.join('{' + p + '}' for p in sorted(_ALLOWED[key]))})")
    if "system" in found and "user" in found:
        lacking = [p for p in REQUIRED if p not in found["system"] | found["user"]]
        if lacking:
            problems.append("the system and user texts lack the placeholders "
                            f"{', '.join('{' + p + '}' for p in lacking)}")
        lacking = [p for p in IN_USER if p not in found["user"]]
        if lacking:
            problems.append(f"the user text lacks {', '.join('{' + p + '}' for p in lacking)}")
    if not isinstance(shots, list):
        problems.append("shots must be a list")
        shots = []
    for number, shot in enumerate(shots, 1):
        if not isinstance(shot, dict) or sorted(shot) != sorted(EXAMPLE_FIELDS):
            problems.append(f"worked example {number} needs exactly the fields "
                            f"{', '.join(EXAMPLE_FIELDS)}")
        elif not all(isinstance(v, str) and v.strip() for v in shot.values()):
            problems.append(f"worked example {number} has an empty field")
    stop = entry.get("stop", [])
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        problems.append("stop must be a list of non-empty strings")
    if "separator" in entry and not isinstance(entry["separator"], str):
        problems.append("separator must be a text")
    return problems


def parse_prompts(text: str, where: str) -> dict[str, LocalisationPrompt]:
    """The templates of one YAML file; one ConstructionError lists every problem."""
    try:
        data = load_yaml_text(text, where)  # strict: no key twice, aliases bounded
    except ConfigFileError as error:
        raise ConstructionError(f"not valid YAML: {error}") from None
    templates = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(templates, dict) or not templates:
        raise ConstructionError(f"{where}: expected a top-level 'templates' mapping of prompt "
                                "templates")
    problems, parsed = [], {}
    for name, entry in templates.items():
        found = _check(entry)
        if found:
            problems += [f"template {name!r}: {p}" for p in found]
            continue
        parsed[str(name)] = LocalisationPrompt(
            name=str(name), kind=entry["kind"], description=entry.get("description", ""),
            definition=dict(entry), source=where)
    if problems:
        raise ConstructionError(f"{where}: bad localisation prompt templates:\n"
                                + "\n".join(f"  - {p}" for p in problems))
    return parsed


@cache
def _bundled() -> dict[str, LocalisationPrompt]:
    text = resources.files("cultivar_assets.construction.localisation").joinpath(
        BUNDLED).read_text("utf-8")
    return parse_prompts(text, BUNDLED)


def prompt_registry(prompts_file: str | Path | None = None) -> Registry[LocalisationPrompt]:
    """The bundled templates, plus those of ``prompts_file`` (no name may be defined twice)."""
    registry: Registry[LocalisationPrompt] = Registry("localisation prompt template")
    for name, prompt in _bundled().items():
        registry.register(name, prompt)
    if prompts_file is not None:
        path = Path(prompts_file)
        try:
            text = read_text_file(path, "localisation prompts file")
        except ConfigFileError as error:
            raise ConstructionError(str(error)) from None
        for name, prompt in parse_prompts(text, str(path)).items():
            if name in registry:
                raise ConstructionError(f"{path}: template {name!r} is already defined in "
                                        f"{registry.get(name).source}; choose another name")
            registry.register(name, prompt)
    return registry


def get_prompt(name: str, prompts_file: str | Path | None = None) -> LocalisationPrompt:
    """The template ``name`` (an unknown name lists the known ones)."""
    return prompt_registry(prompts_file).get(name)
