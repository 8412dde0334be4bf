"""A database with the demo selection and drafts from the fake OpenAI server's localiser (fast,
no model), for the tests of the post-editing and dataset steps."""

from __future__ import annotations

from pathlib import Path

from localisation_helpers import localising_answer
from openai_server import FakeOpenAIServer

from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.config import (
    AnnotationConfig,
    ConstructionConfig,
    DatasetConfig,
    LocalisationConfig,
    demo_construction,
)
from cultivar_assets.store.database import Store


def fake_construction(root: Path, locales: list[str], url: str = "http://127.0.0.1:9/v1",
                      model: str = "gpt-test", **construction: object) -> ConstructionConfig:
    """The demo's construction settings with the fake server's localiser; ``construction``
    replaces other sections (``source``, ``selection``)."""
    return demo_construction().model_copy(update={**construction,
        "localisation": LocalisationConfig(
            locales=locales, model=model, engine_options={"base_url": url},
            cache_dir=str(root / "cache")),
        "annotation": AnnotationConfig(folder=str(root / "returned"),
                                       tools_dir=str(root / "tools")),
        "dataset": DatasetConfig(folder=str(root / "dataset"))})


def build_drafts(root: Path, locales: list[str], database: Path,
                 model: str = "gpt-test", **construction: object) -> ConstructionConfig:
    """Selection and drafts of ``locales`` in ``database``; returns the construction settings
    (the drafts are cached under ``root``, so a later localisation needs no server)."""
    fake = FakeOpenAIServer(answer=localising_answer).start()
    try:
        settings = fake_construction(root, locales, fake.url, model, **construction)
        store = Store(database)
        build_selection(settings.source, settings.selection, store, show_bar=False)
        build_localisation(settings.localisation, store, show_bar=False)
    finally:
        fake.stop()
    return settings
