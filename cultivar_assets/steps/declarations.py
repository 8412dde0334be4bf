"""What an asset declares, next to its definition, about the step it belongs to: the declarative
types of the pipeline's one description (the asset graph), in the core.

A *step* (:class:`Step`) is a group of assets with the same partitioning that a pipeline run
materialises in one Dagster run (one partition of them), and that is reused whole when its
inputs are unchanged (:mod:`cultivar_assets.steps.reuse`). Each asset names its step and what
its outputs depend on besides its upstream assets (:class:`StepInputs`): settings sections (by
their place in the settings file), files (a settings field that names one, or a function giving
a file's digest, each under a label), "other" facts, a model's registry entry, the files and
folders it writes, and why it can never be reused. The Dagster layer attaches a declaration to
its asset (:func:`cultivar_assets.assets.step_graph.step_inputs`) and derives from the graph and
the declarations the plain data that the planner reads (:class:`StepNode`,
:mod:`cultivar_assets.steps.plan`).

Every function in a declaration takes a :class:`StepContext`: the settings, the step's partition
(a locale, a model id; None for an unpartitioned step) and the models registered in the Dagster
instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from cultivar_assets.settings import Settings
from cultivar_assets.specs import ModelSpec


@dataclass(frozen=True)
class StepContext:
    """What a declaration's functions are given: the settings, the step's partition, the models
    registered in the Dagster instance and (for a model's step) the model's registry entry."""

    settings: Settings
    partition: str | None = None
    registered_models: tuple[str, ...] = ()
    specs: Mapping[str, ModelSpec] | None = None  # the registry's entries (None: the file's)

    @cached_property
    def model(self) -> ModelSpec:
        """The registry entry of the model that is this step's partition."""
        if self.specs is not None and self.partition in self.specs:
            return self.specs[self.partition]
        from cultivar_assets.models import load_models

        return load_models(self.settings.models_file).get(self.partition)


Fact = Callable[[StepContext], Any]
Files = Callable[[StepContext], dict[str, Any]]


@dataclass(frozen=True, eq=False)
class Step:
    """A step of the pipeline (module docstring).

    ``name``: its key, or the prefix of its keys (``<name>:<partition>``) when its assets are
    partitioned; ``partitions``: the partition keys the settings' pipeline runs (None: not
    partitioned; a step with no partitions is not in the pipeline); ``when``: whether an
    unpartitioned step is in the settings' pipeline (None: always); ``reads_every_other_step``:
    it reads what every other step of the pipeline wrote (besides its assets' upstream), and
    runs last; ``title``: the line the runner prints when it starts the step (its partitions
    given); ``timing``: the step's name in the runner's timings (``{partition}`` is replaced by
    the partition when each partition is timed on its own); ``kind``: how the runner presents
    its partitions (``locale``: tried together, one timing; ``model``: one timing and run tags
    each; None: unpartitioned).
    """

    name: str
    partitions: Callable[[Settings], list[str]] | None = None
    when: Callable[[Settings], bool] | None = None
    reads_every_other_step: bool = False
    title: Callable[[Settings, Sequence[str]], str] | None = None
    timing: str | None = None
    kind: str | None = None
    lists_outputs_as: str | None = None  # an "other" input listing its output folders

    def keys(self, settings: Settings) -> list[str]:
        """The keys of this step in the settings' pipeline (none when it is not in it)."""
        if self.partitions is not None:
            return [f"{self.name}:{partition}" for partition in self.partitions(settings)]
        return [self.name] if self.when is None or self.when(settings) else []

    def heading(self, settings: Settings, partitions: Sequence[str]) -> str:
        return self.title(settings, partitions) if self.title else self.name

    def timing_name(self, partition: str | None = None) -> str:
        name = self.timing or self.name
        return name.replace("{partition}", partition or "")


@dataclass(frozen=True)
class StepInputs:
    """What one asset's outputs depend on besides its upstream assets, and its step (module
    docstring). ``settings``: sections by their place in the settings file (``metrics``,
    ``construction.localisation``, ``models_file``); ``files``: label -> a settings field (dotted)
    whose file or folder's content is an input, or a function giving the digest (None: no file);
    ``file_groups``: functions giving several labelled digests at once; ``other``: label ->
    function; ``entry``: whether the partition's model registry entry is an input; ``outputs``:
    functions giving the files and folders the asset writes besides the database;
    ``always_runs``: a function saying why the step can never be reused (None: it can)."""

    step: Step
    settings: tuple[str, ...] = ()
    files: Mapping[str, str | Fact] = field(default_factory=dict)
    file_groups: tuple[Files, ...] = ()
    other: Mapping[str, Fact] = field(default_factory=dict)
    entry: bool = False
    outputs: tuple[Callable[[StepContext], Path], ...] = ()
    always_runs: Fact | None = None


@dataclass(frozen=True)
class StepNode:
    """One step as the asset graph gives it: its assets in graph order, the steps whose assets
    its assets depend on (by name) and the declarations of its assets."""

    step: Step
    assets: tuple[str, ...]
    upstream: tuple[str, ...]
    declarations: tuple[StepInputs, ...]


def settings_value(settings: Settings, dotted: str) -> Any:
    """The settings' value at ``dotted`` (``construction.selection.corrections_file``)."""
    value: Any = settings
    for name in dotted.split("."):
        value = getattr(value, name)
    return value
