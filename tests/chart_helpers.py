"""Synthetic chart inputs of any size: models × the 27 locales, with or without intervals."""

from __future__ import annotations

import random

from cultivar_assets.data.locales import all_locales


def chart_inputs(n_models: int, intervals: bool = True, seed: int = 5):
    """(leaderboard, reported, model × locale ∆ rows, locale rows) like ``build.chart_inputs``."""
    rng = random.Random(seed)
    locales = all_locales()
    leaderboard, deltas = [], []
    for m in range(n_models):
        family = f"Family {m % 9}"
        params = [0.5, 1, 2, 4, 8, 14, 32, 70][(m // 9) % 8]
        style = "chat-instruction" if m % 11 else "base-fewshot"
        model = {"model_id": f"model-{m:03d}-{family.lower().replace(' ', '-')}", "type": "LLM",
                 "family": family, "params_total_b": params, "prompt_style": style,
                 "delta_bleu": rng.gauss(-0.5, 1.5), "delta_chrf": rng.gauss(-1, 1.5)}
        for metric in ("bleu", "chrf"):
            if intervals:
                model[f"delta_{metric}_low"] = model[f"delta_{metric}"] - rng.uniform(0.2, 1)
                model[f"delta_{metric}_high"] = model[f"delta_{metric}"] + rng.uniform(0.2, 1)
        leaderboard.append(model)
        for locale in locales:
            row = {"model_id": model["model_id"], "locale": locale.key,
                   "family": family, "params_total_b": params, "type": "LLM"}
            for metric in ("bleu", "chrf"):
                flores = rng.uniform(10, 50)
                delta = rng.gauss(model[f"delta_{metric}"], 2)
                row.update({f"flores_{metric}": flores, f"cultivar_{metric}": flores + delta,
                            f"delta_{metric}": delta})
                if intervals:
                    row[f"delta_{metric}_low"] = delta - rng.uniform(0.5, 2)
                    row[f"delta_{metric}_high"] = delta + rng.uniform(0.5, 2)
            deltas.append(row)
    locale_rows = []
    for locale in locales:
        mine = [d for d in deltas if d["locale"] == locale.key]
        row = {"locale": locale.key, "language": locale.language, "script": locale.script,
               "location": locale.location, "location_short": locale.location_short,
               "language_name": locale.language_name,
               "official_or_de_facto": locale.official_or_de_facto, "n_models": len(mine)}
        for metric in ("bleu", "chrf"):
            value = sum(d[f"delta_{metric}"] for d in mine) / max(len(mine), 1)
            row[f"delta_{metric}"] = value
            if intervals:
                row[f"delta_{metric}_low"], row[f"delta_{metric}_high"] = value - 0.4, value + 0.4
        locale_rows.append(row)
    return leaderboard, [], deltas, locale_rows
