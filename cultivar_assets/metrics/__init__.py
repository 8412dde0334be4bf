"""The metric registry (BLEU, chrF, chrF++, TER and entry-point metrics), scoring, ∆,
locale-specific word recall, rank agreement, and the statistics over them (paired bootstrap, rank
intervals, contamination flags, sacreBLEU's paired tests); no Dagster."""
