"""Which of a step's inputs changed since its record, in words.

A record keeps the step's inputs *flattened* (:func:`input_values`): one entry per input, keyed
``<group>:<name>`` after the groups of ``PlannedStep.inputs`` (:mod:`cultivar_assets.steps.plan`)
-- ``code:``, ``environment:``, ``setting:<section.field>`` (nested settings by dotted name, as in
the settings file), ``file:<label>``, ``entry:<field>`` (a model's registry entry), ``other:<name>``
-- and ``step:<key>`` for the token of each step whose outputs it reads (``None``: that step had no
record). Strings are redacted (:func:`cultivar_assets.secrets.redact`): the inputs hold digests
and settings, which refuse secrets already, so this is only a second guard.

:func:`changed_inputs` compares two such mappings and says, for each entry that differs: "the
package's code changed", "annotation file ita_Latn-….annotations.json changed", "setting
metrics.bleu_tokenize changed (13a → flores200)", "step build:ita_Latn ran again (its outputs
changed)", ... Our choices: at most :data:`MAX_LISTED` changes are listed (then "and N more"),
and a value is shown in at most :data:`MAX_VALUE_CHARS` characters.
"""

from __future__ import annotations

import json
from typing import Any

from cultivar_assets.secrets import redact

MAX_LISTED = 4  # ours: changes named in one message
MAX_VALUE_CHARS = 40  # ours: characters of an old or new value shown

_GROUPS = {"code": "code", "environment": "environment", "settings": "setting",
           "files": "file", "entry": "entry", "other": "other"}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items()}
    return value


def _flatten(value: Any, prefix: str, into: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if not prefix.endswith(":") else f"{prefix}{key}",
                     into)
    else:
        into[prefix] = _clean(value)


def input_values(inputs: dict[str, Any], upstream_tokens: dict[str, str | None]
                 ) -> dict[str, Any]:
    """A step's inputs and upstream tokens, flattened (module docstring)."""
    values: dict[str, Any] = {}
    for group, value in inputs.items():
        label = _GROUPS.get(group, group)
        if group in ("files", "other"):  # labels are names already, not paths to flatten
            for name, item in value.items():
                values[f"{label}:{name}"] = _clean(item)
        else:
            _flatten(value, f"{label}:", values)
    for key, token in upstream_tokens.items():
        values[f"step:{key}"] = token
    return values


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS - 1] + "…"


_ABSENT = object()


def _change(key: str, old: Any, new: Any) -> str:
    group, _, name = key.partition(":")
    if group == "code":
        return "the package's code changed"
    if group == "environment":
        return "the installed packages (or the Python version) changed"
    if group == "file":
        if old is _ABSENT or old == "none":
            return f"{name} is new"
        if new is _ABSENT or new == "none":
            return f"{name} is gone"
        return f"{name} changed"
    if group == "step":
        if new is None or new is _ABSENT:
            return f"step {name} has no record (it has not finished since)"
        return f"step {name} ran again (its outputs changed)"
    what = {"setting": "setting", "entry": "registry entry field", "other": ""}.get(group, group)
    before = "–" if old is _ABSENT else _shown(old)
    after = "–" if new is _ABSENT else _shown(new)
    return f"{what} {name}".strip() + f" changed ({before} → {after})"


def changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two flattened inputs, in words, in a fixed order (the code and the
    environment first, then files, settings, the entry, the rest, the upstream steps)."""
    order = {"code": 0, "environment": 1, "file": 2, "setting": 3, "entry": 4, "other": 5,
             "step": 6}
    keys = sorted(set(old) | set(new),
                  key=lambda k: (order.get(k.partition(":")[0], 5), k))
    return [_change(key, old.get(key, _ABSENT), new.get(key, _ABSENT))
            for key in keys if old.get(key, _ABSENT) != new.get(key, _ABSENT)]


def change_summary(changes: list[str]) -> str:
    """``changes`` joined, the first :data:`MAX_LISTED` of them (then how many more)."""
    listed = "; ".join(changes[:MAX_LISTED])
    more = len(changes) - MAX_LISTED
    return listed + (f"; and {more} more" if more > 0 else "")
