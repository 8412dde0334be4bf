"""Dagster resources: the core's configuration models, made configurable in Dagster.

Each resource *is* the corresponding core settings model (multiple inheritance), so the fields,
defaults and validation are defined once, in the core, and appear in the Dagster launchpad.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from pydantic import BaseModel, Field

from cultivar_assets.construction.config import (
    AnnotationConfig,
    ConstructionConfig,
    DatasetConfig,
    LocalisationConfig,
    SelectionConfig,
)
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig
from cultivar_assets.data.sources import DataConfig
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.error_analysis.config import ErrorAnalysisConfig
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.settings import Settings, StorageConfig, storage_root
from cultivar_assets.site.config import SiteConfig
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import Store

M = TypeVar("M", bound=BaseModel)


def core_config(resource: BaseModel, model: type[M]) -> M:
    """The core settings model held by a resource (its fields, validated by the core class)."""
    return model.model_validate(resource.model_dump(include=set(model.model_fields)))


class DataSourceResource(dg.ConfigurableResource, DataConfig):
    """Where the benchmark data comes from (demo, local files or the Hub)."""

    def config(self) -> DataConfig:
        return core_config(self, DataConfig)


class MetricsResource(dg.ConfigurableResource, MetricConfig):
    """How BLEU and chrF are computed (tokenizer, SentencePiece model path)."""

    def config(self) -> MetricConfig:
        return core_config(self, MetricConfig)


class EngineResource(dg.ConfigurableResource, EngineSettings):
    """Engine settings for translation runs, and the model registry they read."""

    models_file: str | None = None
    # model ids or suite:<name> that the sensor and schedule watch
    selection: list[str] = Field(default_factory=lambda: ["suite:demo"])

    def settings(self) -> EngineSettings:
        return core_config(self, EngineSettings)

    def model(self, model_id: str) -> ModelSpec:
        return load_models(self.models_file).get(model_id)


class SiteResource(dg.ConfigurableResource, SiteConfig):
    """Output folders of the charts and the static site, and what the site shows."""


class HubPublishResource(dg.ConfigurableResource, PublishConfig):
    """Where the dataset folder goes and where it is pushed (the token: only its variable name)."""

    def config(self) -> PublishConfig:
        return core_config(self, PublishConfig)


class SourceBenchmarkResource(dg.ConfigurableResource, SourceBenchmarkConfig):
    """The benchmark that Cultivar is built from (FLORES dev or devtest, parallel files, demo)."""

    def config(self) -> SourceBenchmarkConfig:
        return core_config(self, SourceBenchmarkConfig)


class SelectionResource(dg.ConfigurableResource, SelectionConfig):
    """How the named-entity-rich instances are selected (NER, corrections, rules, N)."""

    def config(self) -> SelectionConfig:
        return core_config(self, SelectionConfig)


class LocalisationResource(dg.ConfigurableResource, LocalisationConfig):
    """How the selected instances are localised: locales, prompt template, engine and model,
    prices (the API key: only its variable's name, in engine_options)."""

    def config(self) -> LocalisationConfig:
        return core_config(self, LocalisationConfig)


class AnnotationResource(dg.ConfigurableResource, AnnotationConfig):
    """Where the post-editing tool pages go and where the annotation files come back."""

    def config(self) -> AnnotationConfig:
        return core_config(self, AnnotationConfig)


class BuiltDatasetResource(dg.ConfigurableResource, DatasetConfig):
    """Where the built Cultivar dataset is written (the data kind ``built`` reads it)."""

    def config(self) -> DatasetConfig:
        return core_config(self, DatasetConfig)
class ErrorAnalysisResource(dg.ConfigurableResource, ErrorAnalysisConfig):
    """The error analysis (paper §5): the sample, the returned files, the outlier model."""

    def config(self) -> ErrorAnalysisConfig:
        return core_config(self, ErrorAnalysisConfig)


class StoreResource(dg.ConfigurableResource):
    """The DuckDB database file, and the storage root of the models' outputs
    (``storage.root`` as configured: None, the default next to the database)."""

    database: str
    storage_root: str | None = None

    def store(self) -> Store:
        return Store(self.database)

    def root(self) -> str:
        """The storage root (:func:`cultivar_assets.settings.storage_root`)."""
        return storage_root(self.storage_root, Path(self.database))


RESOURCE_KEYS = ("data", "metrics", "engine", "store", "site", "hf_publish", "source_benchmark",
                 "instance_selection", "localisation", "annotation", "built_dataset",
                 "error_analysis_config")


def resources_from_settings(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    return {
        "data": DataSourceResource(**settings.data.model_dump()),
        "metrics": MetricsResource(**settings.metrics.model_dump()),
        "engine": EngineResource(**settings.engine.model_dump(), models_file=settings.models_file,
                                 selection=list(settings.models)),
        "store": StoreResource(database=str(settings.database_path),
                               storage_root=settings.storage.root),
        "site": SiteResource(**settings.site.model_dump()),
        "hf_publish": HubPublishResource(**settings.publish.model_dump()),
        "source_benchmark": SourceBenchmarkResource(**settings.construction.source.model_dump()),
        "instance_selection": SelectionResource(**settings.construction.selection.model_dump()),
        "localisation": LocalisationResource(**settings.construction.localisation.model_dump()),
        "annotation": AnnotationResource(**settings.construction.annotation.model_dump()),
        "built_dataset": BuiltDatasetResource(**settings.construction.dataset.model_dump()),
        "error_analysis_config": ErrorAnalysisResource(**settings.error_analysis.model_dump()),
    }


def settings_from_resources(resources: Mapping[str, Any]) -> Settings:
    """The settings that :func:`resources_from_settings` makes ``resources`` (keyed as there)
    from: what a run's resources were configured with (the source assets' observations read it:
    :mod:`cultivar_assets.assets.sources`). The ``automation`` section is not among the
    resources and gets its defaults (no asset reads it)."""
    engine = resources["engine"]
    return Settings(
        database=resources["store"].database,
        data=core_config(resources["data"], DataConfig),
        metrics=core_config(resources["metrics"], MetricConfig),
        engine=core_config(engine, EngineSettings),
        models_file=engine.models_file, models=list(engine.selection),
        site=core_config(resources["site"], SiteConfig),
        publish=core_config(resources["hf_publish"], PublishConfig),
        construction=ConstructionConfig(
            source=core_config(resources["source_benchmark"], SourceBenchmarkConfig),
            selection=core_config(resources["instance_selection"], SelectionConfig),
            localisation=core_config(resources["localisation"], LocalisationConfig),
            annotation=core_config(resources["annotation"], AnnotationConfig),
            dataset=core_config(resources["built_dataset"], DatasetConfig)),
        error_analysis=core_config(resources["error_analysis_config"], ErrorAnalysisConfig),
        storage=StorageConfig(root=resources["store"].storage_root),
    )
