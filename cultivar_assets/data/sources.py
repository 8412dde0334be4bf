"""Where the benchmark data comes from, chosen by configuration, and how it is assembled.

- ``demo``: the bundled demo dataset (written for this project, not FLORES or Cultivar).
- ``local``: a Cultivar dataset directory in the published format
  (:mod:`cultivar_assets.data.cultivar_files`).
- ``built``: the project's own build (the ``cultivar_dataset`` asset): the folder ``cultivar_path``
  (default ``$CULTIVAR_HOME/construction/dataset``) in the published format, with the build's
  manifest (``.cultivar-build.json``, kind ``cultivar-dataset``) saying what it was built from
  and how. It is evaluated against its own originals (``flores: dataset``); another originals
  source must be the build's source benchmark (same kind, split, revision and texts), else it is
  refused naming both (:func:`cultivar_assets.data.build_record.check_originals_source`).
- ``hub``: the Cultivar dataset on the Hugging Face Hub (default ``pinzhenchen/Cultivar-flores``),
  assumed to be in the published format (ours), with configurable column names (``column_map``);
  missing columns fail naming them.

Original FLORES sentences come from the dataset's ``source_original``/``english_original``
columns (``flores="dataset"``), a local FLORES release (``"local"``) or FLORES+ on the Hub
(``"hub"``, gated: ``HF_TOKEN``). A locale or language expected but missing is a ``MissingItem``
with its reason (``on_missing="skip"``) or stops the load (``"fail"``); never dropped silently.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from cultivar_assets.config_files import MAX_CONFIG_BYTES, ConfigFileError, read_input_file
from cultivar_assets.data.build_record import check_originals_source, source_description
from cultivar_assets.data.cultivar_files import (
    ORIGINAL_COLUMNS,
    find_locale_files,
    read_locale_rows,
    unknown_locale_files,
)
from cultivar_assets.data.flores import FloresReader, HubFlores, LocalFlores, read_originals
from cultivar_assets.data.locales import (
    cultivar_test_set_name,
    flores_test_set_name,
    get_locale,
    locale_registry,
)
from cultivar_assets.data.testsets import BenchmarkData, DataError, Instance, MissingItem
from cultivar_assets.files import MANIFEST
from cultivar_assets.paths import cultivar_home
from cultivar_assets.secrets import register, secret_from_env

DEMO_NAME = "demo"
BUILT_KIND = "cultivar-dataset"  # the manifest kind of a built dataset folder


def demo_dataset_dir() -> Path:
    return Path(str(resources.files("cultivar_assets.data").joinpath("demo")))


def built_dataset_dir() -> Path:
    """Where ``cultivar_dataset`` writes the project's own build (unless configured)."""
    return cultivar_home() / "construction" / "dataset"


def read_built_manifest(folder: Path) -> dict:
    """The manifest of a built dataset folder; a DataError saying how to build one otherwise."""
    path = Path(folder) / MANIFEST
    how = ("materialise cultivar_dataset (job build_benchmark), or run cultivar build dataset; "
           "cultivar demo builds the demo's")
    if not Path(folder).is_dir():
        raise DataError(f"no built Cultivar dataset in {folder} (the folder does not exist): {how}")
    try:
        manifest = json.loads(read_input_file(path, "dataset manifest", MAX_CONFIG_BYTES))
    except ConfigFileError as error:
        if path.exists():
            raise DataError(str(error)) from None
        raise DataError(f"{folder} is not a Cultivar dataset built by this project (no "
                        f"{MANIFEST}): {how}") from None
    except (OSError, ValueError) as error:
        raise DataError(f"cannot read {path}: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != BUILT_KIND:
        raise DataError(f"{folder} was not written by cultivar_dataset ({MANIFEST} kind "
                        f"{manifest.get('kind') if isinstance(manifest, dict) else None!r}): {how}")
    return manifest


class DataConfig(BaseModel):
    """Configuration of the data source (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["demo", "local", "hub", "built"] = "demo"
    cultivar_path: str | None = None
    cultivar_repo: str = "pinzhenchen/Cultivar-flores"
    cultivar_revision: str | None = None
    column_map: dict[str, str] = {}
    flores: Literal["dataset", "local", "hub"] = "dataset"
    flores_path: str | None = None
    flores_repo: str = "openlanguagedata/flores_plus"
    flores_revision: str | None = None
    flores_split: Literal["dev", "devtest"] = "dev"  # of flores local / hub
    locales: list[str] | None = None  # expected locales; None: all 27 (demo: the demo's)
    on_missing: Literal["skip", "fail"] = "skip"
    hub_cache_dir: str | None = None

    @field_validator("locales")
    @classmethod
    def _known_locales(cls, value: list[str] | None) -> list[str] | None:
        for key in value or []:
            get_locale(key)
        return value

    @model_validator(mode="after")
    def _paths_the_kinds_need(self) -> DataConfig:
        """A kind that reads local files needs their path: said when the settings are read,
        not minutes later at the test-sets step."""
        if self.kind == "local" and not self.cultivar_path:
            raise ValueError("data source 'local' needs cultivar_path (a dataset directory)")
        if self.flores == "local" and not self.flores_path:
            raise ValueError("flores='local' needs flores_path (a FLORES release directory)")
        return self

    @property
    def name(self) -> str:
        """Short name of the source, used to name the default database file."""
        return DEMO_NAME if self.kind == "demo" else f"cultivar-{self.kind}"

    def built_folder(self) -> Path:
        return Path(self.cultivar_path) if self.cultivar_path else built_dataset_dir()


def _cultivar_dir(config: DataConfig, token: str | None) -> tuple[Path, str]:
    if config.kind == "demo":
        return demo_dataset_dir(), "bundled demo dataset (written for this project; not FLORES)"
    if config.kind == "built":
        folder = config.built_folder()
        manifest = read_built_manifest(folder)
        what = "demo data" if manifest.get("is_demo") else manifest.get("source", "?")
        stamp = f"{manifest.get('built_at', '?')}, {str(manifest.get('fingerprint', '?'))[:12]}"
        return folder, f"Cultivar built by this project in {folder} (from {what}; built {stamp})"
    if config.kind == "local":
        if not config.cultivar_path:
            raise DataError("data source 'local' needs cultivar_path (a dataset directory)")
        return Path(config.cultivar_path), f"Cultivar files in {config.cultivar_path}"
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    try:
        folder = snapshot_download(
            config.cultivar_repo,
            repo_type="dataset",
            revision=config.cultivar_revision,
            allow_patterns=["*.parquet", "*.jsonl", "README.md"],
            token=register(token) or secret_from_env("HF_TOKEN"),
            cache_dir=config.hub_cache_dir,
        )
    except (GatedRepoError, RepositoryNotFoundError) as error:
        raise DataError(
            f"cannot access dataset {config.cultivar_repo} on the Hub ({error.__class__.__name__});"
            " check the repo id and HF_TOKEN"
        ) from error
    except (HfHubHTTPError, LocalEntryNotFoundError) as error:
        raise DataError(
            f"cannot download dataset {config.cultivar_repo} from the Hub and it is not in the "
            f"local cache: {error}"
        ) from error
    return Path(folder), f"{config.cultivar_repo}@{config.cultivar_revision or 'main'} (Hub)"


def flores_reader(config: DataConfig, token: str | None = None) -> FloresReader | None:
    if config.flores == "local":
        if not config.flores_path:
            raise DataError("flores='local' needs flores_path (a FLORES release directory)")
        return LocalFlores(Path(config.flores_path), config.flores_split)
    if config.flores == "hub":
        return HubFlores(config.flores_repo, config.flores_revision, config.flores_split,
                         token=token, cache_dir=config.hub_cache_dir)
    return None


def originals_identity(config: DataConfig) -> dict:
    """The configured originals source (``flores`` local or hub) in the terms of a source
    benchmark's identity (:mod:`cultivar_assets.data.build_record`)."""
    if config.flores == "local":
        return {"kind": "flores", "split": config.flores_split, "origin": "local",
                "path": str(Path(config.flores_path or "").resolve())}
    return {"kind": "flores", "split": config.flores_split, "origin": "hub",
            "repo": config.flores_repo, "revision": config.flores_revision}


def _check_built_originals(own: dict[str, list[Instance]], attached: dict[str, list[Instance]],
                           built: dict | None, configured: dict, folder: Path) -> None:
    """The originals read from the configured source must be the build's own (one message)."""
    differ = sorted({(key, a.instance_id) for key, rows in own.items()
                     for a, b in zip(rows, attached[key], strict=True)
                     if (a.source_original, a.english_original)
                     != (b.source_original, b.english_original)})
    if differ:
        listing = ", ".join(f"{key} {i}" for key, i in differ[:5])
        raise DataError(
            f"the built dataset in {folder} was made from {source_description(built)}, but the "
            f"configured originals ({source_description(configured)}) differ from the build's "
            f"own for {len(differ)} instance(s) ({listing}{', ...' if len(differ) > 5 else ''}): "
            "they are other sentences of the same ids. Leave flores at its default ('dataset': "
            "the build's own originals) or configure the build's source")


def load_benchmark(config: DataConfig, token: str | None = None) -> BenchmarkData:
    """Load every expected locale, attach original FLORES sentences, record what is missing."""
    root, description = _cultivar_dir(config, token)
    manifest = read_built_manifest(root) if config.kind == "built" else None
    built_source = (manifest or {}).get("source_benchmark")
    if manifest is not None and config.flores != "dataset":
        check_originals_source(built_source, originals_identity(config), root)
    files = find_locale_files(root)
    if not files:
        raise DataError(f"no locale files (<locale>.jsonl / .parquet) found in {root}")
    if config.locales is not None:
        expected = list(config.locales)
    elif config.kind in ("demo", "built"):
        expected = list(files)
    else:
        expected = list(locale_registry())
    missing: list[MissingItem] = []
    notes: list[str] = []
    instances: dict[str, list[Instance]] = {}
    origins: dict[int, list[str]] = {}  # instance id -> file:line of each locale that has it
    for key in expected:
        if key not in files:
            locale = get_locale(key)
            missing.append(MissingItem(cultivar_test_set_name(key), "cultivar",
                                       locale.source_language, key, f"no data file in {root}"))
            continue
        instances[key], where = read_locale_rows(key, files[key], config.column_map)
        for instance_id, place in where.items():
            origins.setdefault(instance_id, []).append(place)
    ignored = sorted(set(files) - set(expected))
    if ignored:
        notes.append(f"locales in the data but not selected: {', '.join(ignored)}")
    unknown = unknown_locale_files(root)
    if unknown:
        listing = ", ".join(str(p) for p in unknown[:10])
        if config.on_missing == "fail":
            raise DataError(f"{len(unknown)} data file(s) name no locale of the registry "
                            f"(cultivar_assets/data/locales.csv): {listing}")
        notes.append(f"files that name no known locale, not read: {listing}")
    if not instances:
        raise DataError(f"none of the expected locales has data in {root}")

    reader = flores_reader(config, token)
    if reader is None:
        lacking = [k for k, rows in instances.items() if rows[0].source_original is None]
        if lacking:
            raise DataError(
                f"flores='dataset' needs the columns {', '.join(ORIGINAL_COLUMNS)}, which are "
                f"missing for {', '.join(lacking)}; configure flores='local' or 'hub' instead"
            )
    else:
        own = instances
        instances, flores_missing = _attach_originals(instances, reader, origins)
        if manifest is not None:
            _check_built_originals(own, instances, built_source, originals_identity(config),
                                   root)
        missing += flores_missing
        description += f"; originals: {reader.description}"

    if missing and config.on_missing == "fail":
        raise DataError("missing data: " + "; ".join(f"{m.test_set}: {m.reason}" for m in missing))
    is_demo = config.kind == "demo" or (manifest is not None and bool(manifest.get("is_demo")))
    provenance = manifest.get("provenance") if manifest is not None else None
    return BenchmarkData(source=description, is_demo=is_demo,
                         instances=instances, missing=missing, notes=notes, kind=config.kind,
                         build_provenance=provenance if isinstance(provenance, dict) else None)


def _attach_originals(
    instances: dict[str, list[Instance]], reader: FloresReader,
    origins: dict[int, list[str]] | None = None,
) -> tuple[dict[str, list[Instance]], list[MissingItem]]:
    """Replace the original columns with FLORES sentences read by ``reader``."""
    languages = list(dict.fromkeys(get_locale(k).source_language for k in instances))
    ids = sorted({row.instance_id for rows in instances.values() for row in rows})
    sources, english, missing = read_originals(reader, languages, ids, origins)
    attached = {
        key: [
            Instance(
                locale=row.locale,
                instance_id=row.instance_id,
                source_localised=row.source_localised,
                english_localised=row.english_localised,
                source_original=sources.get(get_locale(key).source_language, {}).get(
                    row.instance_id
                ),
                english_original=english[row.instance_id],
            )
            for row in rows
        ]
        for key, rows in instances.items()
    }
    items = [
        MissingItem(flores_test_set_name(lang), "flores", lang, None, reason)
        for lang, reason in missing.items()
    ]
    return attached, items
