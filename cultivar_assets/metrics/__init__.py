"""BLEU/chrF scoring, ∆, locale-specific word recall and rank agreement (no Dagster)."""
