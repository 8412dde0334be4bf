"""The model registry: ``models.yaml``, validated on load.

Every entry becomes a :class:`~cultivar_assets.specs.ModelSpec`. Loading checks each entry
(fields, types, the engine and prompt style names, their compatibility, duplicate ids) and
reports every bad entry at once, by position and id.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

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
    if spec.weights == "hub" and not spec.hf_id and spec.type != "baseline":
        problems.append("weights from the hub need hf_id")
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


def add_model_entry(path: str | Path, entry: dict[str, Any]) -> ModelSpec:
    """Append ``entry`` to the registry file at ``path`` after validating the whole registry.

    The entry is appended as a YAML block, which keeps the file's comments and layout; when the
    file's layout does not allow that (a flow-style or non-final ``models`` list), the whole
    document is written anew. Either text is written only if it reads back as exactly the old
    entries plus the new one (otherwise ModelRegistryError). The file is replaced atomically: a
    refused entry changes nothing.
    """
    path = Path(path)
    try:
        text = read_text_file(path, "model registry")
        document = load_yaml_text(text, f"model registry {path}") or {}
    except ConfigFileError as error:
        raise ModelRegistryError(str(error)) from None
    existing = document.get("models") or []
    specs = parse_models([*existing, entry], f"{path} + new entry")
    block = yaml.safe_dump([entry], sort_keys=False, allow_unicode=True, width=100)
    indented = "\n".join(("  " + line) if line else line for line in block.splitlines())
    candidates = [text.rstrip("\n") + "\n\n" + indented + "\n",
                  yaml.safe_dump({**document, "models": [*existing, entry]}, sort_keys=False,
                                 allow_unicode=True, width=100)]
    new_text = next((text for text in candidates if _reads_back(text, [*existing, entry])), None)
    if new_text is None:  # neither the appended block nor the rewritten document reads back
        raise ModelRegistryError(
            f"cannot add {entry.get('id')!r} to {path}: the updated file would not read back as "
            "the registry plus the new entry; add it by hand"
        )
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_text(new_text, encoding="utf-8")
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
    return specs[-1]


def _reads_back(text: str, models: list[Any]) -> bool:
    try:
        return (yaml.safe_load(text) or {}).get("models") == models
    except yaml.YAMLError:
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
