"""Where the charts and the site are written, and what the site includes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from cultivar_assets.paths import cultivar_home

# auto: include the Query page when DuckDB-Wasm is in the web cache or npm can fetch it, else
# leave it out and say so; cached: only from the web cache (never runs npm); required: fail
# without it; off: leave it out.
QueryPageMode = Literal["auto", "cached", "required", "off"]


class SiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    output_dir: str | None = None  # default: $CULTIVAR_HOME/site
    charts_dir: str | None = None  # default: $CULTIVAR_HOME/charts
    model_parts_dir: str | None = None  # default: $CULTIVAR_HOME/site-models (model_site)
    locale_shards_dir: str | None = None  # default: $CULTIVAR_HOME/site-locales (locale_shards)
    # None: only for the demo data (FLORES text is not re-hosted on public pages; see build.py)
    show_originals: bool | None = None  # show original FLORES sentences
    include_database: bool | None = None  # offer a DuckDB file of the published tables
    query_page: QueryPageMode = "auto"  # the in-browser SQL page (DuckDB-Wasm, from npm)
    web_cache_dir: str | None = None  # default: $CULTIVAR_HOME/cache/web (npm files, Vega)

    @field_validator("query_page", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: object) -> object:
        """YAML 1.1 reads an unquoted ``off`` (and ``no``, ``false``) as the boolean false: taken
        as ``off``. ``on``/``yes``/``true`` name no mode: said, with how to write one."""
        if value is False:
            return "off"
        if value is True:
            raise ValueError("is a boolean (YAML reads on, yes and true so): write one of auto, "
                             "cached, required, off (quoted, e.g. query_page: 'auto')")
        return value

    def site_path(self) -> Path:
        return Path(self.output_dir) if self.output_dir else cultivar_home() / "site"

    def charts_path(self) -> Path:
        return Path(self.charts_dir) if self.charts_dir else cultivar_home() / "charts"

    def model_parts_path(self) -> Path:
        """Where the asset ``model_site`` writes each model's part of the site (a folder per
        model)."""
        return (Path(self.model_parts_dir) if self.model_parts_dir
                else cultivar_home() / "site-models")

    def locale_shards_path(self) -> Path:
        """Where the asset ``locale_shards`` writes the locale shards of the site."""
        return (Path(self.locale_shards_dir) if self.locale_shards_dir
                else cultivar_home() / "site-locales")

    def web_cache_path(self) -> Path:
        return Path(self.web_cache_dir) if self.web_cache_dir else default_web_cache()


def default_web_cache() -> Path:
    """Files the site build fetches or generates once: DuckDB-Wasm (npm), the Vega bundle."""
    return cultivar_home() / "cache" / "web"
