"""pyfftgl.gl.TextureFFT on real GL textures (llvmpipe in CI), against numpy in float64."""
import numpy as np
import pytest

import pyfftgl.gl
from pyfftgl.backends import get_device

from conftest import assert_accurate

COMPONENTS = {"r32f": 1, "rg32f": 2, "rgba32f": 4}


@pytest.fixture(scope="module")
def ctx():
    # The library's own headless context: a second context made current in this process would
    # take GL calls away from the GL backend's objects in the tests that follow.
    # The library's context is current only inside its calls (backends/gl.py): these tests
    # make textures on it directly, so it is held current (and locked) for the module.
    dev = get_device("gl")
    with dev.current():
        assert dev.ctx.error == "GL_NO_ERROR"
        yield dev.ctx
        assert dev.ctx.error == "GL_NO_ERROR"


def texture(ctx, a):
    a = np.ascontiguousarray(a, np.float32)
    t = ctx.texture((a.shape[1], a.shape[0]), a.shape[2], dtype="f4")
    t.write(a.tobytes())
    return t


def read(t):
    return np.frombuffer(t.read(), np.float32).reshape(t.size[1], t.size[0], t.components)


def fields(a):
    """The complex fields of an (h, w, c) texel array: c = 1 real, 2 one field, 4 two."""
    a = a.astype(np.float64)
    if a.shape[2] == 1:
        return [a[..., 0] + 0j]
    return [a[..., 2 * f] + 1j * a[..., 2 * f + 1] for f in range(a.shape[2] // 2)]


def random_texels(shape, fmt, seed):
    h, w = shape
    return np.random.default_rng(seed).standard_normal((h, w, COMPONENTS[fmt])).astype(np.float32)


# Powers of two, mixed radix, a prime (Bluestein) axis and an odd shape.
SHAPES = [(64, 64), (48, 80), (17, 32), (30, 45)]


@pytest.mark.parametrize("intermediate", ["buffer", "image"])
@pytest.mark.parametrize("fmt", ["rg32f", "rgba32f"])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_inverse_match_numpy(ctx, shape, fmt, intermediate):
    fft = pyfftgl.gl.TextureFFT(ctx, shape, intermediate=intermediate)
    a = random_texels(shape, fmt, seed=sum(shape))
    src = texture(ctx, a)
    spec = fft.forward(src)
    assert spec.components == src.components and spec.size == src.size
    for got, x in zip(fields(read(spec)), fields(a)):
        assert_accurate(got, np.fft.fft2(x), shape[0] * shape[1], factor=2.0)
    assert np.array_equal(read(src), a)  # out of place: the input is left as it was
    back = fft.inverse(spec, spec)  # in place
    assert back is spec
    for got, x in zip(fields(read(back)), fields(a)):
        assert_accurate(got, x, shape[0] * shape[1], factor=3.0)


def test_two_field_columns_take_narrower_tiles_to_save_a_pass(ctx):
    # rgba32f texels are 16 bytes, so 2-line tiles fill the 32-byte sectors that 4 complex64
    # lines do; where 4 lines of a column do not fit in shared memory, 2 keep it one pass.
    from dataclasses import replace
    from pyfftgl import planner
    from pyfftgl.limits import Limits
    small = Limits(32768, 1024, (1024, 1024, 64), (65535,) * 3, 2**27, 16384)
    four = planner.element_limits(small, 16)
    assert len(planner.plan_c2c((1024, 64), (0, 1), False, "backward", four).passes) == 3
    two = replace(four, tile_lines=2)
    assert len(planner.plan_c2c((1024, 64), (0, 1), False, "backward", two).passes) == 2
    shape = (1024, 64)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a = random_texels(shape, "rgba32f", seed=5)
    spec = fft.forward(texture(ctx, a))
    for got, x in zip(fields(read(spec)), fields(a)):
        assert_accurate(got, np.fft.fft2(x), shape[0] * shape[1], factor=2.0)
    if fft.device.info.limits.max_shared_bytes <= 32768:  # llvmpipe: the case above
        assert len(fft.plans()[0].passes) == 2
    back = fft.inverse(spec, spec)
    for got, x in zip(fields(read(back)), fields(a)):
        assert_accurate(got, x, shape[0] * shape[1], factor=3.0)


def test_row_passes_span_neighbouring_rows(ctx):
    # A texture is stored in blocks of neighbouring rows, so a pass along power-of-two rows
    # takes TextureFFT.ROW_LINES of them per workgroup numbered line-fastest (a warp spans
    # them); buffers' plans, mixed-radix rows and rows too short for a 128-invocation workgroup
    # keep one line after another.
    from dataclasses import replace
    from pyfftgl import planner
    from pyfftgl.limits import Limits
    gpu = planner.element_limits(Limits(49152, 1024, (1024, 1024, 64), (65535,) * 3, 2**31), 16)
    rows = replace(gpu, row_lines=pyfftgl.gl.TextureFFT.ROW_LINES)

    def last(limits, shape):
        p = planner.plan_c2c(shape, (0, 1), False, "backward", limits).passes[-1]
        return p.lines, p.line_fastest
    assert last(gpu, (1024, 1024)) == (1, False)
    assert last(rows, (1024, 1024)) == (2, True)
    assert last(rows, (512, 512)) == (2, True)
    assert last(rows, (64, 2048)) == (2, True)  # sized by its halves: 2 x 32 KB fits 48 KB
    assert last(rows, (720, 1280)) == last(gpu, (720, 1280))
    assert last(rows, (64, 96)) == last(gpu, (64, 96))  # 12 invocations a row: as before
    # A mixed-radix row takes the rule where its tuned shape asks for it: two-field 1280-point
    # rows (pyfftgl.gl.TWO_FIELD_SHAPES), 320 invocations each; 1920 keeps one line.
    tex = pyfftgl.gl.texture_limits(Limits(49152, 1024, (1024, 1024, 64), (65535,) * 3, 2**31), 2)
    p = planner.plan_c2c((720, 1280), (0, 1), False, "backward", tex).passes[-1]
    assert (p.lines, p.line_fastest, p.threads) == (2, True, 320)
    assert last(tex, (1080, 1920)) == (1, False)
    # llvmpipe's plans take the rule too: transforms match numpy (1280-point rows with
    # their tuned shape, 720-point columns with theirs)
    for shape in ((48, 512), (720, 1280)):
        fft = pyfftgl.gl.TextureFFT(ctx, shape)
        a = random_texels(shape, "rgba32f", seed=6)
        spec = fft.forward(texture(ctx, a))
        (plan,) = fft.plans()  # rgba32f to rgba32f
        assert plan.passes[-1].line_fastest
        for got, x in zip(fields(read(spec)), fields(a)):
            assert_accurate(got, np.fft.fft2(x), shape[0] * shape[1], factor=2.0)
        back = fft.inverse(spec, spec)
        for got, x in zip(fields(read(back)), fields(a)):
            assert_accurate(got, x, shape[0] * shape[1], factor=3.0)


@pytest.mark.parametrize("norm", ["ortho", "forward"])
def test_norms(ctx, norm):
    shape = (32, 24)
    fft = pyfftgl.gl.TextureFFT(ctx, shape, norm=norm)
    a = random_texels(shape, "rg32f", seed=3)
    (x,) = fields(a)
    (got,) = fields(read(fft.forward(texture(ctx, a))))
    assert_accurate(got, np.fft.fft2(x, norm=norm), x.size)
    (got,) = fields(read(fft.inverse(texture(ctx, a))))
    assert_accurate(got, np.fft.ifft2(x, norm=norm), x.size)


@pytest.mark.quick
def test_real_textures(ctx):
    shape = (40, 64)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a = random_texels(shape, "r32f", seed=4)
    spec = fft.forward(texture(ctx, a))
    assert spec.components == 2  # a real field's spectrum is complex: rg32f
    (got,) = fields(read(spec))
    assert_accurate(got, np.fft.fft2(a[..., 0].astype(np.float64)), a.size)
    real = ctx.texture(spec.size, 1, dtype="f4")
    assert fft.inverse(spec, real) is real  # an r32f dst keeps the real parts
    assert_accurate(read(real)[..., 0], a[..., 0], a.size, factor=3.0)


def test_several_textures_in_one_call(ctx):
    shape = (32, 48)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    arrays = [random_texels(shape, fmt, seed=i) for i, fmt in
              enumerate(["rg32f", "rgba32f", "r32f"])]
    srcs = [texture(ctx, a) for a in arrays]
    outs = fft.forward(srcs)
    assert isinstance(outs, list) and len(outs) == 3
    for a, out in zip(arrays, outs):
        for got, x in zip(fields(read(out)), fields(a)):
            assert_accurate(got, np.fft.fft2(x), x.size)
    dsts = [ctx.texture(t.size, t.components, dtype="f4") for t in outs]
    assert fft.inverse(outs, dsts) == dsts
    for a, out in zip(arrays, dsts):
        for got, x in zip(fields(read(out)), fields(a)):
            assert_accurate(got, x, x.size, factor=3.0)


@pytest.mark.parametrize("shape", [(64, 64), (30, 45)])
def test_convolve_is_numpys_circular_convolution(ctx, shape):
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    rng = np.random.default_rng(7)
    image = rng.random(shape + (4,)).astype(np.float32)  # a real RGBA image in [0, 1)
    kernel = rng.random(shape).astype(np.float32)
    kernel /= kernel.sum()
    src = texture(ctx, image)
    out = fft.convolve(src, fft.spectrum(kernel))
    got = read(out)
    k = np.fft.fft2(kernel.astype(np.float64))
    for c in range(4):  # two complex fields of a real kernel: the channels do not mix
        ref = np.fft.ifft2(np.fft.fft2(image[..., c].astype(np.float64)) * k).real
        assert_accurate(got[..., c], ref, kernel.size, factor=2.0)
    # In place, and the spectrum reused for the next frame.
    assert fft.convolve(src, fft.spectrum(kernel), src) is src
    assert np.allclose(read(src), got, atol=1e-6)


def test_convolve_per_field_and_frequency_spectra(ctx):
    shape = (32, 32)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    rng = np.random.default_rng(8)
    a = random_texels(shape, "rgba32f", seed=9)
    two = (rng.standard_normal(shape + (2,)) + 1j * rng.standard_normal(shape + (2,))
           ).astype(np.complex64)
    mask = (rng.random(shape) > 0.5).astype(np.float32)  # a spectrum given as is
    for spectrum, per_field in [(fft.spectrum(two), [np.fft.fft2(two[..., 0]),
                                                     np.fft.fft2(two[..., 1])]),
                                (fft.spectrum(mask, frequency=True), [mask, mask])]:
        got = fields(read(fft.convolve(texture(ctx, a), spectrum)))
        for g, x, s in zip(got, fields(a), per_field):
            assert_accurate(g, np.fft.ifft2(np.fft.fft2(x) * s), x.size, factor=2.0)
    assert np.allclose(fft.spectrum(two).get(), np.fft.fft2(two, axes=(0, 1)), rtol=0,
                       atol=1e-5 * np.abs(np.fft.fft2(two, axes=(0, 1))).max())


def test_reads_ignore_the_textures_filters_and_leave_the_callers_units_alone(ctx):
    """The passes read through a nearest-texel sampler: a texture whose minifying filter wants
    mipmaps it lacks (incomplete, where texelFetch would read zeros) still transforms. They read
    at the library's own texture units, so what the caller bound to its units (a texture and a
    linear sampler on unit 0 here) samples as before once the calls are done."""
    import moderngl
    shape = (16, 16)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a, b = random_texels(shape, "rg32f", seed=3), random_texels(shape, "rg32f", seed=5)
    src, mine = texture(ctx, a), texture(ctx, b)
    src.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
    linear = ctx.sampler(filter=(moderngl.LINEAR, moderngl.LINEAR))
    mine.use(0)
    linear.use(0)
    (x,) = fields(a)
    dst = fft.forward(src)
    for _ in range(3):  # recorded on new textures, on these, then replayed
        (got,) = fields(read(fft.forward(src, dst)))
        assert_accurate(got, np.fft.fft2(x), x.size)
    probe = ctx.compute_shader("""
        #version 430
        layout(local_size_x = 1) in;
        layout(binding = 0) uniform sampler2D t;
        layout(std430, binding = 0) writeonly buffer Out { vec2 v; };
        void main() { v = textureLod(t, vec2(1.0, 0.5) / 16.0, 0.0).rg; }""")
    out = ctx.buffer(reserve=8)
    out.bind_to_storage_buffer(0)
    probe.run(1)
    ctx.memory_barrier()
    halfway = np.frombuffer(out.read(), np.float32)
    assert np.allclose(halfway, (b[0, 0] + b[0, 1]) / 2, atol=1e-6)  # the caller's, linear
    linear.clear(0)
    for obj in (probe, out, src, mine, dst, linear):
        obj.release()


def test_barriers_follow_what_each_dispatch_reads(ctx):
    """GL memory barriers by what each dispatch reads of the submission's own writes (the
    storage bit for buffers, the texture-fetch bit for textures), and after the last, all bits
    only where a buffer is left written."""
    import moderngl
    from pyfftgl.backends.gl import GLImage, TEXTURE_USE_BARRIER_BITS, submission_barriers
    fetch, storage = moderngl.TEXTURE_FETCH_BARRIER_BIT, moderngl.SHADER_STORAGE_BARRIER_BIT
    shape = (32, 48)
    a = random_texels(shape, "rgba32f", seed=4)
    src, dst = texture(ctx, a), texture(ctx, a)
    for intermediate, between in (("image", fetch), ("buffer", storage)):
        fft = pyfftgl.gl.TextureFFT(ctx, shape, intermediate=intermediate)
        fft.forward(src, dst)
        (plan,) = fft.plans()
        ds = plan.flat_dispatches({"in": GLImage(src), "out": GLImage(dst)})
        # the first reads the caller's texture (ordered by GL, or by the caller's barrier
        # after its image stores), the second the first's output
        assert submission_barriers(ds) == ([0, between], TEXTURE_USE_BARRIER_BITS)
        fft.convolve(src, fft.spectrum(np.ones(shape)), dst)
        rec = fft.recordings()[-1]  # the barriers its submission was recorded with
        assert submission_barriers(rec.dispatches) == ([0, between, fetch, between],
                                                       TEXTURE_USE_BARRIER_BITS)
    # A plan writing a buffer ends with every bit: anything may read it next.
    from pyfftgl import planner
    from pyfftgl.plans import TransformPlan
    dev = get_device("gl")
    spec = planner.plan_c2c((64, 96), (0, 1), False, "backward", dev.info.limits)
    before, end = submission_barriers(TransformPlan(spec, dev, dev.info.limits, "backward")
                                      .flat_dispatches())
    assert before == [0] + [storage] * (len(before) - 1) and len(before) > 1
    assert end == moderngl.ALL_BARRIER_BITS


def test_a_repeated_call_replays_and_still_refuses_released_textures(ctx):
    """A render loop's calls on the same textures replay the recorded submission; a texture
    released since is still refused before any work, and new textures are checked anew."""
    shape = (16, 32)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    a, b = random_texels(shape, "rgba32f", 5), random_texels(shape, "rgba32f", 6)
    src, dst = texture(ctx, a), texture(ctx, a)
    spec = fft.spectrum(np.ones(shape))
    for _ in range(3):
        assert fft.forward(src, dst) is dst
        assert fft.convolve(src, spec, dst) is dst
    src.write(b.tobytes())  # new data in the same texture: the replay reads it
    for got, x in zip(fields(read(fft.forward(src, dst))), fields(b)):
        assert_accurate(got, np.fft.fft2(x), x.size)
    dst.release()
    with pytest.raises(ValueError, match="dst was released"):
        fft.forward(src, dst)
    with pytest.raises(ValueError, match="dst was released"):
        fft.convolve(src, spec, dst)
    with pytest.raises(TypeError, match="must be a moderngl.Texture"):
        fft.forward(src, np.zeros(3))
    other = ctx.texture((shape[1], shape[0]), 2, dtype="f4")  # rg32f: one field
    with pytest.raises(ValueError, match="cannot write the transform of a rgba32f"):
        fft.forward(src, other)


def test_bad_arguments_raise_before_any_work(ctx):
    fft = pyfftgl.gl.TextureFFT(ctx, (16, 32))
    good = ctx.texture((32, 16), 2, dtype="f4")
    with pytest.raises(ValueError, match="32 x 16"):
        fft.forward(ctx.texture((16, 16), 2, dtype="f4"))
    with pytest.raises(TypeError, match="r32f, rg32f or rgba32f"):
        fft.forward(ctx.texture((32, 16), 3, dtype="f4"))
    with pytest.raises(TypeError, match="r32f, rg32f or rgba32f"):
        fft.forward(ctx.texture((32, 16), 4, dtype="u1"))  # rgba8: not a float format
    with pytest.raises(TypeError, match="moderngl.Texture"):
        fft.forward(np.zeros((16, 32, 2), np.float32))
    with pytest.raises(ValueError, match="into r32f"):
        fft.forward(good, ctx.texture((32, 16), 1, dtype="f4"))
    with pytest.raises(ValueError, match="into rgba32f"):
        fft.inverse(good, ctx.texture((32, 16), 4, dtype="f4"))
    with pytest.raises(ValueError, match="dst must match src"):
        fft.forward([good, good], [good])
    with pytest.raises(ValueError, match="kernel must have shape"):
        fft.spectrum(np.zeros((16, 16)))
    assert fft.plans() == []  # nothing was planned or dispatched
    with pytest.raises(TypeError, match="from this TextureFFT"):
        pyfftgl.gl.TextureFFT(ctx, (16, 32)).convolve(good, fft.spectrum(np.zeros((16, 32))))
    with pytest.raises(ValueError, match="2 fields"):
        fft.convolve(good, fft.spectrum(np.zeros((16, 32, 2), np.complex64)))
    with pytest.raises(ValueError, match="positive integers"):
        pyfftgl.gl.TextureFFT(ctx, (0, 32))
    with pytest.raises(ValueError, match="Invalid norm value"):
        pyfftgl.gl.TextureFFT(ctx, (16, 32), norm="bogus")
    with pytest.raises(ValueError, match="intermediate"):
        pyfftgl.gl.TextureFFT(ctx, (16, 32), intermediate="texture")


def test_misuse_raises_clear_errors_before_any_work(ctx):
    """A released texture, a depth texture, a context that is not ModernGL's and a closed
    TextureFFT each get an exception that says so (not an AttributeError from deep inside)."""
    import moderngl
    for not_a_context in (None, "ctx", object(), get_device("gl")):
        with pytest.raises(TypeError, match="moderngl.Context"):
            pyfftgl.gl.TextureFFT(not_a_context, (16, 32))
    fft = pyfftgl.gl.TextureFFT(ctx, (16, 32))
    good = texture(ctx, random_texels((16, 32), "rg32f", seed=1))
    released = ctx.texture((32, 16), 2, dtype="f4")
    released.release()
    depth = ctx.depth_texture((32, 16))
    multisample = ctx.texture((32, 16), 2, samples=4, dtype="f4")  # no image2D, no sampler2D
    assert isinstance(depth, moderngl.Texture) and (depth.components, depth.dtype) == (1, "f4")
    for call, exc, msg in [
        (lambda: fft.forward(released), ValueError, "src was released"),
        (lambda: fft.inverse(good, released), ValueError, "dst was released"),
        (lambda: fft.forward([good, released]), ValueError, r"src\[1\] was released"),
        (lambda: fft.spectrum(released), ValueError, "kernel was released"),
        (lambda: fft.forward(depth), TypeError, "src is a depth texture"),
        (lambda: fft.forward(good, depth), TypeError, "dst is a depth texture"),
        (lambda: fft.spectrum(depth), TypeError, "kernel is a depth texture"),
        (lambda: fft.forward(multisample), TypeError, "src is a multisample texture"),
        (lambda: fft.inverse(good, multisample), TypeError, "dst is a multisample texture"),
    ]:
        with pytest.raises(exc, match=msg):
            call()
    assert fft.plans() == [] and ctx.error == "GL_NO_ERROR"  # nothing planned or dispatched
    kernel = np.random.default_rng(2).standard_normal((16, 32)).astype(np.float32)
    spectrum = fft.spectrum(kernel)
    fft.close()
    fft.close()  # twice is harmless
    for call in (lambda: fft.forward(good), lambda: fft.inverse(good, good),
                 lambda: fft.spectrum(kernel), lambda: fft.convolve(good, spectrum)):
        with pytest.raises(ValueError, match=r"TextureFFT \(16 x 32\) was closed"):
            call()
    # a spectrum made before close() keeps its data
    assert_accurate(spectrum.get(), np.fft.fft2(kernel.astype(np.float64)), kernel.size)
    for t in (depth, good, multisample):
        t.release()


def test_results_that_would_overwrite_each_other_or_unread_sources_are_refused(ctx):
    """A call's sets of passes (one a format pair, a TextureArray, or as many textures as a pass
    binds) run one after another: a dst that is a src of another set would be written before
    or after that set reads it, and a dst given twice would take two results. Both are refused
    before any work; within one set a dst may be another position's src (the passes then meet
    in the plan's texture: test_texture_batches.py)."""
    shape = (16, 32)
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    g1, g2, r = (texture(ctx, random_texels(shape, fmt, seed=i))
                 for i, fmt in enumerate(["rg32f", "rg32f", "r32f"]))
    many = [texture(ctx, random_texels(shape, "rg32f", seed=10 + i)) for i in range(17)]
    arrays = [ctx.texture_array((32, 16, 2), 2, dtype="f4") for _ in range(2)]
    kernel = fft.spectrum(np.ones(shape))
    plans, before = len(fft.plans()), [read(t) for t in [g1, g2, r] + many]
    another = "which another set of passes reads"
    for call, msg in [
        (lambda: fft.forward([g1, g2], [g1, g1]), r"dst\[1\] is dst\[0\]: each result needs"),
        (lambda: fft.convolve([g1, g2], kernel, [g2, g2]), r"dst\[1\] is dst\[0\]"),
        (lambda: fft.forward([r, g1], [g1, g2]), rf"dst\[0\] is src\[1\], {another}"),
        (lambda: fft.forward([g1, r], [g2, g1]), rf"dst\[1\] is src\[0\], {another}"),
        (lambda: fft.inverse([g1, r], [r, g1]), rf"is src\[\d\], {another}"),
        (lambda: fft.convolve([r, g1], kernel, [g1, g2]), rf"dst\[0\] is src\[1\], {another}"),
        (lambda: fft.forward(arrays, arrays[::-1]), rf"is src\[\d\], {another}"),
        (lambda: fft.forward(many, many[1:] + many[:1]), rf"is src\[\d+\], {another}"),
    ]:
        with pytest.raises(ValueError, match=msg):
            call()
    assert len(fft.plans()) == plans and fft.recordings() == []  # nothing planned or run
    assert all(np.array_equal(read(t), b) for t, b in zip([g1, g2, r] + many, before))
    # in place, position by position, across sets: each set reads its own before writing
    assert fft.forward(many, many) == many
    for t, b in zip(many, before[3:]):
        (got,), (x,) = fields(read(t)), fields(b)
        assert_accurate(got, np.fft.fft2(x), x.size)
    for t in [g1, g2, r] + many + arrays:
        t.release()
