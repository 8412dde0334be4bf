"""Arrays kept on disk from one computation to the next, read back at the speed of a copy.

An array file holds a JSON header and the arrays' raw bytes (no pickles, no compression, no
checksum pass): 8 bytes :data:`MAGIC`, 8 bytes the header's length (little-endian), the header
(``{"meta": <the caller's description>, "arrays": [[name, dtype, shape, offset], ...]}``), then
each array's bytes at its offset (from the end of the header, aligned to :data:`ALIGN`). A file
is written beside its path and renamed over it when complete, so a reader sees the old file or
the new one, never a part.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

MAGIC = b"CULTKEPT"
ALIGN = 64


def _aligned(offset: int) -> int:
    return (offset + ALIGN - 1) // ALIGN * ALIGN


def write_arrays(path: Path, meta: dict, arrays: Mapping[str, np.ndarray]) -> None:
    """Keep ``arrays`` (C order, native byte order) and ``meta`` (JSON) in ``path``, replaced
    atomically."""
    layout, offset = [], 0
    contiguous = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    for name, a in contiguous.items():
        layout.append([name, a.dtype.str, list(a.shape), offset])
        offset = _aligned(offset + a.nbytes)
    header = json.dumps({"meta": meta, "arrays": layout}).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("wb") as out:
        out.write(MAGIC + len(header).to_bytes(8, "little") + header)
        start = out.tell()
        for (_, _, _, at), a in zip(layout, contiguous.values(), strict=True):
            out.seek(start + at)
            out.write(memoryview(a.reshape(-1).view(np.uint8)))
        out.truncate(start + offset)
    os.replace(partial, path)


def read_arrays(path: Path) -> tuple[dict, dict[str, np.ndarray]] | None:
    """``(meta, arrays)`` kept in ``path`` by :func:`write_arrays`; None when there is no such
    file or it holds something else (another layout, cut short)."""
    try:
        with path.open("rb") as source:
            head = source.read(16)
            if len(head) < 16 or head[:8] != MAGIC:
                return None
            size = int.from_bytes(head[8:], "little")
            header = json.loads(source.read(size).decode("utf-8"))
            data = np.fromfile(source, dtype=np.uint8)
    except FileNotFoundError:
        return None
    arrays = {}
    for name, dtype, shape, at in header["arrays"]:
        kind = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) * kind.itemsize
        if at + count > len(data):
            return None
        arrays[name] = data[at:at + count].view(kind).reshape(shape)
    return header["meta"], arrays
