"""The benchmark tool on the real drivers: its copy kernel copies, and its records carry the
fields the results files promise."""
import json

import numpy as np
import pytest

from pyfftgl import bench, planner, shaders
from pyfftgl.backends import get_device
from pyfftgl.backends.base import Dispatch

FIELDS = {"case", "shape", "batch", "kind", "backend", "gpu_ms", "host_ms", "ref", "copy_gbps",
          "device", "driver", "date", "commit", "gflops", "gbps", "pct_copy"}


def test_copy_kernel_copies(backend):
    dev = get_device(backend)
    data = np.arange(4096, dtype=np.float32)
    src, dst = dev.buffer(data.nbytes, data), dev.buffer(data.nbytes)
    prog = shaders.get_program(dev, "copy.comp", {}, planner.PUSH_NAMES)
    dev.record([Dispatch(prog, (4, 1, 1), np.array([1024, 0, 0, 0, 0, 0], np.uint32),
                         (src, dst))]).run()
    assert np.array_equal(dev.read(dst, 4096), data)
    assert bench.copy_gbps(dev, nbytes=1 << 20, reps=2) > 0


def test_records_and_results_file(backend, tmp_path):
    cases = [bench.Case("fft", (64, 256), (1,), "1d"), bench.Case("rfft2", (32, 32), (0, 1), "real")]
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
    with pytest.raises(SystemExit):
        main(["bench", "--lengths", "0", "--no-write"])


def test_best_of_waits_for_the_times_to_settle():
    # slow while the clocks come up, then steady: the best steady time, after `reps` non-improving
    times = iter([9.0, 5.0, 3.0, 3.01, 2.99, 3.0, 3.0, 1.0])
    assert bench.best_of(lambda: next(times), reps=3) == 2.99
    calls = []
    assert bench.best_of(lambda: calls.append(1) or 100.0 - len(calls), reps=3, limit=10) == 90.0
    assert len(calls) == 10
