"""Every kind of length on both backends: all n up to 128 and a sample to 1024 (every n to 1024
in the slow tier), powers of the radices up to what the software drivers hold, four-step
pass-count boundaries, and Bluestein primes."""
import functools

import numpy as np
import pytest

import pyfftgl
from pyfftgl import planner
from pyfftgl.backends import get_device
from pyfftgl.planner import build_table
from conftest import BACKENDS, assert_accurate, random_complex, share


def check(n, batch, backend, inverse=False):
    x = random_complex((batch, n), seed=n % 1000 + batch)
    plan = pyfftgl.FFTPlan(n, batch, inverse, backend=backend)
    ref = (np.fft.ifft if inverse else np.fft.fft)(x.astype(np.complex128))
    factor = 2.0 if plan.spec.algorithm == "bluestein" else 1.0
    assert_accurate(plan.execute(x), ref, n, factor)
    return plan


def programs(spec):
    """(kernel, preamble) of each pass of `spec`, with its tables placed as TransformPlan does."""
    offsets, at = {}, 0
    for key in spec.tables():
        offsets[key], at = at, at + build_table(key).size
    return [(p.kernel, p.defines(offsets)) for p in spec.passes]


def lengths_up_to_1024(limits, sample: int | None = None):
    """Every length to 1024 that plans without Bluestein, and of the Bluestein lengths the
    smallest, the middle and the largest of each convolution length: Bluestein lengths of one
    convolution length share their programs (TransformSpec.tables), so these run every program
    the whole range compiles, at both ends of the lengths it zero-pads. With `sample`: the
    lengths to 128 (every radix alone and after each smaller one), and above it `sample` of the
    others (seeded) plus, for each odd radix, the longest length it makes with powers of two
    (the most stages after it)."""
    out, convolved = [], {}
    for n in range(1, 1025):
        spec = planner.plan_fft(n, 2, False, "backward", limits)
        if spec.algorithm == "bluestein":
            convolved.setdefault(spec.conv_n, []).append(n)
        else:
            out.append(n)
    for ns in convolved.values():
        out += sorted({ns[0], ns[len(ns) // 2], ns[-1]})
    if sample is not None:
        above = [n for n in out if n > 128]
        longest = {p: max(n for n in above if n // (n & -n) == p)
                   for p in (3, 5, 7, 9, 11, 13, 17, 19, 23, 25, 27, 29, 31)}
        picked = np.random.default_rng(1024).choice(above, sample, replace=False).tolist()
        out = [n for n in out if n <= 128] + picked + list(longest.values())
    return sorted(set(out))


def agreed(build):
    """build(limits) for each driver's limits, asserted to be one list: conftest.share gives
    each driver every other item of it, so lists that differed would leave lengths on neither."""
    lists = {b: build(get_device(b).info.limits) for b in BACKENDS}
    first = lists[BACKENDS[0]]
    for b, items in lists.items():
        assert items == first, f"{b}'s list differs from {BACKENDS[0]}'s: " \
            f"{sorted(set(items) ^ set(first))[:10]}"
    return first


@functools.lru_cache(maxsize=None)
def sweep_lengths(sample):
    return agreed(lambda limits: lengths_up_to_1024(limits, sample))


SWEEP_CHUNKS = 4  # test items per driver, so the two pytest workers share a sweep


def _sweep(backend, chunk, sample):
    limits = get_device(backend).info.limits
    # the premise of the Bluestein sample: 113 and 127 (convolution length 256) share programs
    assert programs(planner.plan_fft(113, 2, False, "backward", limits)) == programs(
        planner.plan_fft(127, 2, False, "backward", limits))
    # each length on one of the two drivers (conftest.share), every other one on each
    for n in share(sweep_lengths(sample), backend)[chunk::SWEEP_CHUNKS]:
        check(n, 2, backend)


@pytest.mark.parametrize("chunk", range(SWEEP_CHUNKS))
def test_lengths_to_128_and_a_sample_to_1024(backend, chunk):
    _sweep(backend, chunk, sample=8)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(SWEEP_CHUNKS))
def test_every_length_up_to_1024(backend, chunk):
    _sweep(backend, chunk, sample=None)


@pytest.mark.parametrize("seed", [0])
def test_inverse_of_a_sample_of_lengths(backend, seed):
    for n in share(np.random.default_rng(seed).choice(np.arange(1, 1025), 8, replace=False),
                   backend):
        check(int(n), 3, backend, inverse=True)


def radix_powers(limit_elements):
    out = []
    for p in (2, 3, 5, 7):
        k = p
        while k <= limit_elements:
            out.append(k)
            k *= p
    return out


def powers_to_the_buffer_limit(limits):
    """Powers of 2 to the limit (2^24 at most), of 3, 5, 7 to 2^23 (each to its three-pass
    plans)."""
    biggest = limits.max_buffer_bytes // 8
    sizes = [n for n in radix_powers(min(biggest, 2**24)) if n & (n - 1) == 0 or n <= 2**23]
    assert 2**24 in sizes or biggest < 2**24
    return sizes


def test_powers_of_2_3_5_7_up_to_the_buffer_limit(backend):
    sizes = agreed(powers_to_the_buffer_limit)
    # each power on one driver (conftest.share)
    for n in share(sizes, backend):
        batch = 1 if n > 2**16 else 3
        plan = check(n, batch, backend)
        assert len(plan.passes) <= 3


NAMED = [2011, 5400, 7776, 8192, 4099, 65537, 100003, 4099 * 32, 65537 * 4, 8209 * 8]


@pytest.mark.parametrize("n", NAMED)
def test_named_lengths(backend, n):
    # one line and a batch of three, each length taking one on each driver (conftest.share)
    check(n, 1 if n in share(NAMED, backend) else 3, backend)


def first_above(n, passes, limits):
    """The smallest length > n that plans without Bluestein into `passes` passes."""
    k = n + 1
    while True:
        spec = planner.plan_fft(k, 1, False, "backward", limits)
        if spec.algorithm != "bluestein" and len(spec.passes) == passes:
            return k
        k += 1


def test_lengths_just_above_each_pass_count_boundary(backend):
    limits = get_device(backend).info.limits
    one = limits.max_shared_bytes // 8
    assert len(check(one, 2, backend).passes) == 1
    check(one + 1, 2, backend)  # the first length past the one-pass limit (Bluestein for 4097)
    two = first_above(one, 2, limits)
    assert len(check(two, 2, backend).passes) == 2
    fmax = limits.max_shared_bytes // (8 * planner.TILE_LINES)
    three = first_above(fmax * fmax, 3, limits)
    assert len(check(three, 1, backend).passes) == 3


def test_real_transforms_of_even_lengths(backend):
    """rfft of every even length to 128 (the fused unpack of n/2 = 1..64 points: every radix
    order, odd and even last-stage spans) and of longer ones (several butterflies per invocation,
    four-step and Bluestein halves with a separate unpack), and irfft back: of each length the
    forward on one driver and the inverse on the other (conftest.share), so both drivers run
    every length."""
    rng = np.random.default_rng(5)
    lengths = list(range(2, 129, 2)) + [1000, 2048, 2402, 8192, 12000]
    forward = set(share(lengths, backend))
    for n in lengths:
        x = rng.standard_normal((3, n)).astype(np.float32)
        ref = np.fft.rfft(x.astype(np.float64))
        factor = 2.0 if planner.radices_for(n // 2) is None else 1.0
        if n in forward:
            assert_accurate(pyfftgl.rfft(x, backend=backend), ref, n, factor)
        else:
            spectrum = ref.astype(np.complex64)
            want = np.fft.irfft(spectrum.astype(np.complex128), n=n)
            assert_accurate(pyfftgl.irfft(spectrum, n=n, backend=backend), want, n, factor)
