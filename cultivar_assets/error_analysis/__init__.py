"""The human error analysis of paper §5 (Table 5): the configuration (``config``), the error types
(``types``), the seeded sample (``sample``), the annotation page (``tool``), the returned files
(``file``, ``error_annotation.schema.json``), their ingest (``store``) and the table (``table``).

A sibling of ``evaluation`` and ``construction`` (ARCHITECTURE.md): it reads the stored
translations and scores through the store, and imports neither.
"""
