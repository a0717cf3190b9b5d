"""The planner's sweep of transforms and device limits, and the snapshot of the plans it chooses
for them (tests/data/plans_snapshot.json, checked by tests/test_planner.py).

A deliberate change to the planner's rules changes the snapshot; look at the diff, then rewrite it:

    python -m tests.regen_snapshot
"""
import dataclasses
import json
from pathlib import Path

from pyfftgl import planner, wisdom
from pyfftgl.limits import Limits
from pyfftgl.planner import Step

SNAPSHOT = Path(__file__).resolve().parent / "data" / "plans_snapshot.json"

# A typical GPU (48 KB of shared memory), the software drivers' limits (32 KB), a small device.
GPU = Limits(49152, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32 - 1)
SOFT = Limits(32768, 1024, (1024, 1024, 1024), (65535, 65535, 65535), 2**27)
SMALL = Limits(16384, 256, (256, 256, 64), (65535, 65535, 65535), 2**28)
H100 = "NVIDIA H100 80GB HBM3"


def limits_sets() -> dict[str, Limits]:
    """The devices planned for, the shipped H100 wisdom of each API on the 48 KB GPU among them."""
    return {"gpu48k": GPU, "soft32k": SOFT, "small16k": SMALL,
            "h100_vulkan": dataclasses.replace(GPU, tuned=wisdom.load(H100, "vulkan")),
            "h100_gl": dataclasses.replace(GPU, tuned=wisdom.load(H100, "gl"))}


def C2C(ax, inverse=False, norm="backward"):
    return Step("c2c", ax, inverse=inverse, norm=norm)


def R2C(ax, n, norm="backward"):
    return Step("r2c", ax, n=n, norm=norm)


def C2R(ax, n, norm="backward"):
    return Step("c2r", ax, n=n, norm=norm)


def sweep() -> list[tuple[str, tuple, list]]:
    """(name, upload shape, steps): batched 1D lengths (radix, mixed, Bluestein, one line in
    halves, four-step), 2D and 3D, strided axes alone, real transforms."""
    out = []
    lengths = (list(range(1, 65)) + [96, 100, 127, 128, 147, 225, 243, 256, 343, 384, 500, 512,
               625, 729, 1000, 1009, 1024, 1536, 2000, 2048, 2187, 2401, 3072, 3125, 3600,
               4096, 4099, 6000, 6144, 8192, 9216, 12288, 16384, 65537])
    for n in lengths:
        out.append((f"fft {n}", (4, n), [C2C(1)]))
    for n in (2**16, 2**17, 2**18, 2**19, 2**20, 2**21, 2**22, 3**12, 10**6):
        out.append((f"fft {n} x2", (2, n), [C2C(1)]))
    for shape in ((64, 64), (1000, 6), (1024, 1024), (2048, 2048), (4096, 4096), (1009, 1024),
                  (3072, 1024), (2048, 6), (3, 6, 1000), (16, 64, 128), (128, 128, 128),
                  (256, 256, 256)):
        out.append((f"fftn {shape}", shape, [C2C(ax) for ax in reversed(range(len(shape)))]))
    for n, inner in ((2048, 512), (1600, 1024), (2187, 1024), (8192, 64), (1 << 20, 4)):
        out.append((f"fft axis 0 {(n, inner)}", (n, inner), [C2C(0, True, "ortho")]))
    for n in (2, 16, 64, 1000, 1024, 2000, 4096, 16384, 20000):
        out.append((f"rfft {n}", (8, n // 2), [R2C(1, n)]))
        out.append((f"irfft {n}", (8, n // 2 + 1), [C2R(1, n, "forward")]))
    for n in (15, 101):
        out.append((f"rfft {n}", (8, n), [R2C(1, n)]))
        out.append((f"irfft {n}", (8, n // 2 + 1), [C2R(1, n)]))
    for rows, cols in ((1024, 1024), (2048, 2048), (512, 4096), (1536, 16)):
        out.append((f"rfft2 {rows}x{cols}", (rows, cols // 2), [R2C(1, cols), C2C(0)]))
        out.append((f"irfft2 {rows}x{cols}", (rows, cols // 2 + 1), [C2C(0, True), C2R(1, cols)]))
    out.append(("rfft axis 0 (64, 10)", (64, 10), [R2C(0, 64)]))
    return out


def pass_summary(p) -> str:
    """One line of what the planner chose for a pass."""
    if isinstance(p, planner.RealPass):
        return f"real mode {p.mode} n {p.nreal} {p.src_buf}->{p.dst_buf}"
    flags = [name for name in ("load_tiled", "store_tiled", "line_fastest", "store_line_fastest",
                               "digit_fastest", "untiled", "sh_halves", "sh_pad", "sh_stagger",
                               "vec2_exchange", "unpack_in_registers") if getattr(p, name)]
    extra = [f"{k} {getattr(p, k)}" for k in ("fourstep_n", "real_unpack", "real_pack", "real_rows")
             if getattr(p, k)]
    if p.dst is not None and p.dst.blocked:
        extra.append(f"blocked {list(p.dst.blocked)}")
    return (f"n {p.n} {list(p.radices)} x{p.threads} lines {p.lines} sh_line {p.sh_line} "
            f"shared {p.shared_bytes} swz {p.swizzle_bits} {' '.join(flags + extra)} "
            f"{p.src_buf}->{p.dst_buf}")


def snapshot() -> dict:
    out = {}
    for lname, limits in limits_sets().items():
        for name, shape, steps in sweep():
            spec = planner.plan_steps(shape, steps, limits)
            out[f"{lname} | {name}"] = {
                "algorithm": spec.algorithm, "conv": list(spec.conv_lengths),
                "units": spec.units, "passes": [pass_summary(p) for p in spec.passes]}
    return out


if __name__ == "__main__":
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
