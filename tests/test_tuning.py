"""Tunable kernel shapes: every candidate the tuner may pick is a correct transform, the wisdom
file round-trips, the planner follows it, and the submission-floor probe measures something."""
import dataclasses
import json

import numpy as np
import pytest

from pyfftgl import bench, planner, wisdom
from pyfftgl.backends import get_device
from pyfftgl.planner import TunedShape
from pyfftgl.plans import TransformPlan
from conftest import assert_accurate, random_complex, share
from test_planner import GPU


@pytest.mark.parametrize("n", [36, 64, 225, 147])  # 225, 147: radices 9, 25, 49
def test_every_candidate_shape_transforms_correctly(backend, n):
    # every candidate on both drivers: the forward on one and the inverse on the other
    dev = get_device(backend)
    base = dataclasses.replace(dev.info.limits, tuned=())
    x = random_complex((3, n), seed=n)
    cands = planner.shape_candidates(n, base)
    assert cands and len(cands) == len(set(cands))
    followed = 0
    forward = set(share(range(len(cands)), backend))
    for i, cand in enumerate(cands):
        lim = dataclasses.replace(base, tuned=(cand,))
        for inverse in (i not in forward,):
            spec = planner.plan_fft(n, 3, inverse, "backward", lim)
            # every candidate runs as asked on both drivers, but for padding that does not fit
            (p,) = spec.passes
            assert (p.radices, p.threads) == (cand.radices, cand.threads)
            assert p.sh_pad == cand.pad or (cand.pad and not p.sh_pad)
            followed += p.sh_pad == cand.pad
            y = TransformPlan(spec, dev, lim, "backward").execute(x)
            ref = (np.fft.ifft if inverse else np.fft.fft)(x.astype(np.complex128))
            assert_accurate(y, ref, n)
    assert followed >= sum(not c.pad for c in cands)  # at least each unpadded one


def test_candidates_cover_radix_16_and_padding():
    cands = planner.shape_candidates(4096, GPU)
    assert TunedShape(4096, (16, 16, 16), 256, 0, True) in cands
    assert TunedShape(4096, (16, 16, 16), 256, 0, False) in cands
    assert all(int(np.prod(c.radices)) == 4096 and c.n == 4096 and not c.tiled for c in cands)
    assert planner.shape_candidates(37 * 4, GPU) == []  # 37 is Bluestein's


def test_candidates_merge_equal_odd_primes_into_square_radices():
    assert planner.candidates.odd_groupings((3, 3, 3, 5)) == [(3, 3, 3, 5), (9, 3, 5)]
    assert planner.candidates.odd_groupings((11, 11)) == [(11, 11)]  # no radix 121
    c2187 = planner.shape_candidates(2187, GPU)
    assert TunedShape(2187, (9, 9, 9, 3), 243) in c2187 and TunedShape(2187, (3,) * 7, 729) in c2187
    assert TunedShape(2187, (9, 9, 9, 3), 122) in c2187  # two radix-9 butterflies per invocation
    assert TunedShape(2401, (49, 49), 49) in planner.shape_candidates(2401, GPU)
    assert TunedShape(3125, (25, 25, 5), 125) in planner.shape_candidates(3125, GPU)
    assert all(not c.pad for c in c2187)  # odd lengths: no padding (no power-of-two strides)


def test_planner_follows_a_tuned_entry_and_falls_back_when_it_does_not_fit():
    lim = dataclasses.replace(GPU, tuned=(TunedShape(1024, (4, 16, 16), 64, 0, True),))
    p = planner.plan_fft(1024, 100, False, "backward", lim).passes[0]
    assert (p.radices, p.threads, p.sh_pad) == ((4, 16, 16), 64, True)
    assert p.sh_line >= 1024 + 1023 // 16 and p.shared_bytes <= lim.max_shared_bytes
    # padding 4096 values does not fit 32 KiB: the same shape, unpadded
    small = dataclasses.replace(GPU, max_shared_bytes=32768,
                                tuned=(TunedShape(4096, (16, 16, 16), 256, 0, True),))
    q = planner.plan_fft(4096, 10, False, "backward", small).passes[0]
    assert (q.radices, q.threads, q.sh_pad) == ((16, 16, 16), 256, False)
    assert planner.tighter(lim, GPU).tuned == lim.tuned


def test_tiled_passes_follow_their_own_entry():
    contiguous = TunedShape(1024, (2, 8, 8, 8), 128)
    tiled = TunedShape(1024, (16, 16, 4), 64, tiled=True)
    lim = dataclasses.replace(GPU, tuned=(contiguous, tiled))
    assert planner.plan_fft(1024, 100, False, "backward", lim).passes[0].radices == (2, 8, 8, 8)
    # a 2^20-point strided axis: two strided passes of 1024
    four = planner.plan_c2c((1 << 20, 4), (0,), False, "backward", lim).passes
    assert [(p.n, p.radices, p.threads) for p in four] == [(1024, (16, 16, 4), 64)] * 2
    # without a tiled entry the strided passes take the contiguous one
    four = planner.plan_c2c((1 << 20, 4), (0,), False, "backward", dataclasses.replace(
        GPU, tuned=(contiguous,))).passes
    assert [(p.n, p.radices, p.threads) for p in four] == [(1024, (2, 8, 8, 8), 128)] * 2



def test_a_real_entry_shapes_only_the_pass_carrying_the_unpack(capsys):
    """rfft2's rows pass (half length, the unpack fused over paired rows) takes the entry tuned
    on such passes; plain lines of that length keep theirs."""
    from pyfftgl.kinds import steps_for
    plain = TunedShape(1024, (16, 8, 8), 64, 1)
    real = TunedShape(1024, (2, 8, 8, 8), 128, real=True)
    job = steps_for("rfft2", (2048, 2048), np.float32, axes=(-2, -1)).jobs[0]

    def unpack_shapes(tuned):
        lim = dataclasses.replace(GPU, tuned=tuned)
        spec = planner.plan_steps(job.shape, list(job.steps), lim)
        c2c = planner.plan_fft(1024, 100, False, "backward", lim).passes[0]
        return ([(p.radices, p.threads, p.lines) for p in spec.passes if p.real_rows],
                (c2c.radices, c2c.threads))
    assert unpack_shapes((plain,)) == ([((16, 8, 8), 64, 2)], ((16, 8, 8), 64))
    assert unpack_shapes((plain, real)) == ([((2, 8, 8, 8), 128, 2)], ((16, 8, 8), 64))
    assert unpack_shapes((real,))[1] != ((2, 8, 8, 8), 128)  # never a plain pass's shape
    from pyfftgl.__main__ import main
    with pytest.raises(SystemExit) as stop:  # the tuner would time plain lines under that key
        main(["bench", "--tune", "real:1024", "--no-write"])
    assert stop.value.code == 2 and "the tuner times N or tiled:N" in capsys.readouterr().err

def test_wisdom_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))
    assert wisdom.device_slug("NVIDIA H200/PCIe/SSE2") == wisdom.device_slug("NVIDIA H200")
    name = "Test GPU 9000"
    entry = {"radices": [16, 16, 16], "threads": 256, "lines": 0, "pad": True, "gpu_ms": 0.1}
    path = wisdom.save(name, "vulkan", {4096: entry})
    assert path.parent == tmp_path / "wisdom"
    assert wisdom.load(name, "vulkan") == (TunedShape(4096, (16, 16, 16), 256, 0, True),)
    assert wisdom.load(name, "gl") == ()
    data = json.loads(path.read_text())
    data["vulkan"]["64"] = {"radices": "bad"}  # malformed entries are ignored, not fatal
    path.write_text(json.dumps(data))
    assert wisdom.load(name, "vulkan") == (TunedShape(4096, (16, 16, 16), 256, 0, True),)
    wisdom.save(name, "vulkan", {planner.tiled_key(256): dict(entry, radices=[16, 16])})
    assert json.loads(path.read_text())["vulkan"]["tiled:256"]["radices"] == [16, 16]
    assert wisdom.load(name, "vulkan") == (TunedShape(256, (16, 16), 256, 0, True, tiled=True),
                                           TunedShape(4096, (16, 16, 16), 256, 0, True))
    assert [wisdom.file_key(e.key) for e in wisdom.load(name, "vulkan")] == ["tiled:256", "4096"]
    monkeypatch.setenv("PYFFTGL_NO_WISDOM", "1")
    assert wisdom.load(name, "vulkan") == ()


def test_wisdom_falls_back_to_the_api_underneath(tmp_path, monkeypatch):
    # WebGPU over Vulkan takes Vulkan's shapes until its own are measured; its own win after
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))
    name = "Test GPU 9001"
    entry = {"radices": [16, 16, 16], "threads": 256, "lines": 0, "pad": True}
    wisdom.save(name, "vulkan", {4096: entry})
    vulkan = (TunedShape(4096, (16, 16, 16), 256, 0, True),)
    assert wisdom.load(name, "webgpu") == ()
    assert wisdom.load(name, "webgpu", "vulkan") == vulkan
    assert wisdom.load(name, "webgpu", "gl") == ()
    wisdom.save(name, "webgpu", {4096: dict(entry, radices=[8, 8, 8, 8], threads=512)})
    assert wisdom.load(name, "webgpu", "vulkan") == (TunedShape(4096, (8, 8, 8, 8), 512, 0, True),)
    # per key: the API's own entries over the fallback's, a real entry beside a plain one
    wisdom.save(name, "vulkan", {1024: dict(entry, radices=[16, 8, 8], threads=64)})
    wisdom.save(name, "webgpu", {planner.real_key(1024): dict(entry, radices=[2, 8, 8, 8],
                                                                  threads=128)})
    got = wisdom.load(name, "webgpu", "vulkan")
    assert got == (TunedShape(1024, (16, 8, 8), 64, 0, True),
                   TunedShape(1024, (2, 8, 8, 8), 128, 0, True, real=True),
                   TunedShape(4096, (8, 8, 8, 8), 512, 0, True))
    assert [wisdom.file_key(e.key) for e in got] == ["1024", "real:1024", "4096"]


def _fewer_candidates(monkeypatch, step=4):
    """The tuner times every `step`-th candidate: these tests are about where it times them and
    what it keeps (test_every_candidate_shape_transforms_correctly checks every shape)."""
    every = planner.shape_candidates
    monkeypatch.setattr(planner, "shape_candidates", lambda n, lim: every(n, lim)[::step])


def test_tune_picks_a_measured_shape(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))
    _fewer_candidates(monkeypatch)
    said = []
    found = bench.tune((32,), backends=(backend,), elements=1 << 12, reps=1,
                       echo=lambda *a: said.append(" ".join(map(str, a))))
    e = found[backend][32]
    base = dataclasses.replace(get_device(backend).info.limits, tuned=())
    cands = planner.shape_candidates(32, base)
    # the tuner times a candidate where the planner takes it as asked (padding that does not
    # fit is dropped, and so is the candidate)
    asked = [c for c in cands if [(p.radices, p.threads, p.sh_pad) for p in planner.plan_fft(
        32, (1 << 12) // 32, False, "backward", dataclasses.replace(base, tuned=(c,))).passes]
        == [(c.radices, c.threads, c.pad)]]
    assert int(np.prod(e["radices"])) == 32 and 0 < e["gpu_ms"] < 1e3
    # every such candidate checked and timed (none found wrong), the fastest kept, ranked first
    assert len(asked) >= len(cands) // 2 >= 3
    assert any(f"; {len(asked)} shapes;" in line for line in said), said
    assert not any("WRONG" in line for line in said)
    assert len(e["ranking"]) == min(5, len(asked))
    assert e["ranking"][0][0] == e["gpu_ms"] == min(r[0] for r in e["ranking"])
    assert [r[0] for r in e["ranking"]] == sorted(r[0] for r in e["ranking"])
    name = get_device(backend).info.name
    (got,) = wisdom.load(name, backend)
    assert (got.n, got.radices, got.threads, got.pad) == (32, tuple(e["radices"]), e["threads"],
                                                          e["pad"])


def test_tune_keeps_each_shapes_best_of_two_rounds(tmp_path, monkeypatch):
    # A GPU back at idle clocks runs the same work 2-3x slower for a while (H100: 0.3 s at 345
    # MHz), so one slow timing of the fastest shape must not lose it the tune: every shape is
    # timed twice, the second round in reverse order, and keeps its best.
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))
    _fewer_candidates(monkeypatch)
    calls = []

    def timed(plan, **kw):  # GPU ms: the first shape timed is the fastest, its first timing slow
        p = plan.spec.passes[0]
        calls.append((p.radices, p.threads, p.sh_pad))
        if calls[-1] == calls[0]:
            return 10.0 if len(calls) == 1 else 1.0
        return 2.0
    monkeypatch.setattr(bench.timing, "timed", timed)
    found = bench.tune((32,), backends=("vulkan",), elements=1 << 12, reps=1,
                       echo=lambda *a: None)
    e = found["vulkan"][32]
    half = len(calls) // 2
    assert half >= 2 and calls[half:] == calls[:half][::-1]
    assert (tuple(e["radices"]), e["threads"], e["pad"]) == calls[0] and e["gpu_ms"] == 1.0


def test_submission_floor_is_measured(backend):
    ms = bench.submission_floor_ms(get_device(backend))
    assert 1e-4 < ms < 50  # at least 0.1 us: a real submission, not an empty timer


def test_tune_times_strided_passes_apart(tmp_path, monkeypatch):
    # 128 * 128 does not fit one workgroup's shared memory (lavapipe 32 KB, NVIDIA 48 KB): it
    # runs as two strided length-128 passes
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))
    _fewer_candidates(monkeypatch, step=8)
    monkeypatch.setattr(bench.tuner, "TILED_GAIN", 10.0)  # keep the best even if it wins by < 5%
    key = planner.tiled_key(128)
    found = bench.tune((key,), backends=("vulkan",), elements=1 << 15, reps=1,
                       echo=lambda *a: None)
    e = found["vulkan"][key]
    assert int(np.prod(e["radices"])) == 128 and e["ranking"][0][0] == e["gpu_ms"]
    # the device's wisdom now (shipped entries too, on a GPU that has them) holds the new entry
    lim = dataclasses.replace(GPU, max_shared_bytes=32768,
                              tuned=wisdom.load(get_device("vulkan").info.name, "vulkan"))
    assert planner.tuned_shape(128, lim, tiled=True).radices == tuple(e["radices"])
    four = planner.plan_fft(128 * 128, 2, False, "backward", lim).passes
    assert [p.radices for p in four] == [tuple(e["radices"])] * 2
    own = planner.tuned_shape(128, lim)  # contiguous lines keep their own entry or the default
    assert planner.plan_fft(128, 2, False, "backward", lim).passes[0].radices == \
        (own.radices if own else planner.radices_for(128))


def test_tune_times_strided_passes_of_a_one_pass_square_on_2d_columns(tmp_path, monkeypatch):
    # 64 * 64 is one pass here, so tiled:64 is timed on the two column passes of a 4096 x 16
    # fft2 (each candidate checked against numpy first), and the planner follows the winner there
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bench.tuner, "TILED_GAIN", 10.0)
    _fewer_candidates(monkeypatch)
    key = planner.tiled_key(64)
    dev = get_device("vulkan")
    assert len(planner.plan_fft(4096, 1, False, "backward", dev.info.limits).passes) == 1
    found = bench.tune((key,), backends=("vulkan",), elements=1 << 15, reps=1,
                       echo=lambda *a: None)
    e = found["vulkan"][key]
    assert int(np.prod(e["radices"])) == 64 and len(e["ranking"]) >= 3
    lim = dataclasses.replace(dev.info.limits, tuned=wisdom.load(dev.info.name, "vulkan"))
    cols = planner.plan_c2c((4096, 16), (1, 0), False, "backward", lim).passes[1:]
    assert [p.radices for p in cols] == [tuple(e["radices"])] * 2


def test_every_shipped_wisdom_entry_is_read(monkeypatch, tmp_path):
    # A malformed entry is skipped silently at run time (never fatal), so check the shipped
    # files here: every entry of both APIs becomes a Limits.tuned record (no user file around).
    monkeypatch.setattr(wisdom, "user_path", lambda name: tmp_path / "none.json")
    files = sorted(wisdom.SHIPPED.glob("*.json"))
    assert len(files) >= 2
    for path in files:
        data = json.loads(path.read_text())
        name = path.stem  # a slug is its own device_slug()
        assert wisdom.device_slug(name) == name
        for api in ("vulkan", "gl"):
            assert data[api] and len(wisdom.load(name, api)) == len(data[api]), (path.name, api)
