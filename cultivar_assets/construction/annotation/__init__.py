"""Post-editing and its annotation files (paper §2.3-2.4): the task (``task``), the tool's pages
(``postedit_tool``), the file (``file``, ``annotation.schema.json``), counting edits
(``text_edits``), ingest (``store``, ``postedit_build``), Table 1 (``stats``) and the demo's files
(``demo``)."""
