"""Per-device kernel shapes measured by `pyfftgl bench --tune`, read by the backends at start-up
and handed to the planner as Limits.tuned.

A wisdom file is JSON named after the device, {api: {key: {"radices": [...], "threads": t,
"lines": l, "pad": bool, "gpu_ms": ...}}}, the key a length n ("1024": measured on contiguous
lines) or "tiled:n" (measured on the strided passes of a four-step transform). Files shipped in
pyfftgl/tuned/ are read first, then the user's in <cache dir>/wisdom/ (written by --tune), whose
entries win.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .planner import TunedShape, is_real_key, key_length, real_key, tiled_key
from .kernels import cache_dir

SHIPPED = Path(__file__).resolve().parent / "tuned"


def device_slug(name: str) -> str:
    """A file-name form of a device name; GL's "<GPU>/PCIe/SSE2" and Vulkan's "<GPU>" give the
    same slug."""
    name = name.split("/")[0]
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "device"


def user_path(device_name: str) -> Path:
    return cache_dir() / "wisdom" / f"{device_slug(device_name)}.json"


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def entries(device_name: str, api: str) -> dict:
    """{n: entry} for this device and API, shipped then user entries."""
    if os.environ.get("PYFFTGL_NO_WISDOM"):
        return {}
    slug = device_slug(device_name)
    out = {}
    for path in (SHIPPED / f"{slug}.json", user_path(device_name)):
        out.update(_read(path).get(api, {}))
    return out


TILED, REAL = "tiled:", "real:"


def parse_key(key: str):
    """A wisdom key as TunedShape.key names it: n, planner.tiled_key(n) for "tiled:n", or
    planner.real_key(n) for "real:n" (entries measured by a probe: `bench --tune` times plain and
    tiled passes only)."""
    if key.startswith(TILED):
        return tiled_key(int(key[len(TILED):]))
    if key.startswith(REAL):
        return real_key(int(key[len(REAL):]))
    return int(key)


def file_key(key) -> str:
    """The wisdom file's key for a TunedShape.key (the inverse of parse_key)."""
    if is_real_key(key):
        return f"{REAL}{key[1]}"
    n, tiled = key_length(key)
    return f"{TILED}{n}" if tiled else str(n)


def load(device_name: str, api: str, fallback: str | None = None) -> tuple[TunedShape, ...]:
    """Limits.tuned for this device and API, ordered by length (contiguous, then real, then
    tiled); the `fallback` API's entry for each key this API has none for (WebGPU over Vulkan
    runs the same SPIR-V on the same driver, so Vulkan's measured shapes are the best guess until
    WebGPU's own are measured)."""
    out = []
    found = dict(entries(device_name, fallback) if fallback else {}, **entries(device_name, api))
    for key, e in found.items():
        try:
            parsed = parse_key(key)
            n, tiled = key_length(parsed)
            out.append(TunedShape(n, tuple(int(r) for r in e["radices"]), int(e["threads"]),
                                  int(e.get("lines", 0)), bool(e.get("pad", False)), tiled,
                                  real=is_real_key(parsed)))
        except (KeyError, TypeError, ValueError):
            continue  # a malformed entry is ignored, never fatal
    return tuple(sorted(out, key=lambda t: (t.n, t.tiled, t.real)))


def save(device_name: str, api: str, found: dict, path: Path | None = None) -> Path:
    """Merge {key: entry} (keys as TunedShape.key names them) into the wisdom file at `path`
    (default: the user's) and return it."""
    path = path or user_path(device_name)
    data = _read(path)
    data.setdefault(api, {}).update({file_key(k): e for k, e in found.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return path
