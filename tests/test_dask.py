"""pyfftgl.dask on a real 2-process distributed.LocalCluster: each worker opens its own device."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dask.array as da
from distributed import Client, LocalCluster, Nanny, Scheduler, SpecCluster

import pyfftgl.dask as pdf
from conftest import BACKENDS, assert_accurate, random_complex
from pyfftgl import BackendUnavailable


def _cluster(n_workers, env):
    # processes=True: a worker is a process with its own device, as on a real cluster.
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                        dashboard_address=":0", env=env)


@pytest.fixture(scope="module")
def client():
    with _cluster(2, {"PYFFTGL_VULKAN_DEVICE": "0"}) as cluster, Client(cluster) as c:
        yield c


def _opened_devices():
    from pyfftgl import backends
    return os.getpid(), backends.opened()


@pytest.mark.parametrize("backend", BACKENDS)
def test_batches_over_two_workers(client, backend):
    host = random_complex((8, 64, 48), seed=3)
    x = da.from_array(host, chunks=(1, 64, 48))  # eight blocks, the transformed axes whole
    real = x.real.astype(np.float32)
    y2, yr, yi = pdf.fft2(x, backend=backend), pdf.rfft(real, backend=backend), \
        pdf.ifft(x, axis=1, backend=backend)
    assert (y2.dtype, yr.dtype, yi.dtype) == (np.complex64,) * 3  # the graph's meta is single
    assert yr.chunks == ((1,) * 8, (64,), (25,))
    got2, gotr, goti = client.compute([y2, yr, yi], sync=True)
    assert (got2.dtype, gotr.dtype, goti.dtype) == (np.complex64,) * 3
    ref = host.astype(np.complex128)
    assert_accurate(got2, np.fft.fft2(ref), 64 * 48)
    assert_accurate(gotr, np.fft.rfft(ref.real), 48)
    assert_accurate(goti, np.fft.ifft(ref, axis=1), 64)
    # Both workers transformed blocks, each on a device of its own process (not the client's).
    opened = client.run(_opened_devices)
    assert len(opened) == 2
    assert all(backend in names for _, names in opened.values()), opened
    pids = {pid for pid, _ in opened.values()}
    assert len(pids) == 2 and os.getpid() not in pids


def test_threaded_scheduler_queues_blocks_on_one_device():
    # dask's default scheduler runs blocks on threads of this process, which share one device.
    host = random_complex((16, 32, 24), seed=5)
    x = da.from_array(host, chunks=(1, 32, 24))
    got = pdf.fft2(x, backend="vulkan").compute(scheduler="threads", num_workers=8)
    assert_accurate(got, np.fft.fft2(host.astype(np.complex128)), 32 * 24)


def test_worker_env_pins_the_vulkan_device(client):
    def pinned():
        from pyfftgl import get_device
        return os.environ["PYFFTGL_VULKAN_DEVICE"], get_device("vulkan").info.name

    from pyfftgl.backends import vkinfo
    listed = vkinfo.physical_devices()
    assert set(client.run(pinned).values()) == {("0", listed[0]["device_name"])}


def test_worker_env_naming_no_device_fails_on_the_worker():
    # The README's one-worker-per-GPU recipe, with a GPU that is not there.
    x = da.from_array(random_complex((2, 16)), chunks=(1, 16))
    env = {"PYFFTGL_VULKAN_DEVICE": "no such gpu"}
    workers = {"gpu0": {"cls": Nanny, "options": {"nthreads": 1, "env": env}}}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0"}}
    with SpecCluster(workers, scheduler) as cluster, Client(cluster) as c:
        with pytest.raises(BackendUnavailable, match="PYFFTGL_VULKAN_DEVICE='no such gpu'"):
            c.compute(pdf.fft(x, backend="vulkan"), sync=True)


def test_chunked_axis_and_long_double_fail_when_built():
    x = da.from_array(random_complex((8, 64)), chunks=(4, 32))
    # A chunked transformed axis is dask_pencil's (tests/test_dask_distributed.py), not an error.
    assert pdf.fft(x).chunks == x.chunks and pdf.fft2(x.rechunk({1: 64})).dtype == np.complex64
    assert pdf.fft(x.rechunk({1: 64}).astype(np.complex128)).dtype == np.complex128
    with pytest.raises(TypeError, match="single or double precision"):
        pdf.fft(x.rechunk({1: 64}).astype(np.clongdouble))
    with pytest.raises(TypeError, match="not supported for the input types"):  # numpy's words
        pdf.rfft(x.rechunk({1: 64}))
    with pytest.raises(ValueError, match="backend must be one of"):
        pdf.fft(x.rechunk({1: 64}), backend=object())


def test_building_graphs_opens_no_device_and_plain_import_skips_dask():
    code = (
        "import sys, numpy as np, pyfftgl\n"
        "assert 'dask' not in sys.modules\n"
        "import dask.array as da, pyfftgl.dask as pdf\n"
        "c = da.ones((4, 16, 12), dtype=np.complex64, chunks=(1, 16, 12))\n"
        "r = da.ones((4, 16, 12), dtype=np.float32, chunks=(1, 16, 12))\n"
        "h = da.ones((4, 16, 12), dtype=np.float16, chunks=(1, 16, 12))\n"
        "real_in = {'rfft', 'ihfft', 'rfft2', 'rfftn'}\n"
        "for name in pyfftgl.kinds.KINDS:\n"
        "    f = getattr(pdf, name)\n"
        "    for x in ((r, h) if name in real_in else (c, r, h)):\n"
        "        kw = {'axes': (1, 2)} if name.endswith('n') else {}\n"
        "        y = f(x, **kw)\n"
        "        want = getattr(np.fft, name)(np.ones(x.shape, x.dtype), **kw).dtype\n"
        "        assert y.dtype == want and y._meta.dtype == want, (name, x.dtype, y.dtype)\n"
        "assert not {'pyfftgl._kp', 'moderngl'} & set(sys.modules), 'a device was opened'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
