"""Configuration of the error analysis (paper §5, Table 5): the sample, the files, the outlier.

Flat (no nested models), so that a Dagster resource can *be* it. Defaults, and which are ours:

- ``locales``: the paper's three Chinese locales (``cmn_Hans_China``, ``cmn_Hans_UK``,
  ``cmn_Hans_US``); those the data lacks are left out of the sample, with a note;
- ``models``: None = every model on the leaderboard (the paper inspected ten "selected models");
- ``n_instances`` (ours; the paper gives no sample size): per locale; None = every instance the
  sampled models all translated;
- ``seed`` (ours): a locale's instances in the order of sha256(``"<seed>:<locale>:<id>"``), the
  same for every model of the locale;
- ``blind`` (ours): "system 1", "system 2", ... in a seeded order per locale instead of model ids
  (hidden from view, not from a reader of the page source);
- ``annotations_dir``: the returned ``<task_id>.errors.json`` files; None = none (Table 5 empty);
- ``outlier_model``: left out of the second Pearson r (the paper: Seed-X-PPO-7B); None = no second;
- ``tool_dir``: the annotation pages (default ``$CULTIVAR_HOME/analysis/errors``, per locale).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from cultivar_assets.paths import cultivar_home

PAPER_LOCALES = ("cmn_Hans_China", "cmn_Hans_UK", "cmn_Hans_US")


class ErrorAnalysisConfig(BaseModel):
    """The error analysis's sample, files and outlier (module docstring)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    locales: list[str] = Field(default_factory=lambda: list(PAPER_LOCALES))
    models: list[str] | None = None
    n_instances: int | None = Field(default=None, ge=1)
    seed: str = "cultivar-errors"
    blind: bool = True
    annotations_dir: str | None = None
    outlier_model: str | None = None
    tool_dir: str | None = None

    def tool_path(self) -> Path:
        return Path(self.tool_dir) if self.tool_dir else cultivar_home() / "analysis" / "errors"


def demo_annotations_dir() -> Path:
    """The bundled demo error-annotation files (ours, labelled demo)."""
    return Path(str(resources.files("cultivar_assets.data").joinpath("demo", "errors")))


def demo_error_analysis() -> ErrorAnalysisConfig:
    """The demo's error analysis: Mandarin and both German locales, 4 instances each, every
    demo system, the bundled demo files; the copy baseline (not a model) is the outlier left out
    of the second coefficient."""
    return ErrorAnalysisConfig(
        locales=["cmn_Hans_China", "deu_Latn_Germany", "deu_Latn_Switzerland"],
        n_instances=4, annotations_dir=str(demo_annotations_dir()),
        outlier_model="copy-source-baseline")
