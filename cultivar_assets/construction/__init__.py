"""Building Cultivar (paper §2): named-entity-rich selection, LLM localisation, post-editing.

No Dagster here: the assets in ``cultivar_assets/assets`` call these modules.
"""
