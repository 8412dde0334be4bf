"""Prompt styles (``prompt_styles.yaml``) and the generation requests they produce.

A prompt style's *template hash* is the sha256 of its canonical JSON definition, few-shot
examples included: any change to the wording, the examples or the stop strings changes the hash,
which is stored with every translation (as lm-evaluation-harness does for its prompts).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import jinja2
import yaml

from cultivar_assets.data.locales import source_languages
from cultivar_assets.registry import Registry

PromptKind = Literal["plain", "chat", "source"]
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


@dataclass(frozen=True)
class GenerationRequest:
    """One segment to translate: what the engine receives."""

    source: str
    language: str  # FLORES+ code of the source language
    kind: PromptKind
    prompt: str | None  # plain prompts
    messages: tuple[tuple[str, str], ...] | None  # chat prompts: (role, content)
    stop: tuple[str, ...]
    max_new_tokens: int

    def cache_payload(self) -> dict[str, Any]:
        """Everything about the request that can change the output."""
        return {
            "kind": self.kind,
            "source": self.source,
            "language": self.language,
            "prompt": self.prompt,
            "messages": self.messages,
            "stop": self.stop,
            "max_new_tokens": self.max_new_tokens,
        }


@dataclass(frozen=True)
class PromptStyle:
    name: str
    kind: PromptKind
    description: str
    definition: dict[str, Any]  # the YAML entry plus the shots it uses

    @property
    def template_hash(self) -> str:
        blob = json.dumps(self.definition, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()

    def request(self, source: str, language: str, max_new_tokens: int) -> GenerationRequest:
        """The generation request for ``source`` in ``language`` (FLORES+ code)."""
        values = {
            "source": source,
            "language": language_name(language),
            "language_code": language,
            "shots": self.definition.get("shots", []),
        }
        prompt = messages = None
        if self.kind == "plain":
            prompt = _ENV.from_string(self.definition["template"]).render(values)
        elif self.kind == "chat":
            messages = tuple(
                (m["role"], _ENV.from_string(m["content"]).render(values))
                for m in self.definition["messages"]
            )
        return GenerationRequest(
            source=source,
            language=language,
            kind=self.kind,
            prompt=prompt,
            messages=messages,
            stop=tuple(self.definition.get("stop", [])),
            max_new_tokens=max_new_tokens,
        )


class PromptError(ValueError):
    """A prompt cannot be built as asked (e.g. a language without a registered name)."""


ENGLISH = ("eng_Latn", "English")


def language_name(code: str) -> str:
    """English name of a FLORES+ language code (``hin_Deva`` -> ``Hindi``), from the locale
    registry (English: ``eng_Latn``). An unknown code is an error: a prompt never shows a bare
    code in place of a name."""
    if code == ENGLISH[0]:
        return ENGLISH[1]
    locales = source_languages().get(code)
    if not locales:
        raise PromptError(f"no language name for {code!r}: it is not the source language of any "
                          "locale in the registry (cultivar_assets/data/locales.csv)")
    return locales[0].language_name


@cache
def prompt_style_registry() -> Registry[PromptStyle]:
    text = resources.files("cultivar_assets.engines").joinpath("prompt_styles.yaml").read_text()
    data = yaml.safe_load(text)
    registry: Registry[PromptStyle] = Registry("prompt style")
    for name, entry in data["styles"].items():
        kind = entry["kind"]
        if kind not in ("plain", "chat", "source"):
            raise ValueError(f"prompt style {name!r}: unknown kind {kind!r}")
        if kind == "plain" and "template" not in entry:
            raise ValueError(f"prompt style {name!r}: a plain style needs a template")
        if kind == "chat" and "messages" not in entry:
            raise ValueError(f"prompt style {name!r}: a chat style needs messages")
        definition = dict(entry)
        texts = [entry.get("template", "")] + [m["content"] for m in entry.get("messages", [])]
        if any("shots" in text for text in texts):  # the template iterates over the examples
            definition["shots"] = data.get("shots", [])
        registry.register(name, PromptStyle(name, kind, entry.get("description", ""), definition))
    return registry


def get_prompt_style(name: str) -> PromptStyle:
    return prompt_style_registry().get(name)
