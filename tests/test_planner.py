"""The planner alone: pure Python, no GPU. Invariants every plan keeps over a sweep of
transforms and devices, the rules as relations, and one snapshot of the chosen plans
(tests/regen_snapshot.py) instead of exact heuristic outputs."""
import dataclasses
import json
import math
import re

import pytest

from pyfftgl import planner, kernels
from pyfftgl.limits import Limits
from pyfftgl.planner import element_limits
from regen_snapshot import C2C, C2R, GPU, R2C, SNAPSHOT, SOFT, limits_sets, snapshot, sweep


def product(xs):
    return math.prod(xs) if xs else 1


@pytest.mark.parametrize("n", [2**k for k in range(0, 11)])
def test_power_of_two_radices_are_fours_with_one_eight_or_two(n):
    r = planner.radices_for(n)
    assert product(r) == n
    assert all(x == 4 for x in r[1:]) or n < 8
    assert r.count(8) + r.count(2) <= 1


def test_radices_follow_their_rule():
    # Odd radices first; the power of two in the fewest stages of at most 2^b values, the smaller
    # first, with b = 3 from 6 values per invocation (of TARGET_INVOCATIONS) and 4 from 16; pairs
    # of 3 as 9 from b = 3; 5, 7, 11, 13 stay prime.
    for n in range(1, 20000):
        r = planner.radices_for(n)
        if r is None:
            assert not set(planner.prime_factors(n)) <= {2, 3, 5, 7, 11, 13}, n
            continue
        assert product(r) == n and all(x in planner.RADICES for x in r), n
        odd, two = [x for x in r if x % 2], [x for x in r if x % 2 == 0]
        assert r == tuple(odd + two), n
        v = n / planner.TARGET_INVOCATIONS
        b = 4 if v >= 16 else 3 if v >= 6 else 2
        if b > 2:
            assert two == sorted(two) and max(two, default=1) <= 1 << b, n
            k = planner.prime_factors(n).get(2, 0)
            assert len(two) == -(-k // b), n  # the fewest stages
            assert odd.count(3) <= 1 and not {25, 49} & set(odd), n
        else:
            assert 9 not in odd and max(two, default=1) <= 8, n


PRIME_RADICES = sorted(r for r in planner.RADICES if len(planner.prime_factors(r)) == 1
                       and planner.prime_factors(r).get(r) == 1)


@pytest.mark.parametrize("n", [1000, 2 * 3 * 5 * 7 * 11 * 13, 17, 2 * 29 * 31, 37, 2 * 4099,
                               4096, 3**7, 97, 2 * 17 * 19 * 23])
def test_lengths_factor_into_radices_or_go_to_bluestein(n):
    # A length factors into the kernel's radices exactly when its primes are radices; its plan
    # then covers the line in stages within the device's limits; any other length is Bluestein,
    # whose convolution length factors.
    with pytest.raises(ValueError):
        planner.radices_for(0)
    r = planner.radices_for(n)
    assert (r is None) == (not set(planner.prime_factors(n)) <= set(PRIME_RADICES)), n
    for limits in (GPU, SOFT):
        spec = planner.plan_fft(n, 4, False, "backward", limits)
        if r is None:
            assert spec.algorithm == "bluestein" and all(
                m >= 2 * n - 1 and planner.radices_for(m) for m in spec.conv_lengths), n
            continue
        assert product(r) == n and all(x in planner.RADICES for x in r), n
        assert spec.algorithm != "bluestein" and math.prod(p.n for p in spec.passes) == n
        for p in spec.passes:  # one line in shared memory, or the factors of a four-step
            assert product(p.radices) == p.n and all(x in planner.RADICES for x in p.radices)
            assert p.shared_bytes <= limits.max_shared_bytes
            assert p.registers <= planner.register_cap(p.radices)
            assert p.threads * p.registers >= p.n  # a line's invocations hold all of it


@pytest.mark.parametrize("limits", [GPU, SOFT])
@pytest.mark.parametrize("n", [2**k for k in range(1, 13)])
@pytest.mark.parametrize("inverse", [False, True])
def test_one_dispatch_up_to_4096(limits, n, inverse):
    spec = planner.plan_fft(n, 1000, inverse, "backward", limits)
    assert len(spec.passes) == 1  # the whole transform is ONE pass
    p = spec.passes[0]
    assert p.shared_bytes <= limits.max_shared_bytes
    assert p.invocations <= limits.max_invocations
    assert p.registers <= planner.REGISTER_TARGET


def test_stockham_strides():
    for n in (1024, 4096, 3600):
        p = planner.stockham_pass(n, False, 1.0, GPU)
        assert p.strides == tuple(product(p.radices[:i]) for i in range(len(p.radices)))


def test_norm_scale():
    assert planner.norm_scale(8, "backward", False) == 1.0
    assert planner.norm_scale(8, "backward", True) == 1 / 8
    assert planner.norm_scale(8, "forward", False) == 1 / 8
    assert planner.norm_scale(8, "forward", True) == 1.0
    assert planner.norm_scale(16, "ortho", True) == 0.25


def test_chunks_respect_the_buffer_limit():
    spec = planner.plan_fft(1024, 100_000, False, "backward", SOFT)
    assert spec.units * 1024 * 8 <= SOFT.max_buffer_bytes
    assert spec.chunks * spec.units >= 100_000


@pytest.mark.parametrize("groups", [1, 7, 65535, 65536, 65535 * 65535 + 3])
def test_split_groups_covers_every_group_once(groups):
    limits = (65535, 65535, 65535)
    parts = planner.split_groups(groups, limits)
    covered = 0
    for base, gx, gy in parts:
        assert base == covered
        assert 1 <= gx <= limits[0] and 1 <= gy <= limits[1]
        covered += gx * gy
    # balanced rows: less than one group per row idles
    assert groups <= covered < groups + parts[-1][2]


def test_tighter_limits():
    small = Limits(1024, 64, (64, 64, 64), (3, 2, 1), 4096)
    t = planner.tighter(GPU, small)
    assert t.max_group_count == (3, 2, 1) and t.max_shared_bytes == 1024
    assert planner.tighter(GPU, None) is GPU


# --- multi-pass and Bluestein -------------------------------------------------------------------

def single_pass_max(limits):
    return limits.max_shared_bytes // 8


@pytest.mark.parametrize("limits", [GPU, SOFT])
def test_pass_counts_by_size(limits):
    assert len(planner.plan_fft(single_pass_max(limits), 1, False, "backward", limits).passes) == 1
    # one line in halves: up to 12288 points on 48 KB, 8192 on 32 KB
    halves_max = limits.max_shared_bytes // 4
    assert len(planner.plan_fft(halves_max, 1, False, "backward", limits).passes) == 1
    assert planner.plan_fft(2 * halves_max, 1, False, "backward", limits).algorithm == "four-step"
    assert len(planner.plan_fft(2**20, 1, False, "backward", limits).passes) == 2
    for n in (2**24, 2**27, 3**15, 5**10, 7**8):
        spec = planner.plan_fft(n, 1, False, "backward", GPU)
        assert spec.algorithm in ("stockham", "four-step") and len(spec.passes) <= 3


def test_multipass_factors_multiply_back():
    for n in (16384, 10800, 23328, 2**20, 2**24, 3**15):
        spec = planner.plan_fft(n, 1, False, "backward", SOFT)
        assert math.prod(p.n for p in spec.passes) == n
        # strided passes move whole tiles of lines through shared memory
        for p in spec.passes[:-1]:
            assert p.load_tiled and p.store_tiled and p.lines >= planner.TILE_LINES
        assert spec.passes[-1].store_tiled


def test_bluestein_only_where_needed():
    for n in range(1, 3000):
        spec = planner.plan_fft(n, 1, False, "backward", SOFT)
        smooth = set(planner.prime_factors(n)) <= {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31}
        assert (spec.algorithm == "bluestein") == (not smooth), n
        for p in spec.passes:
            assert p.registers <= planner.register_cap(p.radices)
            assert p.shared_bytes <= SOFT.max_shared_bytes and p.invocations <= 1024


@pytest.mark.parametrize("n", [37, 2011, 4099, 65537, 100003, 4099 * 64])
def test_bluestein_convolution_length(n):
    spec = planner.plan_fft(n, 1, False, "backward", SOFT)
    m = spec.conv_n
    assert spec.algorithm == "bluestein" and m >= 2 * n - 1
    assert set(planner.prime_factors(m)) <= {2, 3, 5, 7}
    assert m < 2 * (2 * n - 1)  # never worse than the next power of two
    assert len(spec.passes) <= 6  # a forward and an inverse transform of <= 3 passes each
    assert spec.passes[0].pre_mul == planner.ChirpKey(n, False)
    assert spec.passes[-1].post_mul == planner.ChirpKey(n, False)


def test_line_too_long_for_any_buffer_names_the_limit():
    with pytest.raises(ValueError, match="largest storage buffer"):
        planner.plan_fft(2**25, 1, False, "backward", SOFT)


def test_real_transforms_fuse_the_pack_into_the_half_length_pass():
    fwd = planner.plan_steps((8, 1024), [R2C(1, 1024)], SOFT)
    assert len(fwd.passes) == 1 and fwd.passes[0].real_unpack == 1024 and fwd.passes[0].n == 512
    assert fwd.out_shape == (8, 513)
    inv = planner.plan_steps((8, 513), [C2R(1, 1024)], SOFT)
    assert len(inv.passes) == 1 and inv.passes[0].real_pack == 1024 and inv.out_shape == (8, 512)
    # rfft2 of 1024^2: the fused row pass, then one column pass, nothing else
    two = planner.plan_steps((1024, 512), [R2C(1, 1024),
                                           C2C(0)], SOFT)
    assert len(two.passes) == 2 and two.out_shape == (1024, 513)
    # too long to fuse: a separate unpack pass after the multi-pass half-length transform
    big = planner.plan_steps((2, 20000), [R2C(1, 20000)], SOFT)
    assert isinstance(big.passes[-1], planner.RealPass)


def test_strided_axis_tiles_are_wide_where_they_fit():
    # 256 columns: 8 lines of 256 values fit in 48 KB; 1024 columns: 8 x 8 KB do not, so 4.
    for side, lines in ((256, planner.AXIS_TILE_LINES), (1024, planner.TILE_LINES)):
        spec = planner.plan_c2c((side, side), (0, 1), False, "backward", GPU)
        col = spec.passes[0]
        assert col.load_tiled and col.lines == lines
        assert col.shared_bytes <= GPU.max_shared_bytes


def test_line_fastest_where_both_ends_are_strided():
    # one-pass strided axes and the passes of a strided axis split in two (2D, 3D)
    for shape in ((1024, 1024), (256, 256, 256), (8192, 64)):
        spec = planner.plan_c2c(shape, tuple(range(len(shape))), False, "backward", GPU)
        strided = [p for p in spec.passes if p.load_tiled and p.store_tiled]
        assert strided and all(p.line_fastest for p in strided), shape
        for p in strided:
            d = p.defines({t: 0 for t in p.tables()})
            assert (d["LINE_FASTEST"], d["LOAD_TILED"], d["STORE_TILED"]) == (1, 0, 0)
    # a 1D four-step: neighbouring lines differ in the four-step digit. Line-fastest, with the
    # twiddle tables stored digit-fastest, only with 8 lines or more per workgroup or untiled
    # (the snapshot holds which passes those are).
    for n in (2**16, 2**21, 2**22, 12289, 65537):
        for p in planner.plan_fft(n, 4, False, "backward", GPU).passes:
            if p.load_tiled and p.store_tiled and p.fourstep_n and p.line_dims[0] < p.lines:
                assert p.line_fastest == (p.untiled or p.lines >= planner.FOURSTEP_TILE_LINES)
                assert p.digit_fastest == p.line_fastest
    first = planner.plan_fft(2**16, 4, False, "backward", GPU).passes[0]
    d = first.defines({t: 0 for t in first.tables()})
    assert d["LOAD_TILED"] == 0 and d["LINE_FASTEST"] == 1 and d["FOURSTEP_DIGITS"] == "256u"
    assert [t.digit_fastest for t in first.fourstep_tables()] == [True, True]
    spec = planner.plan_c2c((8192, 64), (0, 1), False, "backward", GPU)
    assert spec.passes[0].fourstep_n and not spec.passes[0].digit_fastest
    assert "FOURSTEP_DIGITS" not in spec.passes[0].defines({t: 0 for t in spec.passes[0].tables()})
    # contiguous rows and the fused real passes never
    spec = planner.plan_steps((1024, 512), [R2C(1, 1024),
                                            C2C(0)], GPU)
    assert [p.line_fastest for p in spec.passes] == [False, True]


def test_last_pass_of_a_four_step_stores_line_fastest():
    # A pass that reads contiguous lines and writes strided ones numbers its last stage
    # line-fastest and stores from registers (STORE_LINE_FASTEST): no tile through shared
    # memory, so it exchanges in halves. Only with several stages (the others read contiguous
    # lines in line order) and never with a fused real pass.
    for n in (2**16, 2**22, 16384, 65537):
        spec = planner.plan_fft(n, 4, False, "backward", GPU)
        assert len(spec.passes) > 1
        for p in spec.passes:
            slf = p.store_tiled and not p.load_tiled
            assert p.store_line_fastest == slf, (n, p.n)
            d = p.defines({t: 0 for t in p.tables()})
            assert d["STORE_LINE_FASTEST"] == int(slf)
            if slf:
                assert (d["STORE_TILED"], d["LINE_FASTEST"], d["SH_HALVES"]) == (0, 0, 1)
                assert not p.tiles_in_shared and len(p.radices) > 1
    one_stage = planner.StockhamPass(16, (16,), 1, 16, False, 1.0, store_tiled=True)
    assert not one_stage.store_line_fastest and one_stage.tiles_in_shared
    packed = planner.StockhamPass(256, (4, 4, 4, 4), 64, 4, False, 1.0, store_tiled=True,
                                  real_pack=512)
    assert not packed.store_line_fastest


def test_exchanges_in_halves_where_shared_memory_holds_only_them():
    # Contiguous passes and line-fastest ones exchange real and imaginary parts in turn
    # (SH_HALVES); tiles moved through shared memory and the fused real unpack keep vec2.
    spec = planner.plan_fft(4096, 4, False, "backward", GPU)
    assert [p.sh_halves for p in spec.passes] == [True]
    assert spec.passes[0].defines()["SH_HALVES"] == 1
    spec = planner.plan_c2c((1024, 1024), (0, 1), False, "backward", GPU)
    assert [(p.line_fastest, p.sh_halves) for p in spec.passes] == [(True, True), (False, True)]
    spec = planner.plan_fft(2**20, 4, False, "backward", GPU)  # the last stage stores strided
    assert [p.sh_halves for p in spec.passes] == [True, True]
    spec = planner.plan_fft(65537, 4, False, "backward", GPU)  # tiles of 5 lines through shared
    assert spec.passes[0].tiles_in_shared and not spec.passes[0].sh_halves
    spec = planner.plan_steps((64, 512), [R2C(1, 1024)], GPU)  # fused unpack
    assert spec.passes[0].real_unpack and not spec.passes[0].sh_halves
    assert planner.plan_fft(64, 4, False, "backward", GPU).passes[0].sh_halves
    # one stage: no exchange at all
    assert not planner.StockhamPass(16, (16,), 1, 16, False, 1.0).sh_halves


def test_fused_real_unpack_counts_and_fits_its_shared_memory():
    # A one-stage half-length transform (rfft of 16: radix 8) still reads its line back from
    # shared memory for the unpack: shared_bytes says so, and the fused pass fits.
    for lim in (GPU, SOFT):
        for n in (4, 16, 32, 64, 1024, 8192):
            spec = planner.plan_steps((64, n), [R2C(1, n)], lim)
            for p in spec.passes:
                if getattr(p, "real_unpack", 0):
                    assert p.uses_shared and 0 < p.shared_bytes <= lim.max_shared_bytes
                    assert p.shared_bytes == p.lines * p.sh_line * (4 if p.sh_halves else 8)
    one = planner.plan_steps((64, 16), [R2C(1, 16)], SOFT).passes[0]
    assert one.real_unpack == 16 and len(one.radices) == 1 and one.shared_bytes == one.lines * 8 * 8


def test_fused_real_unpack_takes_twice_the_invocations_from_64():
    # The pass with the fused unpack from shared memory: twice the invocations per line of the
    # same half-length transform planned alone (capped by its smallest radix's butterflies), in
    # half the lines; lines with fewer than 64 invocations and the pack (irfft) keep their shape.
    for n in (64, 256, 1024, 1536):
        alone = planner.plan_fft(n // 2, 64, False, "backward", GPU).passes[0]
        fused = planner.plan_steps((64, n // 2), [R2C(1, n)], GPU).passes[0]
        pack = planner.plan_steps((64, n // 2 + 1), [C2R(1, n)], GPU).passes[0]
        assert fused.real_unpack == n and fused.radices == alone.radices
        assert (pack.threads, pack.lines) == (alone.threads, alone.lines)
        want = alone.threads if alone.threads < 64 else min(2 * alone.threads,
                                                            alone.n // min(alone.radices), 1024)
        assert fused.threads == want
        assert fused.lines == max(1, alone.lines * alone.threads // want)
    assert planner.plan_steps((64, 512), [R2C(1, 1024)], GPU).passes[0].threads == 128


def test_fused_real_unpack_from_registers_on_long_lines():
    # From UNPACK_REGS_MIN_N points the unpack stores from the last stage's registers: the same
    # invocations and radices as the half-length transform alone, the smallest radix last, the
    # exchanges in halves, and registers for a pair of last-stage butterflies per invocation.
    for n in (2000, 2048, 4096, 8192, 12000):
        alone = planner.plan_fft(n // 2, 64, False, "backward", GPU).passes[0]
        fused = planner.plan_steps((64, n // 2), [R2C(1, n)], GPU).passes[0]
        assert fused.real_unpack == n and fused.unpack_in_registers and fused.sh_halves
        assert fused.defines()["UNPACK_REGS"] == 1
        assert (fused.threads, fused.lines) == (alone.threads, alone.lines)
        assert sorted(fused.radices) == sorted(alone.radices)
        assert fused.radices[-1] == min(alone.radices)
        r = fused.radices[-1]
        assert fused.registers >= 2 * r * -(-((n // 2 // r + 1) // 2) // fused.threads)
    short = planner.plan_steps((64, 512), [R2C(1, 1024)], GPU).passes[0]
    assert not short.unpack_in_registers and short.defines()["UNPACK_REGS"] == 0


def test_shapes_sized_by_halves_only_for_1d_four_step_tiles():
    # shared_bytes is what the kernel declares: a float per slot where it exchanges in halves
    for p in planner.plan_fft(2**20, 4, False, "backward", GPU).passes:
        assert p.shared_bytes == p.lines * p.sh_line * (4 if p.sh_halves else 8)
    # 2^21's first pass holds 8 lines of 1024 only as floats
    first = planner.plan_fft(2**21, 4, False, "backward", GPU).passes[0]
    assert first.n == 1024
    assert first.lines == 8 and first.sh_halves
    assert first.shared_bytes <= GPU.max_shared_bytes < first.lines * first.sh_line * 8
    # everywhere else the vec2 footprint fits: no longer contiguous lines (3125 one line per
    # workgroup) and no wider column tiles (fft2 1024^2 keeps 4 lines) ...
    for n in (1000, 3125, 4096, 16384, 65537):
        for p in planner.plan_fft(n, 4, False, "backward", GPU).passes:
            assert p.lines * p.sh_line * 8 <= GPU.max_shared_bytes, (n, p.n, p.lines)
    # ... but where not one contiguous line of vec2 fits: one line in halves, one pass (8192,
    # 9216), not for Bluestein's convolution FFTs (4099's 9216 points: four-steps of 96 x 96)
    for n in (8192, 9216, 12288):
        (p,) = planner.plan_fft(n, 4, False, "backward", GPU).passes
        assert p.lines == 1 and p.sh_halves and p.line_dims == (1, 1, 1), (n, p.n)
        assert p.shared_bytes <= GPU.max_shared_bytes < p.sh_line * 8
    spec = planner.plan_fft(4099, 4, False, "backward", GPU)
    assert spec.conv_lengths == (9216,) and [p.n for p in spec.passes] == [96] * 4
    cols = planner.plan_c2c((1024, 1024), (0, 1), False, "backward", GPU).passes[0]
    assert cols.lines == 4 and cols.lines * cols.sh_line * 8 <= GPU.max_shared_bytes


def test_lines_a_warp_touches_side_by_side_start_on_different_banks():
    # Line pitch: in halves a row of banks is 32 floats. Line-fastest numbering puts `lines`
    # lines in a warp (start 32 / lines words apart); the line order puts 32 / threads lines,
    # each `threads` words wide (start `threads` apart); one line per warp needs no stagger.
    def starts(p):
        return [(ly * p.sh_line) % 32 for ly in range(min(p.lines, 4))]
    first = planner.plan_fft(2**16, 4, False, "backward", GPU).passes[0]
    assert first.line_fastest and first.sh_halves and first.lines == 8
    assert starts(first) == [0, 4, 8, 12]
    cols = planner.plan_c2c((1024, 1024), (0, 1), False, "backward", GPU).passes[0]
    assert cols.line_fastest and cols.lines == 4 and starts(cols) == [0, 8, 16, 24]
    p64 = planner.stockham_pass(64, False, 1.0, GPU)
    assert (p64.threads, p64.lines, p64.sh_halves) == (16, 16, True)
    assert starts(p64) == [0, 16, 0, 16]
    p256 = planner.stockham_pass(256, False, 1.0, GPU)  # 64 invocations per line: one per warp
    assert p256.threads >= 32 and p256.sh_line == 256
    for p in (first, cols, p64):
        assert p.shared_bytes == p.lines * p.sh_line * 4 <= GPU.max_shared_bytes


def test_wide_elements_stagger_lines_by_their_own_slots():
    # Two-field texels and complex128 exchange 8-byte halves (16-byte elements): a row of banks
    # is 16 of their slots, not 32, so the pitch that staggers a line-fastest warp's two lines
    # of a pair is 8 slots past a row (4 for 4 lines), and the swizzle blocks are rows of 16.
    # complex64's own pitch for a pair (16 past a row of 32 floats) puts both on the same banks.
    wide = element_limits(GPU, 16)
    assert (wide.slot_scale, GPU.slot_scale) == (2, 1)
    tex = dataclasses.replace(wide, tile_lines=2, row_lines=2)
    for shape, axes in (((1024, 1024), (0, 1)), ((2, 512, 512), (1, 2)), ((2048, 2048), (0, 1))):
        for p in planner.plan_c2c(shape, axes, False, "backward", tex).passes:
            assert p.slot_scale == 2 and p.sh_halves and p.line_fastest and p.lines >= 2, shape
            k = p.lines  # a warp's lines start 16 / k slots apart
            assert [(ly * p.sh_line) % 16 for ly in range(k)] == [ly * 16 // k for ly in range(k)]
            assert p.swizzle_bits == 4
            assert p.shared_bytes == p.lines * p.sh_line * 4 <= wide.max_shared_bytes
    narrow = planner.stockham_pass(1024, False, 1.0, dataclasses.replace(GPU, row_lines=2))
    assert narrow.line_fastest and narrow.sh_halves and narrow.sh_line % 32 == 16
    # a line-order pass in halves of 8 bytes permutes rows of 16 slots, of floats rows of 32
    flat = planner.StockhamPass(1024, (4, 4, 4, 4, 4), 256, 1, False, 1.0)
    assert flat.sh_halves and not flat.line_fastest and flat.swizzle_bits == 5
    assert dataclasses.replace(flat, slot_scale=2).swizzle_bits == 4


def swizzled(p, n: int) -> list[list[int]]:
    """Where each stage's exchange puts slot 0..n-1: stockham.comp's swizzle_m and swizzle."""
    block, out, ns = 1 << p.swizzle_bits, [], 1
    for r in p.radices:
        g = ns * r
        m = 0 if n % block or g & (g - 1) else (block // r if g >= block else 1)
        out.append([i ^ (((i >> p.swizzle_bits) * m) & (block - 1)) for i in range(n)])
        ns = g
    return out


@pytest.mark.parametrize("lname", ["gpu48k", "soft32k"])
def test_swizzles_permute_whole_blocks_of_each_line(lname):
    # Every stage's permutation against bank conflicts maps the line onto itself; blocks of 32
    # slots (a row of float banks) only where the exchanges go in halves and tile the line (a
    # block that did not would switch the permutation off in the kernel).
    limits, seen = limits_sets()[lname], set()
    for name, shape, steps in sweep():
        for p in planner.plan_steps(shape, steps, limits).passes:
            if not isinstance(p, planner.StockhamPass):
                continue
            assert p.swizzle_bits in (4, 5)
            if p.swizzle_bits == 5:
                assert p.sh_halves and p.n % 32 == 0, (name, p.n)
            if p.n <= 4096:
                assert all(sorted(s) == list(range(p.n)) for s in swizzled(p, p.n)), (name, p.n)
            seen.add(p.swizzle_bits)
    assert seen == {4, 5}  # both block sizes are planned somewhere in the sweep


def test_long_powers_of_two_split_in_two_with_an_untiled_strided_pass():
    # 2^22 = 2048 x 2048: a vec2 tile of 4 lines of 2048 (64 KB) does not fit 48 KB, and 8 lines
    # in halves do not either, but 4 lines exchanging in halves do when the strided pass goes
    # line-fastest: two passes instead of three. 2^21 (1024 x 2048, _narrow_strided) and 2^20
    # keep 8-line tiles.
    first, second = planner.plan_fft(2**22, 2, False, "backward", GPU).passes
    assert first.n == 2048 and first.untiled and first.line_fastest and first.sh_halves
    assert first.lines == planner.TILE_LINES and first.digit_fastest
    assert second.n == 2**22 // 2048 and second.store_line_fastest and not second.untiled
    for p in (first, second):
        assert p.shared_bytes == p.lines * p.sh_line * 4 <= GPU.max_shared_bytes
        assert p.lines * p.n * 8 > GPU.max_shared_bytes or p.n < 2048
    for n in (2**20, 2**21):
        first = planner.plan_fft(n, 2, False, "backward", GPU).passes[0]
        assert first.lines == 8 and not first.untiled
    assert len(planner.plan_fft(2**23, 2, False, "backward", GPU).passes) == 3  # 4096 does not fit
    # strided axes of N-D transforms keep their tiles: untiled is for batched 1D four-steps
    for shape in ((4096, 4096), (2048, 2048), (256, 256, 256)):
        spec = planner.plan_c2c(shape, tuple(range(len(shape))), False, "backward", GPU)
        assert not any(p.untiled for p in spec.passes)


def test_strided_2048_axis_in_one_line_fastest_pass():
    # A 2048-point strided axis fits no tile with 48 KB, but 4 lines exchanging in halves do:
    # one line-fastest pass instead of a two-pass four-step, where the rows' 32-byte runs of 4
    # lines stay inside the GPU's sectors (inner extent a multiple of 4).
    rows, cols = planner.plan_c2c((2048, 2048), (1, 0), False, "backward", GPU).passes
    assert (cols.n, cols.lines, cols.line_dims) == (2048, planner.TILE_LINES, (2048, 1, 1))
    assert cols.line_fastest and cols.sh_halves and not cols.fourstep_n
    assert cols.shared_bytes == cols.lines * cols.sh_line * 4 <= GPU.max_shared_bytes
    assert 2048 * planner.TILE_LINES * 8 > GPU.max_shared_bytes  # no vec2 tile fits
    for inner in (4, 512, 8192):
        (p,) = planner.plan_c2c((2048, inner), (0,), True, "ortho", GPU).passes
        assert p.line_fastest and p.line_dims == (inner, 1, 1)
    # other lengths whose tiles do not fit, in at most 5 stages with staggered lines; 3072,
    # whose 4 lines fill 48 KB only unstaggered, stays in two passes
    for n in (1600, 2000, 2187, 2401, 3000):
        (p,) = planner.plan_c2c((n, 1024), (0,), False, "backward", GPU).passes
        assert p.n == n and p.line_fastest and len(p.radices) <= planner.UNTILED_AXIS_STAGES
        assert p.sh_stagger
    assert len(planner.plan_c2c((3072, 1024), (0,), False, "backward", GPU).passes) == 2
    assert len(planner.radices_for(3072)) <= planner.UNTILED_AXIS_STAGES
    # Bluestein's 2048-point convolution FFTs along a strided axis: one pass each
    spec = planner.plan_c2c((1009, 1024), (0,), False, "backward", GPU)
    assert spec.conv_lengths == (2048,) and [p.n for p in spec.passes] == [2048, 2048]
    assert all(p.line_fastest and p.lines == planner.TILE_LINES for p in spec.passes)
    assert len(planner.plan_c2c((1009, 1025), (0,), False, "backward", GPU).passes) == 4
    # inner extents not a multiple of 4 (the 1025 columns of rfft2 2048^2 in numpy's order) and
    # lengths whose 4 lines do not fit even in halves (4096) keep the four-step
    for shape, steps in (((2048, 6), [C2C(0)]), ((2048, 1025), [C2C(0)]),
                         ((4096, 4096), [C2C(0)])):
        spec = planner.plan_steps(shape, steps, GPU)
        assert [p.fourstep_n for p in spec.passes if p.line_dims[0] > 1][0] == shape[0]


def test_real_2d_columns_on_the_half_length_view():
    # rfft2 2048^2: its 1024 complex columns before the rows take one line-fastest pass where
    # numpy's order (1025 columns after the rows) takes a two-pass four-step; the row pass then
    # unpacks rows r and 2048 - r together, two lines per workgroup from shared memory. irfft2
    # mirrors it: the rows' pack pairs rows, then the columns.
    cols, rows = planner.plan_steps((2048, 1024), [R2C(1, 2048), C2C(0)], GPU).passes
    assert (cols.n, cols.line_dims, cols.line_fastest, cols.fourstep_n) == (2048, (1024, 1, 1),
                                                                           True, 0)
    assert (rows.n, rows.real_unpack, rows.real_rows, rows.lines) == (1024, 2048, 2048, 2)
    assert not rows.unpack_in_registers and rows.dst.batch == 1025
    spec = planner.plan_steps((2048, 1025), [C2C(0, True), C2R(1, 2048)], GPU)
    assert spec.axes == (1, 0)  # in the order they run
    rows, cols = spec.passes
    assert (rows.real_pack, rows.real_rows, cols.n, cols.line_dims) == (2048, 2048, 2048,
                                                                       (1024, 1, 1))
    # one-pass columns either way (1024^2), odd rows, and the columns of a 3D rfftn's first
    # axis keep numpy's order
    for shape, steps in (((1024, 512), [R2C(1, 1024), C2C(0)]),
                         ((2047, 1024), [R2C(1, 2048), C2C(0)]),
                         ((2048, 4, 1024), [R2C(2, 2048), C2C(0)])):
        spec = planner.plan_steps(shape, steps, GPU)
        assert not any(getattr(p, "real_rows", 0) for p in spec.passes)
        assert spec.passes[0].real_unpack


def test_four_step_strided_factor_at_most_512_where_the_contiguous_pass_fits():
    # [contiguous, strided]: the balanced split gives the strided pass factors of 2 while it is
    # above FOURSTEP_STRIDED_MAX and the contiguous pass still takes 4 lines in halves (48 KB:
    # up to 2048 points); at or below it, the balanced split stays.
    ff = planner.factors.fast_factors
    for k in range(14, 23):
        c, s = ff(2**k, GPU)
        assert c * s == 2**k
        if s > planner.FOURSTEP_STRIDED_MAX:  # only where the contiguous pass cannot take more
            assert not planner.factors.wide_tiles(s // 2, GPU) or planner.stockham_pass(
                2 * c, False, 1.0, GPU, tile_lines=planner.TILE_LINES, halves=True,
                store_tiled=True) is None, k
    spec = planner.plan_fft(2**20, 4, False, "backward", GPU)
    assert [(p.n, p.lines, p.line_fastest, p.store_line_fastest) for p in spec.passes] == [
        (512, 8, True, False), (2048, 4, False, True)]
    # strided axes (2D, 3D) keep their balanced tiles
    assert ff(2**20, GPU, tiled=True) == [1024, 1024]


def test_fused_real_pack_exchanges_vec2_where_it_fits():
    # irfft's pack rides on the half-length inverse FFT; its exchanges go as vec2 (SH_HALVES 0)
    # where the vec2 lines fit, else in halves (16384 reals: one line of 8192 points)
    def pack_pass(n):
        spec = planner.plan_steps((8, n // 2 + 1), [C2R(1, n)], GPU)
        assert len(spec.passes) == 1 and spec.passes[0].real_pack == n
        return spec.passes[0]
    for n in (1024, 4096):
        p = pack_pass(n)
        assert p.vec2_exchange and not p.sh_halves and len(p.radices) > 1
        assert p.defines({t: 0 for t in p.tables()})["SH_HALVES"] == 0
        vec2_bytes = p.lines * p.sh_line * planner.COMPLEX64_BYTES
        assert p.shared_bytes == vec2_bytes <= GPU.max_shared_bytes
    p = pack_pass(16384)
    assert not p.vec2_exchange and p.sh_halves
    # rfft's unpack keeps its halves
    spec = planner.plan_steps((8, 2048), [R2C(1, 4096)], GPU)
    assert spec.passes[0].real_unpack and spec.passes[0].sh_halves


def test_row_pass_hands_columns_over_in_blocks():
    # fft2 / fftn: the last axis' one-dispatch pass writes BLOCK_ROW_LINES rows per workgroup in
    # blocks of 4 columns, and the next axis' one-pass columns read them so; the same layout
    # both sides, and only between those two passes.
    for shape, axes in (((1024, 1024), (1, 0)), ((2048, 2048), (1, 0)), ((3, 6, 1000), (2, 1)),
                        ((16, 64, 128), (2, 1, 0))):
        for inverse in (False, True):
            spec = planner.plan_c2c(shape, axes, inverse, "backward", GPU)
            rows, cols = spec.passes[0], spec.passes[1]
            want = (planner.BLOCK_COLUMNS, shape[-2], shape[-1])
            assert rows.dst.blocked == cols.src.blocked == want, shape
            assert rows.lines == planner.BLOCK_ROW_LINES and rows.store_line_fastest
            assert rows.dst_buf == cols.src_buf not in ("in", "out")
            assert rows.src.blocked is None and cols.dst.blocked is None
            assert all(p.src.blocked is None and p.dst.blocked is None for p in spec.passes[2:])
            assert "BLOCKED_ADDR" in rows.defines({t: 0 for t in rows.tables()})["OUT_ADDR(a, i)"]
    # Not where the columns do not come in whole blocks, nor for a four-step column axis, nor
    # where a fused real unpack writes the rows, nor for one axis alone or the columns first.
    for shape, axes, steps in (((64, 1002), (1, 0), None), ((4096, 4096), (1, 0), None),
                               ((64, 64), (1,), None), ((64, 64), (0, 1), None),
                               ((1024, 512), None, [R2C(1, 1024),
                                                    C2C(0)])):
        spec = (planner.plan_steps(shape, steps, GPU) if steps
                else planner.plan_c2c(shape, axes, False, "backward", GPU))
        assert all(getattr(p.src, "blocked", None) is None and getattr(p.dst, "blocked", None)
                   is None for p in spec.passes), shape


# --- invariants over the sweep, the snapshot, the tuned shapes, the kernels' constants ----------

def axis_lengths(shape, steps, spec):
    """The product of the lengths the passes must cover: per c2c axis its length (squared
    Bluestein convolution length: a forward and an inverse FFT), per real step its complex FFT."""
    cur, out, convs = list(shape), 1, iter(spec.conv_lengths)
    for st in steps:
        if st.kind == "c2c":
            m = next(convs)
            out *= m * m if m else cur[st.axis]
            continue
        half = st.n % 2 == 0 and st.axis == len(shape) - 1
        m = next(convs)
        out *= m * m if m else (st.n // 2 if half else st.n)
        cur[st.axis] = st.n // 2 + 1 if st.kind == "r2c" else (st.n // 2 if half else st.n)
    return out


@pytest.mark.parametrize("lname", list(limits_sets()))
def test_every_plan_covers_its_lengths_and_fits_the_device(lname):
    limits = limits_sets()[lname]
    for name, shape, steps in sweep():
        spec = planner.plan_steps(shape, steps, limits)
        stockham = [p for p in spec.passes if isinstance(p, planner.StockhamPass)]
        assert math.prod(p.n for p in stockham) == axis_lengths(shape, steps, spec), name
        bufs = dict(spec.buffers)
        assert spec.passes[0].src_buf == "in" and spec.passes[-1].dst_buf == "out", name
        for prev, p in zip(spec.passes, spec.passes[1:]):
            assert p.src_buf == prev.dst_buf, name  # each pass reads what the one before wrote
        for p in spec.passes:
            assert p.src_buf != p.dst_buf and {p.src_buf, p.dst_buf} <= set(bufs), name
            groups = planner.split_groups(p.groups(spec.units), limits.max_group_count)
            assert sum(gx * gy for _, gx, gy in groups) >= p.groups(spec.units), name
            assert all(gx <= limits.max_group_count[0] and gy <= limits.max_group_count[1]
                       for _, gx, gy in groups), name
        for p in stockham:
            assert product(p.radices) == p.n, (name, p.n)
            assert p.shared_bytes <= limits.max_shared_bytes, (name, p.n)
            assert p.invocations == p.threads * p.lines <= limits.max_invocations, (name, p.n)
            assert p.threads <= limits.max_group_size[0] and p.lines <= limits.max_group_size[1]
            assert p.registers <= planner.register_cap(p.radices), (name, p.n)
            # what the kernel's #error guards and its shared-memory declaration require
            slot = planner.FLOAT_BYTES if p.sh_halves else planner.COMPLEX64_BYTES
            assert p.shared_bytes == (p.lines * p.sh_line * slot if p.uses_shared else 0)
            assert p.sh_line >= (p.n + (p.n - 1) // 16 if p.sh_pad else p.n)
            assert not (p.sh_halves and p.tiles_in_shared), (name, p.n)
            if p.store_line_fastest:
                assert len(p.radices) > 1 and not p.line_fastest and not p.load_tiled
        assert all(spec.units * per * planner.COMPLEX64_BYTES <= limits.max_buffer_bytes
                   for per in bufs.values()), name


def test_chosen_plans_match_the_snapshot():
    want = json.loads(SNAPSHOT.read_text())
    got = snapshot()
    changed = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    assert not changed, (f"{len(changed)} plans differ from {SNAPSHOT.name}, e.g. {changed[:5]}; "
                         "if the change is meant, rewrite it: python -m tests.regen_snapshot")


@pytest.mark.parametrize("lname", ["h100_vulkan", "h100_gl"])
def test_plans_take_the_tuned_shapes_the_wisdom_names(lname):
    # Every shipped entry is followed where its length is planned: contiguous entries by a
    # batched 1D transform in one pass, tiled ones by the strided passes of the four-step of
    # n * n where it splits so, else by a strided column of n.
    limits = limits_sets()[lname]
    assert limits.tuned
    for e in limits.tuned:
        if e.tiled:
            spec = planner.plan_fft(e.n * e.n, 2, False, "backward", limits)
            if [p.n for p in spec.passes] != [e.n, e.n]:
                spec = planner.plan_c2c((e.n, 64), (0,), False, "backward", limits)
            taken = [p for p in spec.passes if p.n == e.n]
        else:
            taken = planner.plan_fft(e.n, 64, False, "backward", limits).passes
        assert taken and all(isinstance(p, planner.StockhamPass) for p in taken), e
        for p in taken:
            assert (p.n, p.radices, p.threads) == (e.n, e.radices, e.threads), (e, p.radices)
            assert p.sh_pad == e.pad and (not e.lines or p.lines == e.lines), e


def test_kernels_declare_the_constants_python_uses():
    # abi.py is the Python side of what the kernels spell out in GLSL
    for kernel in ("stockham.comp", "realfft.comp", "copy.comp"):
        decl = re.search(r"^PUSH_CONSTANTS\((.*?)\)\n", kernels.kernel_text(kernel),
                         re.M | re.S).group(1)
        assert tuple(re.findall(r"uint (\w+);", decl)) == planner.PUSH_NAMES, kernel
    real = kernels.kernel_text("realfft.comp")
    assert f"#define GROUP {planner.REALFFT_GROUP}\n" in real and "local_size_x = GROUP," in real
    assert "* uint(GROUP) +" in real
    stockham = kernels.kernel_text("stockham.comp")
    assert f"#if THREADS * LINES > {planner.MAX_WORKGROUP_INVOCATIONS}" in stockham
    assert "FOURSTEP_LO_LEN" in stockham


def test_steps_are_checked():
    with pytest.raises(ValueError, match="unknown step"):
        planner.Step("dct", 0)
    with pytest.raises(ValueError, match="real length"):
        planner.Step("r2c", 0)
    with pytest.raises(ValueError, match="first step"):
        planner.plan_steps((4, 8), [C2C(0), R2C(1, 16)], GPU)
    with pytest.raises(ValueError, match="last step"):
        planner.plan_steps((4, 9), [C2R(1, 16), C2C(0)], GPU)
    assert C2R(0, 8).is_inverse and C2C(0, True).is_inverse and not R2C(0, 8).is_inverse


# --- the work budget of a dispatch (dispatch.DISPATCH_BYTES) ----------------------------------

# A GPU's grid limits with lavapipe's 65535 workgroups in every dimension, big buffers: the
# budget and the count limits split together.
GRID65535 = dataclasses.replace(SOFT, max_buffer_bytes=2**32 - 1)

# name: (upload shape, steps, bytes of an element: complex64 8, float64 or two fields (rgba) 16)
BIG = {
    "fft 2^26": ((1, 2**26), [C2C(1)], 8),
    "ifft 2^27": ((1, 2**27), [C2C(1, True)], 8),
    "rfft 2^27": ((1, 2**26), [R2C(1, 2**27)], 8),
    "irfft 2^27": ((1, 2**26 + 1), [C2R(1, 2**27)], 8),
    "fft2 8192^2": ((8192, 8192), [C2C(1), C2C(0)], 8),
    "rfft2 8192^2": ((8192, 4096), [R2C(1, 8192), C2C(0)], 8),
    "fft 4096 x 2^14": ((2**14, 4096), [C2C(1)], 8),
    "Bluestein 16777259": ((1, 16777259), [C2C(1)], 8),
    "Bluestein 1000003 x 16": ((16, 1000003), [C2C(1)], 8),
    "fft 2^26 float64": ((1, 2**26), [C2C(1)], 16),
    "fft2 8192^2 two fields": ((8192, 8192), [C2C(1), C2C(0)], 16),
    "Bluestein 8388617 float64": ((1, 8388617), [C2C(1)], 16),
}


def planned(shape, steps, limits, element_bytes):
    """The spec as plans.TransformPlan builds it for elements of `element_bytes`, and its
    limits (a wider element halves what shared memory and buffers hold)."""
    limits = element_limits(limits, element_bytes)
    return planner.plan_steps(shape, steps, limits), limits


def moved_bytes(p, units, element_bytes) -> int:
    """What a pass must at least read and write: every element in and out (a real pass counts
    its output elements)."""
    elements = p.line_count(units) * (p.n if isinstance(p, planner.StockhamPass) else 1)
    return 2 * elements * element_bytes


@pytest.mark.parametrize("limits", [GPU, GRID65535], ids=["gpu", "grid65535"])
@pytest.mark.parametrize("name", BIG)
def test_every_dispatch_stays_within_the_budget(name, limits):
    shape, steps, eb = BIG[name]
    spec, limits = planned(shape, steps, limits, eb)
    budget = planner.dispatch.DISPATCH_BYTES
    for p in spec.passes:
        groups = p.groups(spec.units)
        per_group = p.values_per_group() * eb
        lines = p.lines if isinstance(p, planner.StockhamPass) else p.group
        length = p.n if isinstance(p, planner.StockhamPass) else 1
        assert per_group >= 2 * lines * length * eb  # every element in and out at least
        if p.pre_mul is not None or p.post_mul is not None:  # Bluestein's multiplies read tables
            assert per_group >= 3 * lines * length * eb
        grids = planner.dispatch_grids(p, spec.units, limits, eb)
        base = 0
        for b, gx, gy in grids:  # contiguous: no gap, no overlap, the last covers the rest
            assert b == base and b < groups, name
            assert gx <= limits.max_group_count[0] and gy <= limits.max_group_count[1], name
            assert min(gx * gy, groups - b) * per_group <= budget, name
            base += gx * gy
        assert groups <= base < groups + grids[-1][2], name
        # as few dispatches as the budget needs (give or take one of rounding)
        assert -(-moved_bytes(p, spec.units, eb) // budget) <= len(grids), name
        assert len(grids) <= -(-groups * per_group // budget) + 1, name


def test_the_h100_sized_transforms_split_into_few_dispatches():
    # A pass of 2^26 complex64 moves 1 GiB, of 2^27 2 GiB: two and four dispatches a pass.
    assert planner.dispatch.DISPATCH_BYTES == 2**29
    for name, per_pass in (("fft 2^26", 2), ("fft2 8192^2", 2), ("ifft 2^27", 4)):
        shape, steps, eb = BIG[name]
        spec, limits = planned(shape, steps, GPU, eb)
        counts = [len(planner.dispatch_grids(p, spec.units, limits, eb)) for p in spec.passes]
        assert counts == [per_pass] * len(spec.passes), (name, counts)


@pytest.mark.parametrize("shape,steps,eb", [
    ((1024, 1024), [C2C(1), C2C(0)], 8), ((1000, 4096), [C2C(1)], 8),
    ((1024, 512), [R2C(1, 1024), C2C(0)], 8), ((100, 1009), [C2C(1)], 8),
    ((2, 2**20), [C2C(1)], 8), ((1000, 1024), [C2C(1)], 16), ((1024, 1024), [C2C(1), C2C(0)], 16)])
def test_small_plans_run_one_dispatch_per_pass(shape, steps, eb):
    for limits in (GPU, GRID65535):
        spec, limits = planned(shape, steps, limits, eb)
        assert all(len(planner.dispatch_grids(p, spec.units, limits, eb)) == 1
                   for p in spec.passes), shape


@pytest.mark.parametrize("groups", [1, 7, 100, 65536, 200003])
@pytest.mark.parametrize("max_groups", [1, 3, 1000, 65537, None])
@pytest.mark.parametrize("count", [(65535, 65535, 65535), (2**31 - 1, 65535, 65535), (3, 2, 1)])
def test_split_groups_keeps_each_dispatch_within_max_groups(groups, max_groups, count):
    parts = planner.split_groups(groups, count, max_groups)
    base, live = 0, []
    for b, gx, gy in parts:
        assert b == base and 1 <= gx <= count[0] and 1 <= gy <= count[1]
        live.append(min(gx * gy, groups - b))
        base += gx * gy
    assert groups <= base < groups + parts[-1][2]
    cap = min(max_groups or groups, count[0] * count[1])
    assert max(live) <= cap
    fewest = -(-groups // cap)
    if cap <= count[0]:  # rows of one: exactly the fewest dispatches, evenly sized
        assert len(parts) == fewest and max(live) - min(live) <= 1
    else:  # a dispatch of several rows may leave less than a row of its share to the next
        assert fewest <= len(parts) <= fewest + fewest // 2 + 1


# ---- textures (planner.texture_plan): the storage layout of a texture FFT, without a device ----

TEX = dataclasses.replace(GPU, max_texture_size=16384)


def _texture(call, limits=TEX):
    return planner.texture_plan(call, limits)


def test_texture_plans_are_the_c2c_plans_of_their_texture_limits():
    # The passes are plan_c2c's with texture_limits; the layers are the batch.
    for fmt, shape, layers in (("rg32f", (48, 80), 0), ("rgba32f", (720, 1280), 0),
                               ("r32f", (30, 45), 3), ("rgba16f", (64, 64), 5)):
        fields = planner.IMAGE_FORMATS[fmt].fields
        got = _texture(planner.transform_call(shape, True, "ortho", fmt, fmt, layers,
                                              "array" if layers else ""))
        limits = planner.texture_limits(TEX, fields)
        full, axes = ((layers,) + shape, (1, 2)) if layers else (shape, (0, 1))
        assert got.limits == limits
        assert got.spec.passes == planner.plan_c2c(full, axes, True, "ortho", limits).passes
        assert got.storage.fields == fields and got.storage.layers == max(layers, 1)
        assert (got.storage.height, got.storage.width) == shape
    assert planner.texture_limits(TEX, 2).tuned == planner.TWO_FIELD_SHAPES
    assert planner.texture_limits(TEX, 1).row_lines == planner.ROW_LINES


def test_texture_passes_meet_in_a_float32_destination_free_to_overwrite():
    rg = planner.transform_call((48, 80), False, "backward", "rg32f", "rg32f")
    got = _texture(rg)
    assert len(got.spec.passes) == 2 and rg.through == "out"
    assert got.storage.image_format("w0") == "rg32f" and got.aliases == {"w0": "out"}
    # a real field's spectrum is rg32f, the work format of one field: it meets there too
    assert planner.transform_call((48, 80), False, "backward", "r32f", "rg32f").through == "out"
    # Not in a half-float destination, nor in one that is another position's source: in a
    # texture of the plan's, as tall as every layer, where the device allows one that tall.
    for call in (planner.transform_call((48, 80), False, "backward", "rg32f", "rg16f"),
                 planner.transform_call((48, 80), False, "backward", "rg32f", "rg32f",
                                        dst_free=False)):
        got = _texture(call)
        assert call.through == "" and got.aliases == {}
        assert got.storage.image_format("w0") == "rg32f"
        assert _texture(call, dataclasses.replace(TEX, max_texture_size=47)).storage.image_format(
            "w0") is None  # a buffer
    # A buffer where asked for, and where an axis takes more than one pass (Bluestein).
    buffered = planner.transform_call((48, 80), False, "backward", "rg32f", "rg32f",
                                      intermediate="buffer")
    assert _texture(buffered).storage.image_format("w0") is None and not _texture(buffered).aliases
    bluestein = _texture(planner.transform_call((1009, 64), False, "backward", "rg32f", "rg32f"))
    assert len(bluestein.spec.passes) > 2 and bluestein.storage.image_format("w0") is None
    assert bluestein.aliases == {}


@pytest.mark.parametrize("kind", ["array", "list"])
def test_texture_layers_bind_as_arrays_or_lists_but_not_the_callers_own(kind):
    call = planner.transform_call((64, 64), False, "backward", "rgba32f", "rgba32f", 4, kind)
    st = _texture(call).storage
    bound = ("in", "out", "w0")  # w0 is "out": bound as it is
    assert (st.arrays, st.lists) == ((bound, ()) if kind == "array" else ((), bound))
    assert st.image_units("out") == (4 if kind == "list" else 1)
    # convolve: its halves meet in a texture of its own, every layer one below the other
    between = planner.between_format((64, 64), 2, 4, TEX.max_texture_size)
    fwd, inv = planner.convolve_calls((64, 64), "rgba32f", "rgba32f", 1, between, 4, kind)
    assert between == "rgba32f" and (fwd.dst, inv.src) == (between, between)
    assert (fwd.own, fwd.through, fwd.spec_fields) == ("out", "out", 1)
    assert (inv.own, inv.through) == ("in", "in")
    f, i = _texture(fwd).storage, _texture(inv).storage
    assert f.arrays + f.lists == ("in",) and i.arrays + i.lists == ("out",)
    assert f.spec_fields == 1 and i.spec_fields == 0 and not fwd.inverse and inv.inverse
    assert planner.emit(_texture(fwd).spec, f).defines[-1]["MUL_SPEC"] == 1
    # taller than the device's largest texture: a buffer between the halves
    assert planner.between_format((64, 64), 2, 4, 255) is None
    fwd, inv = planner.convolve_calls((64, 64), "rgba32f", "rgba32f", 2, None, 4, kind)
    assert _texture(fwd).storage.image_format("out") is None and not _texture(fwd).aliases


def test_texture_plans_refuse_what_one_submission_cannot_hold_and_key_a_cache():
    small = dataclasses.replace(TEX, max_buffer_bytes=2**15)
    call = planner.transform_call((64, 64), False, "backward", "rg32f", "rg32f", 8, "array")
    with pytest.raises(ValueError, match=r"a \(64, 64\) texture transform does not fit"):
        planner.texture_plan(call, small)
    same = planner.transform_call([64, 64], False, "backward", "rg32f", "rg32f", 8, "array")
    assert same == call and hash(same) == hash(call)  # TextureFFT's plan cache key
    assert same != dataclasses.replace(call, kind="list")


def test_texture_sets_and_the_overlaps_they_refuse():
    # A TextureArray alone, then a list's textures by format pair, as many a set as a pass binds.
    positions = [("rg32f", "rg32f", 0), ("r32f", "rg32f", 0), ("rg32f", "rg32f", 3),
                 ("rg32f", "rg32f", 0), ("rg32f", "rg32f", 0), ("r32f", "rg32f", 0)]
    sets = planner.texture_sets(positions, True, 2)
    assert sets == [([2], "array"), ([0, 3], "list"), ([4], "list"), ([1, 5], "list")]
    assert planner.texture_sets([("rg32f", "rg32f", 0)], False, 8) == [([0], "")]
    srcs = [10, 11, 12, 13, 14, 15]
    planner.check_texture_overlaps(srcs, srcs, sets, True)  # in place
    planner.check_texture_overlaps(srcs, [13, None, 12, 10, None, 11], sets, True)  # a swap
    for dsts, msg in (([20, 21, 22, 23, 24, 20], r"dst\[5\] is dst\[0\]"),
                      ([14, 21, 22, 23, 24, 25], r"dst\[0\] is src\[4\], which another set")):
        with pytest.raises(ValueError, match=msg):
            planner.check_texture_overlaps(srcs, dsts, sets, True)
