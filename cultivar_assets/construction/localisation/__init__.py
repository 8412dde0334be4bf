"""LLM localisation (paper §2.2): the prompt templates (``prompts``, ``localisation_prompts.yaml``),
the requests, cache, retries and usage (``localiser``), reading answers (``answer``), the drafts
and their checks (``drafts``) and their DuckDB records (``store``)."""
