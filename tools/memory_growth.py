"""Host memory growth over many distinct transform sizes: one fft of each length in a range, the
resident set size (RSS) printed along the way and at the end, per backend, each backend in a
process of its own. Plans are bounded by the plan cache and programs by the program cache, so
the growth should level off instead of climbing with every size seen (issue 40: at most 150 MB
over 1200..1499 on lavapipe and llvmpipe).

    python tools/memory_growth.py                 # both backends, lengths 1200..1499
    python tools/memory_growth.py gl --lo 1200 --hi 1300 --every 20

It compiles a few kernels per length: minutes on the software drivers. Mesa's on-disk shader
cache makes a second run compile less (and grow less); MESA_SHADER_CACHE_DISABLE=true measures
the cold case.
"""
import argparse
import json
import subprocess
import sys

CHILD = r"""
import gc, json, sys, time
import numpy as np
import pyfftgl

def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0

backend, lo, hi, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
warm = rng.standard_normal(64).astype(np.complex64)
pyfftgl.fft(warm, backend=backend)  # the device, its context and first programs, not counted
gc.collect()
start, t0, marks = rss_mb(), time.perf_counter(), []
for i, n in enumerate(range(lo, hi)):
    x = rng.standard_normal(n).astype(np.complex64)
    y = pyfftgl.fft(x, backend=backend)
    err = np.linalg.norm(y - np.fft.fft(x.astype(np.complex128))) / np.linalg.norm(x) / np.sqrt(n)
    assert err < 1e-5, (n, err)
    if (i + 1) % every == 0 or n == hi - 1:
        gc.collect()
        marks.append((n, round(rss_mb() - start, 1)))
        print(f"{backend}: after {n}: +{marks[-1][1]} MB", file=sys.stderr, flush=True)
dev = pyfftgl.get_device(backend)
print(json.dumps({"backend": backend, "device": dev.info.name, "lengths": [lo, hi - 1],
                  "rss_start_mb": round(start, 1), "growth_mb": marks[-1][1], "marks": marks,
                  "plans": len(pyfftgl.plan_cache), "programs": len(pyfftgl.program_cache),
                  "seconds": round(time.perf_counter() - t0, 1)}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("backends", nargs="*", default=["vulkan", "gl"])
    ap.add_argument("--lo", type=int, default=1200)
    ap.add_argument("--hi", type=int, default=1500, help="one past the last length")
    ap.add_argument("--every", type=int, default=50, help="print the RSS every this many")
    ap.add_argument("--limit-mb", type=float, default=150.0)
    args = ap.parse_args(argv)
    status = 0
    for backend in args.backends:
        out = subprocess.run([sys.executable, "-c", CHILD, backend, str(args.lo), str(args.hi),
                              str(args.every)], stdout=subprocess.PIPE, text=True)
        if out.returncode != 0:
            print(f"{backend}: failed (exit {out.returncode})")
            status = 1
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        ok = r["growth_mb"] <= args.limit_mb
        status |= not ok
        print(f"{backend} ({r['device']}): RSS +{r['growth_mb']} MB over lengths "
              f"{r['lengths'][0]}..{r['lengths'][1]} (start {r['rss_start_mb']} MB; "
              f"{r['plans']} plans, {r['programs']} programs held; {r['seconds']} s) "
              f"{'ok' if ok else 'OVER'} the {args.limit_mb:g} MB bound; along the way: "
              + ", ".join(f"{n}: +{mb}" for n, mb in r["marks"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
