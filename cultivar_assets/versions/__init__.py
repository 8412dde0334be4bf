"""Digests for Dagster's code and data versions, in the core: the code an asset runs
(:mod:`~cultivar_assets.versions.code`), what an asset reads besides its upstream assets
(:mod:`~cultivar_assets.versions.inputs`) and what it wrote (:mod:`~cultivar_assets.versions.rows`).
"""
