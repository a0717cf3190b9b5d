"""pyfftgl.dask over arrays chunked along their transformed axes: slab and pencil stages with an
all-to-all between them, on a 2-process distributed.LocalCluster (one device per worker)."""
import os
import signal
import time

import numpy as np
import pytest

import dask.array as da
from distributed import Client, LocalCluster

import pyfftgl.dask as pdf
from conftest import assert_accurate, random_complex
from pyfftgl import dask_pencil

SHAPE, CHUNKS = (12, 10, 9), (5, 4, 9)  # odd sizes, uneven chunks: a pencil over axes 0 and 1


def _layer_names(y) -> str:
    return " ".join(str(k) for k in y.__dask_graph__().layers)


def test_threaded_scheduler_rechunks_with_tasks():
    # First in the module: no distributed Client exists yet, so the shuffle is dask's own.
    assert dask_pencil.rechunk_method() == "tasks"
    host = random_complex((12, 10), seed=1)
    y = pdf.fft2(da.from_array(host, chunks=(5, 10)), backend="vulkan")  # a slab on axis 0
    assert "p2p" not in _layer_names(y)
    got = y.compute(scheduler="threads")
    assert y.chunks == ((5, 5, 2), (10,))  # the input's layout, the default
    assert_accurate(got, np.fft.fft2(host.astype(np.complex128)), 120)


@pytest.fixture(scope="module")
def client():
    # processes=True: a worker is a process with its own device, as on a real cluster.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env={"PYFFTGL_VULKAN_DEVICE": "0"}) as cluster, Client(cluster) as c:
        yield c


def _reference(name, host, **kw):
    ref = host.astype(np.complex128)
    if name.startswith("r"):
        ref = ref.real
    return getattr(np.fft, name)(ref, **kw)


def _check(client, cases):
    """cases: (name, host array, chunks, kwargs); one compute for all of them."""
    ys = [getattr(pdf, name)(da.from_array(h, chunks=c), backend="vulkan", **kw)
          for name, h, c, kw in cases]
    assert all("rechunk-p2p" in _layer_names(y) for y in ys)
    for y, got, (name, h, _, kw) in zip(ys, client.compute(ys, sync=True), cases):
        numpy_kw = ("s", "axes", "norm", "n", "axis")
        ref = _reference(name, h, **{k: v for k, v in kw.items() if k in numpy_kw})
        assert got.dtype == y.dtype and got.shape == ref.shape == y.shape, (name, kw)
        double = h.dtype in (np.complex128, np.float64)
        assert got.dtype == (np.float64 if double else np.float32) or np.iscomplexobj(got)
        assert_accurate(got, ref, ref.size, 1e-5 if double else 1.0)


def test_pencil_and_slab_match_numpy(client):
    host = random_complex(SHAPE, seed=2)
    _check(client, [
        ("fftn", host, CHUNKS, {}),  # a pencil: two all-to-alls
        ("ifftn", host, (5, 10, 9), {"norm": "ortho"}),  # a slab: one
        ("rfftn", host.real, (12, 4, 9), {"s": (12, 11, 8), "axes": (0, 1, 2)}),
        ("irfftn", host.astype(np.complex128), CHUNKS, {"axes": (0, 2), "s": (13, 9)}),
        ("fft", host, CHUNKS, {"axis": 0}),
    ])


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("decomposition", ["slab", "pencil"])
def test_every_transform_and_layout(client, dtype, decomposition):
    host = random_complex(SHAPE, seed=3).astype(dtype)
    cases = []
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        h = host.real.copy() if name == "rfftn" else host
        cases.append((name, h, (4, 3, 2), {"decomposition": decomposition}))
        cases.append((name, h, (3, 4, 4), {"decomposition": decomposition, "norm": "forward",
                                           "s": (11, 10, 6), "axes": (0, 1, 2)}))
    if decomposition != "pencil":  # two transformed axes cannot be a pencil
        for name in ("fft2", "ifft2", "rfft2", "irfft2"):
            h = host.real.copy() if name == "rfft2" else host
            cases.append((name, h[0], (3, 4), {"decomposition": decomposition}))
            cases.append((name, h, (2, 5, 4), {"axes": (0, 2), "s": (7, 8),
                                                  "decomposition": decomposition}))
    _check(client, cases)


def test_transposed_layout_round_trip(client):
    # A spectral solver's pair: the forward leaves the transposed layout, the inverse starts there
    # and ends in the input's layout, with one all-to-all each way for a slab.
    host = random_complex((16, 12, 10), seed=4).real.copy()
    x = da.from_array(host, chunks=(4, 12, 10))
    spec = pdf.rfftn(x, backend="vulkan", out_chunks="transposed")
    assert spec.chunks == ((16,), (3, 3, 3, 3), (6,))
    back = pdf.irfftn(spec, s=host.shape, backend="vulkan", out_chunks="transposed")
    assert back.chunks == x.chunks
    assert pdf.rfftn(x, backend="vulkan").chunks == ((4, 4, 4, 4), (12,), (6,))  # the default
    got_spec, got = client.compute([spec, back], sync=True)
    assert_accurate(got_spec, np.fft.rfftn(host.astype(np.float64)), host.size)
    assert_accurate(got, host.astype(np.float64), host.size)


def test_fftconvolve_matches_scipy(client):
    import scipy.signal
    rng = np.random.default_rng(6)
    image, kernel = rng.standard_normal((20, 17)), rng.standard_normal((5, 4))
    cube = random_complex((9, 8, 6), seed=7).astype(np.complex128)
    cases = [(image.astype(np.float32), (7, 17), kernel.astype(np.float32), {"mode": "same"}),
             (image, (20, 6), kernel, {"mode": "valid"}),
             (cube, (4, 3, 6), cube[:3, :2, :1], {"mode": "full", "axes": (0, 1)})]
    ys = [pdf.fftconvolve(da.from_array(a, chunks=c), da.from_array(k, chunks=2),
                          backend="vulkan", **kw) for a, c, k, kw in cases]
    for got, (a, _, k, kw) in zip(client.compute(ys, sync=True), cases):
        ref = scipy.signal.fftconvolve(a.astype(np.complex128 if a.dtype.kind == "c"
                                                else np.float64), k, **kw)
        assert got.shape == ref.shape and got.dtype == np.result_type(a.dtype, k.dtype)
        assert_accurate(got, ref, a.size, 1e-5 if a.dtype.itemsize == 16 else 4.0)
    with pytest.raises(ValueError, match="acceptable mode flags"):
        pdf.fftconvolve(da.from_array(image), da.from_array(kernel), mode="middle")


def test_bad_chunking_fails_when_built():
    x = da.from_array(random_complex(SHAPE), chunks=CHUNKS)
    with pytest.raises(ValueError, match="more than max_block_bytes=1000"):
        pdf.fftn(x, max_block_bytes=1000)
    with pytest.raises(ValueError, match="axis 0 .* cannot be made whole"):
        pdf.fft(da.from_array(random_complex(30), chunks=10))  # 1-D: nowhere to move the split
    with pytest.raises(ValueError, match="needs 3 transformed axes"):
        pdf.fft2(x, decomposition="pencil")
    with pytest.raises(ValueError, match="decomposition must be one of"):
        pdf.fftn(x, decomposition="cubes")
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        pdf.fftn(x, s=(4, 4), axes=(0, 1, 2))
    with pytest.raises(ValueError, match="out_chunks must be"):
        pdf.fftn(x, out_chunks="sideways")
    with pytest.raises(np.exceptions.AxisError):
        pdf.fftn(x, axes=(0, 3))
    with pytest.raises(TypeError, match="single or double precision"):
        pdf.fftn(x.astype(np.clongdouble))


def _slow_copy(block):
    time.sleep(0.4)
    return block.copy()


def test_lost_worker_is_recomputed(client):
    # Last in the module: the nanny restarts the killed worker, which the suite then waits for.
    host = random_complex((16, 12, 10), seed=5)
    x = da.from_array(host, chunks=(2, 6, 10)).map_blocks(_slow_copy, dtype=host.dtype)
    future = client.compute(pdf.fftn(x, backend="vulkan"))
    pids = list(client.run(os.getpid).values())
    time.sleep(1.5)  # the first blocks done, the shuffle under way
    assert not future.done()
    os.kill(pids[0], signal.SIGKILL)
    got = future.result(timeout=120)
    assert_accurate(got, np.fft.fftn(host.astype(np.complex128)), host.size)
    client.wait_for_workers(2, timeout=60)
