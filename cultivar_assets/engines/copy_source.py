"""The copy-the-source baseline: its "translation" is the source sentence itself.

Not a model. It scores what surface overlap (names, numbers, punctuation) alone earns, a floor
for the leaderboard; it is labelled ``type: baseline`` everywhere it appears.
"""

from __future__ import annotations

from collections.abc import Sequence

from cultivar_assets import __version__
from cultivar_assets.engines.base import Engine, EngineInfo
from cultivar_assets.engines.prompts import GenerationRequest


class CopySourceEngine(Engine):
    name = "copy-source"
    prompt_kinds = ("source",)
    output_settings = ()

    def info(self) -> EngineInfo:
        return EngineInfo(self.name, __version__, None, None)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return [request.source for request in requests]
