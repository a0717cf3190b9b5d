"""A submission's size: how many chunk units of axis 0 fit the device's buffers, and how a pass's
workgroups split into dispatches within the device's count limits and the work budget
(DISPATCH_BYTES)."""
from __future__ import annotations

from ..limits import Limits
from .abi import COMPLEX64_BYTES


def chunk_units(count: int, elements_per_unit: int, limits: Limits) -> int:
    unit_bytes = elements_per_unit * COMPLEX64_BYTES
    if unit_bytes > limits.max_buffer_bytes:
        raise ValueError(
            f"one line needs {unit_bytes} bytes of device memory, more than this device's "
            f"largest storage buffer ({limits.max_buffer_bytes} bytes)")
    return max(1, min(count, limits.max_buffer_bytes // unit_bytes))

def split_groups(groups: int, max_count: tuple[int, int, int], max_groups: int | None = None
                 ) -> list[tuple[int, int, int]]:
    """Cover `groups` workgroups with (base, gx, gy) dispatches inside the device's count limits,
    each running at most `max_groups` of them (the work budget: dispatch_grids).

    Each dispatch runs a gx-by-gy grid; the kernel numbers its workgroups base + x + y * gx and
    skips those >= groups, so nothing is ever truncated silently. The dispatches are as few as
    the limits allow (more only where rows round down) and evenly sized, their rows as few as fit
    and balanced, so fewer than gy workgroups idle: 65536 groups under a 65535 limit run as
    2 x 32768, not 2 x 65535 with half of them empty. Every dispatch but the last runs only live
    workgroups (gx * gy <= its share), so none does more than `max_groups` of work.
    """
    gx_max, gy_max = max_count[0], max_count[1]
    cap = gx_max * gy_max if max_groups is None else max(1, min(max_groups, gx_max * gy_max))
    fewest = -(-groups // cap)
    out, base = [], 0
    while base < groups:
        left = groups - base
        share = min(cap, -(-left // max(1, fewest - len(out))))  # the rest, evenly
        gy = min(-(-share // gx_max), gy_max)
        gx = min(-(-share // gy) if share == left else share // gy, gx_max)
        out.append((base, gx, gy))
        base += gx * gy
    return out


# Bytes of memory traffic one dispatch may cause (estimated): small enough that the slowest GPU
# pyfftgl targets finishes it far inside a display watchdog (2 s on Windows) even when compute
# bound, big enough that large transforms split into few dispatches (docs/performance-log.md).
DISPATCH_BYTES = 1 << 29


def dispatch_grids(p, units: int, limits: Limits, element_bytes: int = COMPLEX64_BYTES
                   ) -> list[tuple[int, int, int]]:
    """The (base, gx, gy) dispatches of pass p over `units` chunk units, inside the device's
    count limits and DISPATCH_BYTES of estimated traffic each (p.values_per_group() values of
    `element_bytes`: the plan's element with all its fields)."""
    return split_groups(p.groups(units), limits.max_group_count,
                        groups_per_dispatch(p.values_per_group() * element_bytes))


def groups_per_dispatch(bytes_per_group: int) -> int:
    """Workgroups one dispatch may run within DISPATCH_BYTES, each moving `bytes_per_group`."""
    return max(1, DISPATCH_BYTES // bytes_per_group)
