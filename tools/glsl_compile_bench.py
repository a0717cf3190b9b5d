"""Time GLSL -> SPIR-V per kernel for each glslangValidator given, on pyfftgl's own kernels.

    python tools/glsl_compile_bench.py /usr/bin/glslangValidator \\
        .venv/lib/python3.*/site-packages/cmeel.prefix/bin/glslangValidator

Pure CPU, no GPU: the sources are what the planner makes for a few transforms on the software
drivers' limits (radix, four-step, Bluestein, real-data kernels), compiled with pyfftgl's flags.
"""
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_dump import SOFT, c2c, c2r, r2c, table_offsets  # noqa: E402

from pyfftgl import planner, kernels  # noqa: E402

CASES = [((4, 1024), [c2c(1)]), ((4, 1009), [c2c(1)]), ((2, 2**20), [c2c(1)]),
         ((1024, 512), [r2c(1, 1024), c2c(0)]), ((8, 1025), [c2r(1, 2048)])]


def kernel_sources() -> list[str]:
    out = []
    for shape, steps in CASES:
        spec = planner.plan_steps(shape, steps, SOFT)
        offsets, _ = table_offsets(spec)
        out += [kernels.assemble(p.kernel, p.defines(offsets), "vulkan") for p in spec.passes]
    return list(dict.fromkeys(out))


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_compiler(exe: str, srcs: list[str], repeats: int = 3) -> tuple[float, float]:
    """Best-of-`repeats` mean seconds per kernel: wall clock, and CPU time (steadier on a busy
    machine)."""
    env = dict(os.environ)
    lib = Path(exe).resolve().parent.parent / "lib"
    if (lib / "libglslang.so").exists() or any(lib.glob("libglslang.so*")):
        env["LD_LIBRARY_PATH"] = f"{lib}:{env.get('LD_LIBRARY_PATH', '')}"
    best, best_cpu = float("inf"), float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, s in enumerate(srcs):
            p = Path(tmp) / f"k{i}.comp"
            p.write_text(s)
            paths.append(p)
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), _child_cpu()
            for p in paths:
                subprocess.run([exe, "-V", "--target-env", "vulkan1.1", "-S", "comp", "-o",
                                str(p.with_suffix(".spv")), str(p)], check=True, env=env,
                               capture_output=True)
            best = min(best, (time.perf_counter() - t0) / len(paths))
            best_cpu = min(best_cpu, (_child_cpu() - c0) / len(paths))
    return best, best_cpu


def main(argv: list[str]) -> int:
    srcs = kernel_sources()
    print(f"{len(srcs)} distinct kernels, {sum(map(len, srcs)) // len(srcs)} characters each "
          "on average")
    for exe in argv:
        lib = str(Path(exe).resolve().parent.parent / "lib")
        version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                 env={**os.environ, "LD_LIBRARY_PATH": lib}).stdout.splitlines()
        wall, cpu = time_compiler(exe, srcs)
        print(f"{wall * 1e3:7.1f} ms wall {cpu * 1e3:7.1f} ms CPU per kernel  {exe}  "
              f"({version[0] if version else '?'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
