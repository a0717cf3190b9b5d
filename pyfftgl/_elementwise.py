"""One-invocation-per-element passes (shaders/dct.comp, shaders/signal.comp): their workgroup
size and their dispatches inside the device's grid limits."""
from __future__ import annotations

import numpy as np

from . import shaders
from .backends.base import Dispatch
from .planner import groups_per_dispatch, split_groups


def local_size(device) -> int:
    """Invocations per workgroup: 256, or what the device allows."""
    limits = device.info.limits
    return min(256, limits.max_invocations, limits.max_group_size[0])


def program(device, kernel: str, defines: dict, push_names, precision: int):
    """The compiled element-wise `kernel` with `defines`, in `precision` (32 or 64)."""
    defines = {**defines, "LOCAL": local_size(device)}
    if precision == 64:
        defines["PRECISION"] = 64
    return shaders.get_program(device, kernel, defines, push_names)


def dispatches(device, prog, threads: int, values: dict, buffers) -> list[Dispatch]:
    """`prog` over `threads` invocations (push constants `values` by name, plus `total` and
    `group_base`), split into dispatches inside the device's grid limits."""
    local = local_size(device)
    out = []
    for base, gx, gy in split_groups(-(-threads // local), device.info.limits.max_group_count,
                                     groups_per_dispatch(local * 32)):
        v = dict(values, total=threads, group_base=base)
        out.append(Dispatch(prog, (gx, gy, 1), np.array([v[k] for k in prog.push_names],
                                                        np.uint32), tuple(buffers)))
    return out
