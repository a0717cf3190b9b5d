"""The benchmark tool on the real drivers: its copy kernel copies, its records carry the fields
the results files promise, its loop mode runs the calls it reports, and the library's normal
path imports none of it."""
import argparse
import json
import subprocess
import sys

import numpy as np
import pytest

from pyfftgl import bench, planner, kernels
from pyfftgl.backends import get_device
from pyfftgl.backends.base import Dispatch

FIELDS = {"case", "shape", "batch", "kind", "backend", "gpu_ms", "host_ms", "ref", "copy_gbps",
          "device", "driver", "date", "commit", "gflops", "gbps", "pct_copy"}


def test_copy_kernel_copies(backend):
    dev = get_device(backend)
    data = np.arange(4096, dtype=np.float32)
    src, dst = dev.buffer(data.nbytes, data), dev.buffer(data.nbytes)
    prog = kernels.get_program(dev, "copy.comp", {}, planner.PUSH_NAMES)
    dev.record([Dispatch(prog, (4, 1, 1), np.array([1024, 0, 0, 0, 0, 0], np.uint32),
                         (src, dst))]).run()
    assert np.array_equal(dev.read(dst, 4096), data)
    assert bench.copy_gbps(dev, nbytes=1 << 20, reps=2) > 0


def test_records_and_results_file(backend, tmp_path):
    cases = [bench.Case("fft", (64, 256), (1,), "1d"),
             bench.Case("rfft2", (32, 32), (0, 1), "real")]
    lines = []
    records = bench.run(cases, backends=(backend,), reps=2, out_dir=tmp_path, echo=lines.append)
    assert len(records) == 2
    for r in records:
        assert FIELDS <= set(r)
        assert r["gpu_ms"] > 0 and r["host_ms"] > 0 and r["ref"]["numpy_ms"] > 0
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and len(json.loads(files[0].read_text())) == 2
    # a second run of the same cases replaces its records rather than appending
    bench.run(cases[:1], backends=(backend,), reps=1, out_dir=tmp_path, echo=lines.append)
    assert len(json.loads(files[0].read_text())) == 2


def test_pass_times(backend, tmp_path):
    # a two-pass four-step: one time per pass, each a real measurement, in the record and the line
    lines = []
    records = bench.run([bench.Case("fft", (2, 16384), (1,), "1d")], backends=(backend,), reps=1,
                        cpu=False, out_dir=None, echo=lines.append, per_pass=True)
    (r,) = records
    assert r["passes"] == 2 and len(r["pass_ms"]) == 2 and all(t > 0 for t in r["pass_ms"])
    assert any("passes " in line for line in lines)
    assert "pass_ms" not in bench.run([bench.Case("fft", (2, 64), (1,), "1d")], backends=(backend,),
                                      reps=1, cpu=False, out_dir=None, echo=lines.append)[0]


def test_cli_runs_the_lengths_asked_for(backend, capsys):
    # `--only` with no group and `--lengths`: just those batched lengths, over --elements
    from pyfftgl.__main__ import main
    assert main(["bench", "--only", "--lengths", "96", "8192", "--elements", "16384",
                 "--backends", backend, "--no-cpu", "--no-write", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "fft 170x96 " in out and "fft 2x8192 " in out and "fft2" not in out
    assert "loop" not in out  # only a full run or --loop loops
    with pytest.raises(SystemExit):
        main(["bench", "--lengths", "0", "--no-write"])


def test_best_of_waits_for_the_times_to_settle():
    # slow while the clocks come up, then steady: the best steady time, after `reps` non-improving
    times = iter([9.0, 5.0, 3.0, 3.01, 2.99, 3.0, 3.0, 1.0])
    assert bench.best_of(lambda: next(times), reps=3) == 2.99
    calls = []
    assert bench.best_of(lambda: calls.append(1) or 100.0 - len(calls), reps=3, limit=10) == 90.0
    assert len(calls) == 10


LOOP_FIELDS = {"us_per_call", "calls", "repeats", "warmup", "gpu_us", "vs_gpu", "torch_us_per_call",
               "torch_calls", "torch_out", "vs_torch"}


def _torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_loop_runs_the_calls_it_reports():
    # a host-side call counted: warm-up, then `calls` calls per timed loop, each loop ended by one
    # finish; a cheap call grows the loop to min_s
    made, finished = [], []
    r = bench.loop_us(lambda: made.append(len(finished)), lambda: finished.append(len(made)),
                      calls=50, min_s=0.005, warm_s=0.01, reps=2)
    assert r["calls"] >= 50 and r["warmup"] % 50 == 0 and r["warmup"] >= 50 and r["repeats"] >= 3
    assert len(made) == r["warmup"] + r["calls"] * r["repeats"]
    timed_ends = finished[-r["repeats"]:]  # made-count at each timed loop's finish
    assert timed_ends == [r["warmup"] + r["calls"] * (i + 1) for i in range(r["repeats"])]
    assert len(finished) == r["warmup"] // 50 + r["repeats"]
    assert r["us_per_call"] > 0
    # a slow call keeps the count asked for
    slow = bench.loop_us(lambda: sum(range(20000)), lambda: None, calls=3, min_s=0.0, warm_s=0.0,
                         reps=1)
    assert slow["calls"] == 3 and slow["warmup"] == 3


def test_loop_section_in_the_results_file(backend, tmp_path):
    cases = [bench.Case("fft2", (32, 32), (0, 1), "2d"), bench.Case("fft", (4, 64), (1,), "1d")]
    lines = []
    records = bench.run(cases, backends=(backend,), reps=1, cpu=False, out_dir=tmp_path,
                        echo=lines.append, loop={"fft2 32x32"}, loop_calls=20)
    (saved,) = [json.loads(f.read_text()) for f in tmp_path.glob("*.json")]
    by_case = {r["case"]: r for r in saved}
    assert "loop" not in by_case["fft 4x64"]
    lp = by_case["fft2 32x32"]["loop"]
    assert LOOP_FIELDS <= set(lp)
    assert lp["calls"] >= 20 and lp["repeats"] >= 1 and lp["warmup"] >= 20
    assert lp["us_per_call"] > 0
    assert lp["gpu_us"] == pytest.approx(by_case["fft2 32x32"]["gpu_ms"] * 1e3)
    assert lp["vs_gpu"] == pytest.approx(lp["us_per_call"] / lp["gpu_us"])
    if _torch_cuda():
        assert lp["vs_torch"] == pytest.approx(lp["us_per_call"] / lp["torch_us_per_call"])
    else:
        assert lp["torch_us_per_call"] is None and lp["vs_torch"] is None
    assert records[0]["loop"] == lp
    # the table printed after the run: one row per looped record, its numbers the record's
    row = [ln for ln in "\n".join(lines).splitlines() if ln.startswith("| fft2 32x32 |")]
    assert len(row) == 1 and f"| {lp['calls']} | {lp['us_per_call']:.1f} |" in row[0]
    assert bench.plot.__module__ == "pyfftgl.bench.plot"  # the plot code reads the same file
    bench.plot(saved, tmp_path / "plot.png")  # tools/setup.sh installs matplotlib
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_loop_mode(capsys):
    # the flags reach the loop (both backends' loops: test_loop_section_in_the_results_file).
    # A loop grows past K calls until it lasts 50 ms, so K is large enough that it stays K at
    # any speed a Python call can reach (5 us a call).
    from pyfftgl.__main__ import main
    assert main(["bench", "--loop", "--only", "--lengths", "64", "--elements", "1024",
                 "--backends", "vulkan", "--no-cpu", "--no-write", "--repeat", "1",
                 "--loop-calls", "10000"]) == 0
    out = capsys.readouterr().out
    assert "fft 16x64 " in out and "us/call" in out and "| fft 16x64 | vulkan | 10000 | " in out


def _args(**kw):
    base = dict(elements=None, quick=False, loop=False, only=None, lengths=[])
    return argparse.Namespace(**{**base, **kw})


def test_which_cases_loop():
    # a full run loops the cases among the sweep; --loop runs and loops only those
    want = {"fft2 1024x1024", "fft2 2048x2048", "fft2 4096x4096", "rfft2 1024x1024",
            "rfft2 2048x2048", "rfft2 4096x4096", "fft 3x1024x1024", "fft 16384x4096"}
    cases, loop = bench.select_cases(_args())
    assert loop == want and want < {c.name for c in cases}
    cases, loop = bench.select_cases(_args(loop=True))
    assert {c.name for c in cases} == loop == want
    stack = next(c for c in cases if c.name == "fft 3x1024x1024")
    assert stack.axes == (2,) and stack.n == 1024 and stack.batch == 3 * 1024
    cases, loop = bench.select_cases(_args(loop=True, only=["real"], lengths=[64], elements=4096))
    assert [c.name for c in cases] == ["rfft2 1024x1024", "rfft2 2048x2048", "rfft2 4096x4096",
                                       "fft 64x64"]
    assert loop == {c.name for c in cases}
    assert bench.select_cases(_args(only=["2d"]))[1] == set()  # a partial run does not loop
    quick = bench.select_cases(_args(quick=True))[1]
    assert quick == {"fft2 256x256", "rfft2 256x256", "fft 3x256x256", "fft 256x4096"}


def test_double_cases():
    # --double: every case, looped ones included, in float64/complex128 and named apart
    cases, loop = bench.select_cases(_args(quick=True, double=True))
    assert cases and all(c.double and c.name.endswith(" f64") for c in cases)
    assert loop == {"fft2 256x256 f64", "rfft2 256x256 f64", "fft 3x256x256 f64",
                    "fft 256x4096 f64"}
    kinds = {bench.case_input(c).dtype for c in cases if c.kind in ("fft2", "rfft2")}
    assert kinds == {np.dtype(np.complex128), np.dtype(np.float64)}


def test_library_path_imports_no_diagnostics():
    # `import pyfftgl` and `python -m pyfftgl info` leave the benchmark, the Vulkan probes and
    # the reference libraries unimported
    code = ("import sys, pyfftgl\n"
            "before = set(sys.modules)\n"
            "from pyfftgl.__main__ import main\n"
            "assert main(['info']) == 0\n"
            "bad = ('pyfftgl.bench', 'torch', 'cupy', 'matplotlib')\n"
            "print(sorted(m for m in sys.modules if m.startswith(bad)))\n"
            "print(sorted(m for m in before if m.startswith(bad)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2:] == ["[]", "[]"]


def test_dct_and_convolution_cases(tmp_path, capsys):
    from pyfftgl.bench import dct_conv
    names = [c["name"] for c in dct_conv.cases(quick=False)]
    assert names == ["dctn type 2 1024^2", "dctn type 2 4096^2", "idctn type 2 1024^2",
                     "idctn type 2 4096^2", "fftconvolve 2048^2 * 31^2 same",
                     "fftconvolve 2048^2 * 257^2 same"]
    tiny = [dict(name="idctn type 2 16^2", fn="idctn", n=16),
            dict(name="fftconvolve 16^2 * 3^2 same", fn="fftconvolve", n=16, k=3)]
    records = dct_conv.run(backends=("vulkan",), calls=5, out_dir=tmp_path, only=tiny)
    assert [r["case"] for r in records] == [c["name"] for c in tiny]
    for r in records:  # timed, and the result checked against scipy
        assert r["gpu_ms"] > 0 and r["loop_us"] > 0 and r["rel_l2_vs_scipy"] < 1e-6
    assert set(records[0]["parts_ms"]) == {"pre", "fft", "post"}
    assert "GPU" in capsys.readouterr().out and list(tmp_path.glob("realtransforms-*.json"))
