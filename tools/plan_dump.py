"""Dump what the planner makes of a sweep of transforms: for every pass, its kernel's assembled
source on both APIs, its push constants and workgroup grids, and the host tables' contents (as
hashes). Two dumps that compare equal mean a planner change left every kernel as it was.

    python tools/plan_dump.py out.json        # then: cmp before.json out.json

Pure Python: no GPU. The limits are a 48 KB GPU, the software drivers' 32 KB, and the shipped
H100 wisdom of each API on the 48 KB GPU."""
import dataclasses
import hashlib
import json
import sys

from pyfftgl import planner, kernels, wisdom
from pyfftgl.limits import Limits

GPU = Limits(49152, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32 - 1)
SOFT = Limits(32768, 1024, (1024, 1024, 1024), (65535, 65535, 65535), 2**27)
H100 = "NVIDIA H100 80GB HBM3"


def limits_sets() -> dict:
    return {"gpu48k": GPU, "soft32k": SOFT,
            "h100_vulkan": dataclasses.replace(GPU, tuned=wisdom.load(H100, "vulkan")),
            "h100_gl": dataclasses.replace(GPU, tuned=wisdom.load(H100, "gl"))}


def c2c(ax, inverse=False, norm="backward"):
    return planner.Step("c2c", ax, inverse=inverse, norm=norm)


def r2c(ax, n, norm="backward"):
    return planner.Step("r2c", ax, n=n, norm=norm)


def c2r(ax, n, norm="backward"):
    return planner.Step("c2r", ax, n=n, norm=norm)


def transforms() -> list:
    """(name, upload shape, steps) of the sweep."""
    out = []
    for n in (1, 2, 3, 5, 7, 8, 16, 17, 31, 64, 100, 127, 128, 243, 256, 343, 1000, 1009, 1024,
              1536, 2048, 2187, 3125, 4096, 4099):
        out.append((f"fft {n}", (4, n), [c2c(1)]))
    for n, batch in ((8192, 2), (12288, 2), (16384, 2), (65537, 2), (2**16, 4), (2**18, 2),
                     (2**20, 2), (2**21, 2), (2**22, 2)):
        out.append((f"fft {n} x{batch}", (batch, n), [c2c(1)]))
        out.append((f"ifft {n} x{batch} ortho", (batch, n), [c2c(1, True, "ortho")]))
    for shape in ((64, 64), (1024, 1024), (2048, 2048), (4096, 4096), (1000, 6), (1009, 1024),
                  (3072, 1024), (2048, 6), (3, 6, 1000)):
        out.append((f"fft2 {shape}", shape, [c2c(len(shape) - 1), c2c(len(shape) - 2)]))
    for shape in ((16, 64, 128), (128, 128, 128), (256, 256, 256)):
        out.append((f"fftn {shape}", shape, [c2c(2, True), c2c(1, True), c2c(0, True)]))
    out.append(("fft axis0 (2048, 512)", (2048, 512), [c2c(0)]))
    for n in (16, 64, 1000, 1024, 2000, 4096, 16384, 20000):
        out.append((f"rfft {n}", (8, n // 2), [r2c(1, n)]))
        out.append((f"irfft {n}", (8, n // 2 + 1), [c2r(1, n, "forward")]))
    for n in (15, 101):
        out.append((f"rfft {n}", (8, n), [r2c(1, n)]))
        out.append((f"irfft {n}", (8, n // 2 + 1), [c2r(1, n)]))
    for rows, cols in ((1024, 1024), (2048, 2048), (512, 4096)):
        out.append((f"rfft2 {rows}x{cols}", (rows, cols // 2), [r2c(1, cols), c2c(0)]))
        out.append((f"irfft2 {rows}x{cols}", (rows, cols // 2 + 1), [c2c(0, True), c2r(1, cols)]))
    out.append(("rfft axis0 (64, 10)", (64, 10), [r2c(0, 64)]))
    return out


def table_offsets(spec) -> tuple[dict, list]:
    """Each table's offset in the plan's table buffer (as planner.emit lays them out), and
    (size, sha256) of each table in order."""
    offsets, at, contents = {}, 0, []
    for key in spec.tables():
        t = planner.build_table(key)
        offsets[key], at = at, at + t.size
        contents.append((int(t.size), hashlib.sha256(t.tobytes()).hexdigest()))
    return offsets, contents


def dump_spec(spec, limits) -> dict:
    _, contents = table_offsets(spec)
    emitted = planner.emit(spec)  # the preambles exactly as plans.TransformPlan compiles them
    passes = []
    for p, defines in zip(spec.passes, emitted.defines):
        groups = planner.split_groups(p.groups(spec.units), limits.max_group_count)
        passes.append({
            "kernel": p.kernel, "src_buf": p.src_buf, "dst_buf": p.dst_buf,
            "source_vulkan": kernels.assemble(p.kernel, defines, "vulkan"),
            "source_gl_sha": hashlib.sha256(
                kernels.assemble(p.kernel, defines, "gl").encode()).hexdigest(),
            "dispatches": [{"grid": [gx, gy], "push": list(p.push(spec.units, base))}
                           for base, gx, gy in groups]})
    return {"units": spec.units, "chunks": spec.chunks, "buffers": [list(b) for b in spec.buffers],
            "algorithms": list(spec.algorithms), "conv_lengths": list(spec.conv_lengths),
            "out_shape": list(spec.out_shape), "inverse": spec.inverse, "tables": contents,
            "passes": passes}


def dump() -> dict:
    out = {"push_names": list(planner.PUSH_NAMES)}
    for lname, limits in limits_sets().items():
        for name, shape, steps in transforms():
            try:
                out[f"{lname} | {name}"] = dump_spec(planner.plan_steps(shape, steps, limits),
                                                     limits)
            except ValueError as e:
                out[f"{lname} | {name}"] = {"error": str(e)}
    return out


if __name__ == "__main__":
    text = json.dumps(dump(), indent=1, sort_keys=True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)
    else:
        print(text)
