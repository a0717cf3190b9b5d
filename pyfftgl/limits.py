"""The device limits record: what the planner plans for and the backends read from the driver.

A neutral module, so that the pure planner and the backends both depend on it and not on each other.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """The device limits the planner needs, read from the driver at run time."""

    max_shared_bytes: int  # shared memory per workgroup
    max_invocations: int  # invocations per workgroup
    max_group_size: tuple[int, int, int]  # local_size_{x,y,z}
    max_group_count: tuple[int, int, int]  # workgroups per dispatch, per dimension
    max_buffer_bytes: int  # largest storage buffer a shader may bind
    max_texture_size: int = 0  # largest 2D image side
    # Kernel shapes measured fastest on this device (`pyfftgl bench --tune`), as
    # (n, radices, threads per line, lines per workgroup or 0, padded shared memory) tuples.
    tuned: tuple = ()
    # Lines per tile of a strided pass; 0: the planner's TILE_LINES (32 bytes of complex64). A
    # view for wider elements (element_limits) may ask for fewer lines that still fill a sector.
    tile_lines: int = 0
    # Lines per workgroup of a pass over contiguous lines, its invocations numbered line-fastest
    # so that a warp's accesses span neighbouring rows (a texture's block-tiled layout); 0: one
    # line after another (buffers).
    row_lines: int = 0
    # Bytes of an element over complex64's (element_limits: 2 for two-field texels and
    # complex128): shared-memory slots are that much wider, which the bank model must know.
    slot_scale: int = 1
