"""Helpers for the construction tests: hand-made sentences with their entities marked.

A marked sentence writes each entity as ``[text|LABEL]``: ``"[Ada Lovelace|PERSON] visited
[Turin|GPE]."``. ``FakeRecogniser`` returns exactly those entities, so a test states what "spaCy
found" beside the sentence; the real pipeline is tested separately. Every sentence is invented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cultivar_assets.construction.selection.entities import Entity, NerInfo
from cultivar_assets.data.source_benchmark import SourceBenchmark, SourceInstance

_MARK = re.compile(r"\[([^\[\]|]+)\|([A-Z_]+)\]")
LABELS = ("CARDINAL", "DATE", "EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "MONEY", "NORP",
          "ORDINAL", "ORG", "PERCENT", "PERSON", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART")


def unmark(marked: str) -> tuple[str, tuple[Entity, ...]]:
    """The plain sentence and the entities marked in it."""
    text, entities, position = "", [], 0
    for match in _MARK.finditer(marked):
        text += marked[position:match.start()]
        start = len(text)
        text += match.group(1)
        entities.append(Entity(start, len(text), match.group(2), match.group(1)))
        position = match.end()
    return text + marked[position:], tuple(entities)


class FakeRecogniser:
    """Returns the entities marked in the sentences it was built from."""

    def __init__(self, marked: Sequence[str]) -> None:
        self.found = dict(unmark(m) for m in marked)
        self.info = NerInfo("test", "fake-ner", "0", LABELS, ("ner",))
        self.calls = 0

    def recognise(self, texts: Sequence[str], show_bar: bool = True) -> list[tuple[Entity, ...]]:
        self.calls += 1
        return [self.found[text] for text in texts]


def benchmark_of(marked: Sequence[str], topics: Sequence[str | None] | None = None,
                 ids: Sequence[int] | None = None) -> SourceBenchmark:
    """A source benchmark of the marked sentences (ids 0..n-1 unless given)."""
    ids = list(ids) if ids is not None else list(range(len(marked)))
    topics = list(topics) if topics is not None else [None] * len(marked)
    instances = tuple(
        SourceInstance(i, unmark(m)[0], {"deu_Latn": f"[de] {i}"}, "wikinews", t)
        for i, m, t in zip(ids, marked, topics, strict=True))
    return SourceBenchmark("test", "hand-made sentences", False, instances, ("deu_Latn",), {},
                           "hand-made")
