"""Data shards: the compact files that the site's browser pages load on demand.

A shard is a small JavaScript file, ``Cultivar.shard("<key>", "<base64>");``, whose payload is
JSON, gzip-compressed, then base64-encoded. Pages load a shard by adding a ``<script>`` element
(``site/static/cultivar-shards.js``), which works from ``file://`` as well as over http (``fetch``
is blocked on ``file://`` by some browsers, script elements are not), and decode it with the
browser's ``DecompressionStream``. The shard text holds only the key (generated from model slugs
and locale keys: ``[A-Za-z0-9._/-]``) and base64 characters, so no data can break out of it.

Shards (``v`` is :data:`FORMAT`):

- ``data/index.js`` — key ``index``: ``{"v", "models": [{"id", "slug", "type", "family",
  "params", "locales"}], "locales": [{"locale", "language_name", "location", "flores",
  "cultivar"}], "originals"}``: what the pickers list.
- ``data/locales/<locale>.js`` — key ``locale/<locale>``: ``{"v", "locale", "originals",
  "items": [[id, source_original, source_localised, english_original, english_localised]]}``,
  each text as its word diff (:mod:`cultivar_assets.site.diff`; the sources in the mode of the
  locale's script, the English references in word mode) in alternating pieces,
  unchanged first: ``["Am ", "Montag", " in ", "Rio"]`` is "Am Montag in Rio" with "Montag" and
  "Rio" changed. The originals are ``null`` where the originals policy hides FLORES text (the
  localised side keeps its highlights) or where there is none. Stored once per locale, whatever
  the number of models.
- ``data/hyp/<slug>.js`` — key ``hyp/<slug>``: ``{"v", "model", "locales": [[locale, flores,
  cultivar]], "items": [[id, [[k, hyp_o, raw_o, rules_o, hyp_l, raw_l, rules_l], ...]]]}``: the
  model's translations of every locale in one file (one file per model, not per model and
  locale: at 1,000 models the site stays under static hosts' file limits), *instance-major*:
  each instance id once, in id order, with its outputs in every locale (``k`` indexes
  ``locales``). ``_o`` is the FLORES test set (``null`` when the model has no such row), ``_l``
  the Cultivar one. ``raw`` is ``null`` where the raw output equals the hypothesis; ``rules``
  (cleaning rules that changed the output) is ``null`` when empty. The outputs of one instance
  are translations into English of the same sentence (from 27 locales, FLORES and Cultivar
  sides), so they sit within gzip's 32 KB window of each other: 4× smaller than per-locale
  files on the benchmark's data (docs/performance.md).
- ``data/models/<slug>.js`` — key ``model/<slug>``: ``{"v", "model", "deltas": [...],
  "overall": {...}}``: the model's ∆ per locale, with interval columns where the store has them,
  and its leaderboard ∆BLEU / ∆chrF with their intervals (the compare view).
- ``data/charts/<id>.js`` — key ``chart/<id>``: a chart's Vega-Lite spec (drawn after the page
  has loaded, so a large heatmap does not hold up the leaderboard).
"""

from __future__ import annotations

import base64
import gzip
import re
from collections.abc import Sequence
from typing import Any

import orjson

from cultivar_assets.site.diff import Span, word_diff
from cultivar_assets.tables import json_bytes
from cultivar_assets.textdiff import Mode

FORMAT = 2  # 2: one hypothesis shard per model (was: per model and locale)
_KEY = re.compile(r"^[A-Za-z0-9._/-]+$")
_SHARD = re.compile(r'^Cultivar\.shard\("([A-Za-z0-9._/-]+)","([A-Za-z0-9+/=]*)"\);\n$')
# Level 4: 3 % larger than level 6 on the benchmark's shards, at a third of the time.
GZIP_LEVEL = 4


def shard_path(key: str) -> str:
    """Where the shard ``key`` lives in the site (``locale/x`` -> ``data/locales/x.js``)."""
    kind, _, rest = key.partition("/")
    folder = {"index": "", "locale": "locales/", "hyp": "hyp/", "model": "models/",
              "chart": "charts/", "bootstrap": "", "ranks": "", "separable": "",
              "stats": "stats/"}[kind]
    return f"data/{folder}{rest or kind}.js"


def encode_shard(key: str, payload: Any) -> bytes:
    """The shard file for ``payload`` (JSON, gzip, base64, wrapped in a script call)."""
    return pack_shard(key, shard_json(payload))


def shard_json(payload: Any) -> bytes:
    """The first half of :func:`encode_shard` (holds the GIL): compact UTF-8 JSON
    (:func:`cultivar_assets.tables.json_bytes`: NaN and infinities as ``null``, which the pages
    show as missing; JSON has neither)."""
    return json_bytes(payload)


def pack_shard(key: str, data: bytes) -> bytes:
    """The second half of :func:`encode_shard`: compressing (which releases the GIL, so a
    builder can run it in a thread beside its other work) and wrapping."""
    if not _KEY.match(key):
        raise ValueError(f"shard key {key!r} has characters other than [A-Za-z0-9._/-]")
    packed = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
    return b'Cultivar.shard("' + key.encode() + b'","' + base64.b64encode(packed) + b'");\n'


def decode_shard(content: bytes | str) -> tuple[str, Any]:
    """``(key, payload)`` of a shard file (the inverse of :func:`encode_shard`)."""
    text = content.decode("ascii") if isinstance(content, bytes) else content
    match = _SHARD.match(text)
    if match is None:
        raise ValueError("not a shard file: expected Cultivar.shard(\"key\",\"base64\");")
    payload = gzip.decompress(base64.b64decode(match.group(2)))
    return match.group(1), orjson.loads(payload)


def alternating(spans: Sequence[Span]) -> list[str]:
    """Spans as alternating unchanged / changed pieces, unchanged first (see the module doc)."""
    pieces: list[str] = []
    for span in spans:
        if len(pieces) % 2 != int(span.changed):
            pieces.append("")
        pieces.append(span.text)
    return pieces


def locale_payload(locale: str, instances: Sequence[dict], show_originals: bool,
                   source_mode: Mode) -> dict:
    """The locale shard: the instances' four texts as word diffs (originals only if allowed;
    ``source_mode``: the mode of the locale's script, ``textdiff.mode_for_script``)."""
    items = []
    for inst in instances:
        row: list[Any] = [inst["instance_id"]]
        for original, localised, mode in (("source_original", "source_localised", source_mode),
                                          ("english_original", "english_localised", "word")):
            a, b = word_diff(inst[original] or "", inst[localised], mode)
            shown = show_originals and inst[original] is not None
            row += [alternating(a) if shown else None, alternating(b)]
        items.append(row)
    return {"v": FORMAT, "locale": locale, "originals": show_originals, "items": items}


def hyp_payload(model_id: str,
                locales: Sequence[tuple[str, Sequence[int], str | None, str]],
                rows: dict[tuple[str, int], tuple[str, str | None, list]]) -> dict:
    """The hypothesis shard of one model, every locale in one file, instance-major (the module
    docstring). ``locales``: (locale, its instance ids, FLORES test set or None, Cultivar test
    set); ``rows``: (test set, id) -> output. Locales without any Cultivar output are left out.
    """
    by_id: dict[int, list] = {}
    kept: list[list] = []
    for locale, instance_ids, flores, cultivar in locales:
        index, found = len(kept), False
        for instance_id in instance_ids:
            local = rows.get((cultivar, instance_id))
            if local is None:
                continue
            found = True
            original = rows.get((flores, instance_id)) if flores else None
            by_id.setdefault(instance_id, []).append(
                [index, *(_output(original) if original else (None, None, None)),
                 *_output(local)])
        if found:
            kept.append([locale, flores, cultivar])
    return {"v": FORMAT, "model": model_id, "locales": kept,
            "items": [[instance_id, by_id[instance_id]] for instance_id in sorted(by_id)]}


def _output(row: tuple[str, str | None, Sequence[str] | None]
            ) -> tuple[str, str | None, list | None]:
    hypothesis, raw, rules = row
    return hypothesis, raw, (list(rules) or None) if rules is not None else None
