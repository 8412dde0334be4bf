"""Project settings: one YAML file shared by the ``cultivar`` CLI and the Dagster definitions.

The file is ``$CULTIVAR_CONFIG`` if set, else ``cultivar.yaml`` in the current directory if it
exists (:func:`settings_file`); without one, the embedded default is the demo
(:func:`demo_settings`: the bundled demo data built by the project's own construction, the demo
model suite, BLEU with the 13a tokenizer, explicitly, because the flores200 SentencePiece model
of spBLEU is not bundled). A settings file without a ``metrics`` section gets the paper's
metrics (spBLEU, chrF). The sections (``data``, ``metrics``, ``models``, ``construction``,
``error_analysis``, ``automation``, ``storage``, ...) and their defaults:
docs/configuration.md; ``construction``: docs/building-a-benchmark.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from cultivar_assets.config_files import ConfigFileError, read_yaml_file, validation_message
from cultivar_assets.construction.config import ConstructionConfig, demo_construction
from cultivar_assets.data.sources import DEMO_NAME, DataConfig
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.error_analysis.config import ErrorAnalysisConfig, demo_error_analysis
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.paths import default_database
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.secrets import misplaced_secrets
from cultivar_assets.site.config import SiteConfig

DEMO_METRICS = MetricConfig(bleu_tokenize="13a")


DEFAULT_REGISTRY_SENSOR_INTERVAL = 300  # seconds
DEFAULT_AUTOMATION_SENSOR_INTERVAL = 60  # seconds


class AutomationConfig(BaseModel):
    """How Dagster's sensors watch for work (``cultivar ui`` / a deployment's daemon)."""

    model_config = ConfigDict(extra="forbid")

    # the registry sensor's tick interval: how soon a model added to the registry is run
    registry_sensor_interval_seconds: int = Field(default=DEFAULT_REGISTRY_SENSOR_INTERVAL,
                                                  ge=30)
    # the automation sensor's tick interval (cultivar_automation): how soon the leaderboard,
    # the error analysis, the charts and the site follow new results or recorded failures
    automation_sensor_interval_seconds: int = Field(
        default=DEFAULT_AUTOMATION_SENSOR_INTERVAL, ge=5)
    # where the run-failure sensor also reports a failed run (besides the database's
    # run_failures view): an http(s) URL that gets the failure as a JSON POST, and/or a file
    # that gets one JSON line per failure
    failure_webhook: str | None = None
    failure_log: str | None = None


class StorageConfig(BaseModel):
    """Where the models' partitions write their outputs (``storage.root``): a local folder or any
    ``fsspec`` location (``s3://bucket/cultivar``, a shared volume's folder). The test sets and
    each model's translations and scores are files under it
    (:mod:`cultivar_assets.store.model_files`); the loading asset ``model_results`` is the only
    writer of those rows into the database."""

    model_config = ConfigDict(extra="forbid")

    # default: the folder <database stem>-storage next to the database file
    root: str | None = None

    @field_validator("root")
    @classmethod
    def _root_is_a_location(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError(f"{value!r} names no location: give a folder or an fsspec URL "
                             "(s3://bucket/path), or leave it out for the default (next to the "
                             "database)")
        return value


def database_path_problem(value: str) -> str | None:
    """Why ``value`` cannot be the database's path (None: it can): an empty or blank path names
    no file (and would otherwise fall back to the default database without a word)."""
    if not value.strip():
        return (f"{value!r} names no file: give a DuckDB file's path, or leave it out for the "
                "default ($CULTIVAR_HOME/db/<data>.duckdb)")
    return None


class SettingsError(ValueError):
    """The settings file cannot be read or is invalid."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    database: str | None = None  # default: $CULTIVAR_HOME/db/<data source name>.duckdb
    data: DataConfig = Field(default_factory=DataConfig)
    metrics: MetricConfig = Field(default_factory=MetricConfig)  # the paper's: spBLEU + chrF
    engine: EngineSettings = Field(default_factory=EngineSettings)
    models_file: str | None = None  # default: the bundled models.yaml
    models: list[str] = ["suite:demo"]  # model ids or suite:<name>
    site: SiteConfig = Field(default_factory=SiteConfig)
    publish: PublishConfig = Field(default_factory=PublishConfig)
    construction: ConstructionConfig = Field(default_factory=demo_construction)
    error_analysis: ErrorAnalysisConfig = Field(default_factory=ErrorAnalysisConfig)
    automation: AutomationConfig = Field(default_factory=AutomationConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)

    @field_validator("models")
    @classmethod
    def _some_model(cls, value: list[str]) -> list[str]:
        """An empty selection would run no model and publish a site without one."""
        if not value:
            raise ValueError("is empty: name at least one model id or suite:<name> (default: "
                             "suite:demo)")
        return value

    @field_validator("database")
    @classmethod
    def _database_is_a_path(cls, value: str | None) -> str | None:
        """An empty or blank path would silently fall back to the default database."""
        problem = None if value is None else database_path_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _built_data_is_the_construction_dataset(self) -> Settings:
        if self.data.kind == "built" and not self.data.cultivar_path:
            folder = self.construction.dataset.folder
            if folder:
                self.data = self.data.model_copy(update={"cultivar_path": folder})
        return self

    @model_validator(mode="after")
    def _outputs_apart(self) -> Settings:
        problems = overlapping_paths(self)
        if problems:
            raise ValueError(problems[0] if len(problems) == 1 else "; ".join(problems))
        return self

    @property
    def data_name(self) -> str:
        """Names the default database: the data source's name; for the project's own build,
        ``demo`` when it is built from the demo data, else ``cultivar-built``."""
        if self.data.kind == "built":
            return DEMO_NAME if self.construction.source.kind == "demo" else "cultivar-built"
        return self.data.name

    @property
    def database_path(self) -> Path:
        return Path(self.database) if self.database else default_database(self.data_name)

    @property
    def storage_root(self) -> str:
        """The storage root (:class:`StorageConfig`): ``storage.root``, else the folder
        ``<database stem>-storage`` next to the database file."""
        return storage_root(self.storage.root, self.database_path)


def storage_root(configured: str | None, database_path: Path) -> str:
    """``configured``, else the folder ``<database stem>-storage`` next to ``database_path``."""
    if configured is not None:
        return configured
    return str(database_path.with_name(f"{database_path.stem}-storage"))


def _home(*parts: str) -> Path:
    from cultivar_assets.paths import cultivar_home

    return cultivar_home().joinpath(*parts)


def output_folders(settings: Settings) -> dict[str, Path]:
    """The folders the project writes (setting -> folder, defaults included): the folders
    replaced whole by a build (:func:`cultivar_assets.files.replace_folder`) and the caches."""
    c, e = settings.construction, settings.error_analysis
    folders = {
        "site.output_dir": settings.site.site_path(),
        "site.charts_dir": settings.site.charts_path(),
        "site.model_parts_dir": settings.site.model_parts_path(),
        "site.locale_shards_dir": settings.site.locale_shards_path(),
        "site.web_cache_dir": settings.site.web_cache_path(),
        "publish.folder": settings.publish.folder_path,
        "construction.dataset.folder": c.dataset.folder_path(),
        "construction.annotation.tools_dir": c.annotation.tools_path(),
        "construction.selection.review_dir": (Path(c.selection.review_dir)
                                              if c.selection.review_dir
                                              else _home("construction", "selection")),
        "construction.localisation.cache_dir": (Path(c.localisation.cache_dir)
                                                if c.localisation.cache_dir
                                                else _home("cache", "localisation")),
        "engine.cache_dir": (Path(settings.engine.cache_dir) if settings.engine.cache_dir
                             else _home("cache", "translations")),
        "error_analysis.tool_dir": e.tool_path(),
    }
    for name, value in (("data.hub_cache_dir", settings.data.hub_cache_dir),
                        ("construction.source.hub_cache_dir", c.source.hub_cache_dir)):
        if value:
            folders[name] = Path(value)
    return folders


def output_files(settings: Settings) -> dict[str, Path]:
    """The files the project writes outside its output folders (setting -> file; the storage
    root, a folder of files, when it is local)."""
    files = {"database": settings.database_path}
    if "://" not in settings.storage_root:
        files["storage.root"] = Path(settings.storage_root)
    if settings.automation.failure_log:
        files["automation.failure_log"] = Path(settings.automation.failure_log)
    return files


def input_paths(settings: Settings) -> dict[str, Path]:
    """The files and folders the project reads and never writes (setting -> path), as
    configured (the data kind ``built`` reads ``construction.dataset.folder``, an output)."""
    c, e, d = settings.construction, settings.error_analysis, settings.data
    values = {
        "data.cultivar_path": d.cultivar_path if d.kind != "built" else None,
        "data.flores_path": d.flores_path,
        "models_file": settings.models_file,
        "construction.source.path": c.source.path,
        "construction.selection.corrections_file": c.selection.corrections_file,
        "construction.selection.selection_file": c.selection.selection_file,
        "construction.localisation.prompts_file": c.localisation.prompts_file,
        "construction.annotation.folder": str(c.annotation.folder_path()),
        "error_analysis.annotations_dir": e.annotations_dir,
    }
    return {name: Path(value) for name, value in values.items() if value}


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve()


def overlapping_paths(settings: Settings) -> list[str]:
    """One line per path that lies in (or is) an output folder of another setting: a build
    replaces its folder whole, so it would delete that file or folder (a database configured
    inside the site folder), or publish it."""
    folders = {name: _absolute(path) for name, path in output_folders(settings).items()}
    others = {**folders,
              **{name: _absolute(path) for name, path in output_files(settings).items()},
              **{name: _absolute(path) for name, path in input_paths(settings).items()}}
    inputs = input_paths(settings)
    problems = []
    for name, folder in folders.items():
        for other, path in others.items():
            if other != name and path.is_relative_to(folder):
                kind = "input" if other in inputs else "output"
                where = "is" if path == folder else "is inside"
                problems.append(f"{other} ({path}) {where} the output folder {name} ({folder}): "
                                f"an {kind} there could be deleted or overwritten (a build "
                                "replaces its folder whole); choose paths apart")
    return problems


def demo_settings(live_localiser: bool = False) -> Settings:
    """The embedded default: the demo built by the project's own pipeline (selection, the weak
    demo localiser, played back unless ``live_localiser``: ``construction.config.
    demo_localisation``; the shipped demo annotation files, the dataset) and evaluated with the
    demo models and the demo's error analysis; BLEU tokenizer 13a, stated in the signature."""
    return Settings(metrics=DEMO_METRICS.model_copy(), data=DataConfig(kind="built"),
                    error_analysis=demo_error_analysis(),
                    construction=demo_construction(live_localiser))


def settings_file() -> Path | None:
    configured = os.environ.get("CULTIVAR_CONFIG")
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise SettingsError(f"CULTIVAR_CONFIG={configured} does not name a file")
        return path
    local = Path("cultivar.yaml")
    return local if local.is_file() else None


def load_settings(path: str | Path | None = None) -> Settings:
    """Settings from ``path`` (or the file found by :func:`settings_file`), else the defaults."""
    path = Path(path) if path else settings_file()
    if path is None:
        return demo_settings()
    try:
        raw = read_yaml_file(path, "settings file")
    except ConfigFileError as error:
        raise SettingsError(str(error)) from None
    if raw is None:  # an empty file would run with the paper's defaults, not the demo's
        raise SettingsError(
            f"settings file {path} is empty: write the settings there, or remove the file "
            "to run the embedded demo defaults")
    if not isinstance(raw, dict):
        raise SettingsError(f"settings file {path} must hold a mapping of sections (data, "
                            f"metrics, models, …), not a {type(raw).__name__}")
    misplaced = misplaced_secrets(raw, str(path))  # before pydantic could echo a value
    if misplaced:
        raise SettingsError("\n".join(misplaced))
    try:
        return Settings.model_validate(raw)
    except ValidationError as error:
        raise SettingsError(validation_message(error, f"invalid settings in {path}")) from None
