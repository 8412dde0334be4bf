"""The model registry: ``models.yaml``, validated on load.

Every entry becomes a :class:`~cultivar_assets.specs.ModelSpec`. Loading checks each entry
(fields, types, the engine and prompt style names, their compatibility, duplicate ids) and
reports every bad entry at once, by position and id.
"""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML, YAMLError
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.util import load_yaml_guess_indent

from cultivar_assets.config_files import (
    ConfigFileError,
    load_yaml_text,
    read_text_file,
    read_yaml_file,
    validation_problems,
)
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.prompts import prompt_style_registry
from cultivar_assets.engines.weights import weights_providers
from cultivar_assets.registry import Registry
from cultivar_assets.secrets import misplaced_secrets
from cultivar_assets.specs import ModelSpec


class ModelRegistryError(ValueError):
    """``models.yaml`` (or an entry added to it) is invalid."""


def _check_entry(spec: ModelSpec) -> list[str]:
    problems = []
    engines = engine_registry()
    styles = prompt_style_registry()
    if spec.engine not in engines:
        problems.append(f"unknown engine {spec.engine!r} (known: {', '.join(engines.names())})")
    if spec.prompt_style not in styles:
        problems.append(
            f"unknown prompt style {spec.prompt_style!r} (known: {', '.join(styles.names())})"
        )
    if not problems:
        kinds = engines.get(spec.engine).prompt_kinds
        kind = styles.get(spec.prompt_style).kind
        if kind not in kinds:
            problems.append(
                f"engine {spec.engine!r} takes {', '.join(kinds)} prompts, "
                f"not {kind!r} (prompt style {spec.prompt_style!r})"
            )
    if spec.weights not in weights_providers():
        problems.append(
            f"unknown weights provider {spec.weights!r} (known: {', '.join(weights_providers())})"
        )
    if (spec.weights == "hub" and not spec.hf_id and spec.type != "baseline"
            and spec.engine != "outputs"):
        problems.append("weights from the hub need hf_id")
    if (spec.engine == "outputs") != bool(spec.path):
        problems.append("path (a submission's folder or manifest) goes with engine 'outputs', "
                        "and engine 'outputs' needs it")
    if spec.params_active_b and spec.params_total_b and spec.params_active_b > spec.params_total_b:
        problems.append("params_active_b is larger than params_total_b")
    return problems


def parse_models(entries: Any, where: str) -> list[ModelSpec]:
    """Validate raw entries; one ModelRegistryError lists every problem."""
    if not isinstance(entries, list):
        raise ModelRegistryError(f"{where}: expected a top-level 'models' list")
    specs, problems, seen = [], [], set()
    for position, entry in enumerate(entries, 1):
        label = f"entry {position}"
        if isinstance(entry, dict) and "id" in entry:
            label += f" ({entry['id']})"
        misplaced = misplaced_secrets(entry)  # named without the value, which is never echoed
        if misplaced:
            problems += [f"{label}: {problem}" for problem in misplaced]
            continue
        try:
            spec = ModelSpec.model_validate(entry)
        except ValidationError as error:
            details = "; ".join(validation_problems(error))
            problems.append(f"{label}: {details}")
            continue
        if spec.id in seen:
            problems.append(f"{label}: duplicate id {spec.id!r}")
        seen.add(spec.id)
        problems += [f"{label}: {p}" for p in _check_entry(spec)]
        specs.append(spec)
    if problems:
        raise ModelRegistryError(f"{where} has {len(problems)} problem(s):\n  " +
                                 "\n  ".join(problems))
    return specs


def default_models_file() -> Path:
    return Path(str(resources.files("cultivar_assets").joinpath("models.yaml")))


def load_models(path: str | Path | None = None) -> Registry[ModelSpec]:
    """The model registry from ``path`` (default: the bundled ``models.yaml``)."""
    path = Path(path) if path else default_models_file()
    try:
        data = read_yaml_file(path, "model registry")
    except ConfigFileError as error:
        raise ModelRegistryError(str(error)) from None
    if data is not None and not isinstance(data, dict):
        raise ModelRegistryError(f"model registry {path} must be a mapping with a 'models' list")
    registry: Registry[ModelSpec] = Registry("model", where=str(path))
    for spec in parse_models((data or {}).get("models"), str(path)):
        registry.register(spec.id, spec)
    return registry


def _registry_text_and_entries(path: Path) -> tuple[str, list]:
    """The registry file's text and its ``models`` entries as the strict loader reads them
    (ModelRegistryError for a file that cannot be read or is no mapping)."""
    try:
        text = read_text_file(path, "model registry")
        document = load_yaml_text(text, f"model registry {path}") or {}
    except ConfigFileError as error:
        raise ModelRegistryError(str(error)) from None
    if not isinstance(document, dict):
        raise ModelRegistryError(f"model registry {path} must be a mapping with a 'models' list")
    return text, document.get("models") or []


def add_model_entry(path: str | Path, entry: dict[str, Any]) -> ModelSpec:
    """Append ``entry`` to the registry file at ``path`` after validating the whole registry.

    The file is edited as a round trip (ruamel.yaml): it is read with its comments, quoting and
    layout, the entry is appended to its ``models`` list (created when the file has none), and
    it is written back with the indentation the file uses (guessed by ruamel.yaml); the rest of
    the file is written as it was. The entry's own nested lists and mappings are written in flow
    style, as in the bundled ``models.yaml`` (ours). The new text is written only if it reads
    back, through the strict loader every registry goes through, as exactly the old entries plus
    the new one (otherwise ModelRegistryError). The file is replaced atomically: a refused entry
    leaves it byte for byte as it was.
    """
    path = Path(path)
    text, existing = _registry_text_and_entries(path)
    specs = parse_models([*existing, entry], f"{path} + new entry")
    try:
        new_text = _appended(text, entry)
    except YAMLError:  # ruamel.yaml cannot edit what the strict loader read
        new_text = None
    if new_text is None or not _reads_back(new_text, [*existing, entry]):
        raise ModelRegistryError(
            f"cannot add {entry.get('id')!r} to {path}: the updated file would not read back as "
            "the registry plus the new entry; add it by hand"
        )
    _replace_text(path, new_text)
    return specs[-1]


def _flow(value: Any) -> Any:
    """``value`` with its lists and mappings as ruamel.yaml flow-style collections."""
    if isinstance(value, dict):
        mapping = CommentedMap((key, _flow(inner)) for key, inner in value.items())
        mapping.fa.set_flow_style()
        return mapping
    if isinstance(value, list):
        sequence = CommentedSeq(_flow(inner) for inner in value)
        sequence.fa.set_flow_style()
        return sequence
    return value


def _round_trip(text: str) -> YAML:
    """A ruamel.yaml round trip that writes ``text`` back with its own indentation."""
    _, sequence_indent, offset = load_yaml_guess_indent(text)
    round_trip = YAML(typ="rt")
    round_trip.width = 4096  # never fold a long flow mapping (the file's lines stay as written)
    round_trip.preserve_quotes = True
    if sequence_indent is not None:
        offset = offset or 0
        round_trip.indent(mapping=max(sequence_indent - offset, 2), sequence=sequence_indent,
                          offset=offset)
    # null as "null" (ruamel.yaml's round trip would write an empty value)
    round_trip.representer.add_representer(
        type(None), lambda representer, _: representer.represent_scalar(
            "tag:yaml.org,2002:null", "null"))
    return round_trip


def _appended(text: str, entry: dict[str, Any]) -> str:
    """``text`` with ``entry`` appended to its ``models`` list, as a ruamel.yaml round trip."""
    round_trip = _round_trip(text)
    document = round_trip.load(text)
    if document is None:
        document = CommentedMap()
    block = CommentedMap((key, _flow(value)) for key, value in entry.items())
    if document.get("models") is None:
        document["models"] = CommentedSeq()
    document["models"].append(block)
    out = io.StringIO()
    round_trip.dump(document, out)
    return out.getvalue()


def _without(text: str, model_id: str) -> str:
    """``text`` without the entry ``model_id`` of its ``models`` list (ruamel.yaml round trip)."""
    round_trip = _round_trip(text)
    document = round_trip.load(text)
    models = document["models"]
    for index in reversed(range(len(models))):
        if isinstance(models[index], dict) and models[index].get("id") == model_id:
            del models[index]
    out = io.StringIO()
    round_trip.dump(document, out)
    return out.getvalue()


def remove_model_entry(path: str | Path, model_id: str) -> bool:
    """Remove the entry ``model_id`` from the registry file at ``path``; False (the file
    untouched) when the file has no such entry.

    Edited as :func:`add_model_entry` edits (a ruamel.yaml round trip, the rest of the file as it
    was); the new text is written only if it reads back, through the strict loader, as exactly
    the other entries (otherwise ModelRegistryError), and replaces the file atomically.
    """
    path = Path(path)
    text, existing = _registry_text_and_entries(path)
    kept = [e for e in existing if not (isinstance(e, dict) and e.get("id") == model_id)]
    if len(kept) == len(existing):
        return False
    try:
        new_text = _without(text, model_id)
    except YAMLError:
        new_text = None
    if new_text is None or not _reads_back(new_text, kept):
        raise ModelRegistryError(
            f"cannot remove {model_id!r} from {path}: the updated file would not read back as "
            "the registry without that entry; remove it by hand")
    _replace_text(path, new_text)
    return True


def _replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file beside it, then renamed)."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)


def _reads_back(text: str, models: list[Any]) -> bool:
    try:
        return (load_yaml_text(text, "the updated registry") or {}).get("models") == models
    except ConfigFileError:
        return False


def select_models(registry: Registry[ModelSpec], selection: list[str]) -> list[ModelSpec]:
    """Models named in ``selection``: model ids or ``suite:<name>``; unknown names raise."""
    chosen: dict[str, ModelSpec] = {}
    for item in selection:
        if item.startswith("suite:"):
            suite = item.removeprefix("suite:")
            members = [registry.get(n) for n in registry if suite in registry.get(n).suites]
            if not members:
                raise ModelRegistryError(f"no model belongs to suite {suite!r}")
            chosen.update((m.id, m) for m in members)
        else:
            chosen[item] = registry.get(item)
    return list(chosen.values())
