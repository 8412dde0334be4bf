"""The assets as Dagster sees them: each with its computed ``code_version`` (the digest of the
code its function runs: :func:`cultivar_assets.versions.code.code_version`) and with deps on the
source assets it reads (:data:`cultivar_assets.assets.sources.SOURCE_DEPS`).

An external asset (no function, such as ``run_failures``) gets neither; a source named in
``SOURCE_DEPS`` for an asset not in the list is refused (a misspelt key must not vanish).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg

from cultivar_assets.assets.sources import SOURCE_DEPS
from cultivar_assets.versions.code import code_version


def asset_code_version(asset: dg.AssetsDefinition) -> str:
    """The code version of an executable asset's function."""
    return code_version(asset.op.compute_fn.decorated_fn)


def versioned(assets: Iterable[dg.AssetsDefinition],
              source_deps: Mapping[str, tuple[str, ...]] = SOURCE_DEPS
              ) -> list[dg.AssetsDefinition]:
    """``assets`` with code versions and source deps (module docstring)."""
    assets = list(assets)
    keys = {asset.key.to_user_string() for asset in assets}
    unknown = sorted(set(source_deps) - keys)
    if unknown:
        raise KeyError(f"source deps name assets that are not in the graph: {', '.join(unknown)}")
    result = []
    for asset in assets:
        if not isinstance(asset, dg.AssetsDefinition) or not asset.is_executable:
            result.append(asset)
            continue
        version = asset_code_version(asset)
        extra = source_deps.get(asset.key.to_user_string(), ())

        def spec_with(spec: dg.AssetSpec, version: str = version,
                      extra: tuple[str, ...] = extra) -> dg.AssetSpec:
            known = {dep.asset_key for dep in spec.deps}
            added = [dg.AssetDep(dg.AssetKey.from_user_string(key)) for key in extra
                     if dg.AssetKey.from_user_string(key) not in known]
            return spec.replace_attributes(code_version=version, deps=[*spec.deps, *added])

        result.append(asset.map_asset_specs(spec_with))
    return result
