"""Named-entity-rich selection (paper §2.1): NER over the English side (``entities``), the
exclusion rules (``rules``), the choice of instances (``choice``), its review page (``page``) and
its DuckDB records (``store``)."""
