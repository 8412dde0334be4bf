"""Where the charts and the site are written."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from cultivar_assets.paths import cultivar_home


class SiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    output_dir: str | None = None  # default: $CULTIVAR_HOME/site
    charts_dir: str | None = None  # default: $CULTIVAR_HOME/charts
    # None: only for the demo data (FLORES text is not re-hosted on public pages; see build.py)
    show_originals: bool | None = None  # show original FLORES sentences
    include_database: bool | None = None  # offer the DuckDB file (it holds them too)

    def site_path(self) -> Path:
        return Path(self.output_dir) if self.output_dir else cultivar_home() / "site"

    def charts_path(self) -> Path:
        return Path(self.charts_dir) if self.charts_dir else cultivar_home() / "charts"
