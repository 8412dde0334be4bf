"""Translation engines behind one small interface, registered by name and imported lazily.

Importing this package imports no engine: ``engine_registry().get(name)`` imports the module the
first time a run needs it (engine modules in turn import torch/transformers only when a model is
loaded), so ``dagster definitions validate`` stays fast.

Other packages add engines without editing this one: an installed distribution that declares an
entry point in the group :data:`ENTRY_POINT_GROUP` (``cultivar.engines``; docs/extending.md) has
its engines registered after the built-in ones, as lazily.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from cultivar_assets.registry import Registry

if TYPE_CHECKING:
    from cultivar_assets.engines.base import Engine

ENTRY_POINT_GROUP = "cultivar.engines"
_ENGINES = {
    "transformers": "cultivar_assets.engines.transformers_engine:TransformersEngine",
    "seq2seq": "cultivar_assets.engines.seq2seq_engine:Seq2SeqEngine",
    "vllm": "cultivar_assets.engines.vllm_engine:VLLMEngine",
    "openai": "cultivar_assets.engines.openai_engine:OpenAIEngine",
    "copy-source": "cultivar_assets.engines.copy_source:CopySourceEngine",
    "replay": "cultivar_assets.engines.replay:ReplayEngine",
    "outputs": "cultivar_assets.engines.outputs:OutputsEngine",
}


@cache
def engine_registry() -> Registry[type[Engine]]:
    registry: Registry[type[Engine]] = Registry("engine")
    for name, target in _ENGINES.items():
        registry.register(name, target)
    registry.register_entry_points(ENTRY_POINT_GROUP)
    return registry
