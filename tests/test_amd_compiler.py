"""AMD's own shader compiler on every FFT kernel the planner makes for AMD's GPUs.

Mesa's RADV compiles with ACO, the compiler of AMD's GPUs on Linux, and runs without any AMD
hardware when RADV_FORCE_FAMILY names a chip (its null winsys): pipelines are built, nothing
executes. So on any machine the suite builds each distinct kernel of tools/plan_dump.py's sweep
(float32 and float64) and of TextureFFT's plans, as planned under the AMD device profiles, for
RDNA2 (navi21) and RDNA3 (gfx1101, the profiles' RX 7800 XT), and reads what ACO made of it through
VK_KHR_pipeline_executable_properties: every kernel must build, and on RDNA2 without a register
spilled to scratch memory (a spill turns register reads into memory traffic in every stage).

The compiling runs in a child process (this file run as a script) that sees only RADV's driver.
"""
import json
import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
RADV_ICD = Path("/usr/share/vulkan/icd.d/radeon_icd.x86_64.json")
PROFILES = ("amd-rdna3-radv", "amd-rdna3-windows")


def _fft_kernels(out: dict) -> None:
    """The sweep's kernels, planned for each AMD profile in both precisions."""
    sys.path.insert(0, str(ROOT / "tools"))
    import plan_dump
    from pyfftgl import planner, profiles, kernels
    for name in PROFILES:
        for precision in (32, 64):
            storage = planner.Storage(precision=precision)
            limits = planner.element_limits(profiles.get_profile(name).limits,
                                            storage.dtype.itemsize)
            for what, shape, steps in plan_dump.transforms():
                try:
                    spec = planner.plan_steps(shape, steps, limits)
                except ValueError:  # beyond the profile's buffers: test_profiles covers it
                    continue
                for i, defines in enumerate(planner.emit(spec, storage).defines):
                    src = kernels.assemble(spec.passes[i].kernel, defines, "vulkan")
                    out.setdefault(src, (f"{name} fp{precision} {what} pass {i}", 3, (), ()))


# TextureFFT's plans: (src format, dst format) of forward and inverse calls, and of convolve's
# halves (image to its float32 texture between them with the spectrum, and back), one texture or
# an array of 8.
TEXTURE_FORMATS = (("rgba32f", "rgba32f"), ("rgba16f", "rgba16f"), ("rg32f", "rg32f"),
                   ("r32f", "rg32f"))
TEXTURE_SHAPES = ((720, 1280), (1024, 1024), (1080, 1920), (2048, 2048), (97, 60))


def _texture_kernels(out: dict) -> None:
    """TextureFFT's kernels for each AMD profile. GL gives textures, images and buffers their
    own units; in Vulkan's one binding space a pass's input texture is a combined image sampler
    at binding 0 (its input buffer's) and its output image takes binding 1 (its output
    buffer's)."""
    from pyfftgl import planner, profiles, kernels
    from pyfftgl.gl import texture_limits
    for name in PROFILES:
        for fs, fd in TEXTURE_FORMATS:
            fields = planner.IMAGE_FORMATS[fs].fields
            mid = "rgba32f" if fields == 2 else "rg32f"
            limits = texture_limits(profiles.get_profile(name).limits, fields)
            for (h, w), layers in [(s, 0) for s in TEXTURE_SHAPES] + [((512, 512), 8)]:
                shape, axes = ((layers, h, w), (1, 2)) if layers else ((h, w), (0, 1))
                arrays = ("in", "out") if layers else ()
                calls = [(inverse, (("in", fs), ("out", fd)), 0, "") for inverse in (False, True)]
                calls += [(False, (("in", fs), ("out", mid)), spec, "out")
                          for spec in range(1, fields + 1)]
                calls += [(True, (("in", mid), ("out", fd)), 0, "in")]
                for inverse, images, spec_fields, own in calls:
                    spec = planner.plan_c2c(shape, axes, inverse, "backward", limits)
                    bound = tuple(n for n, _ in images if n in arrays and n != own)
                    storage = planner.Storage(fields=fields, images=images, width=w, height=h,
                                              layers=max(layers, 1), arrays=bound,
                                              spec_fields=spec_fields)
                    for i, d in enumerate(planner.emit(spec, storage).defines):
                        d = dict(d)
                        if "OUT_IMAGE" in d:
                            d["OUT_UNIT0"] = 1
                        what = (f"{name} texture {fs}->{fd} {w}x{h}x{layers} "
                                f"{'inverse' if inverse else 'forward'} "
                                f"images {'+'.join(n for n, _ in images)} "
                                f"spec {spec_fields} pass {i}")
                        out.setdefault(kernels.assemble(spec.passes[i].kernel, d, "vulkan"),
                                       (what, 4 if "MUL_SPEC" in d else 3,
                                        (1,) * ("OUT_IMAGE" in d), (0,) * ("IN_IMAGE" in d)))


def all_kernels() -> dict[str, tuple[str, int, tuple, tuple]]:
    """Vulkan source -> (where it comes from, bindings, which of them are storage images, which
    are samplers) of every distinct kernel."""
    out: dict = {}
    _fft_kernels(out)
    _texture_kernels(out)
    return out


def compile_all() -> dict:
    """In the child: ACO's statistics of every kernel, on the one (RADV) device there is."""
    from pyfftgl import planner, kernels
    from pyfftgl.backends import vkinfo
    from pyfftgl.bench.vkstats import pipeline_statistics
    found = {}
    for src, (what, bindings, images, samplers) in all_kernels().items():
        stats = pipeline_statistics(kernels.compile_spirv(src), 4 * len(planner.PUSH_NAMES),
                                    bindings, images=images, samplers=samplers)
        found[what] = [e["stats"] for e in stats]
    return {"devices": [d["device_name"] for d in vkinfo.physical_devices()], "kernels": found}


def _compiled(family: str, tmp_path) -> dict:
    """What ACO made of every kernel for `family` (the child's compile_all)."""
    assert RADV_ICD.is_file(), (
        f"no {RADV_ICD}: install Debian's mesa-vulkan-drivers (tools/setup.sh does)")
    env = dict(os.environ, RADV_FORCE_FAMILY=family, VK_DRIVER_FILES=str(RADV_ICD),
               VK_ICD_FILENAMES=str(RADV_ICD))
    out = tmp_path / "stats.json"
    proc = subprocess.run([sys.executable, __file__, str(out)], cwd=ROOT, timeout=900, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["devices"] == [f"Null hardware (RADV {family.upper()})"], result["devices"]
    kernels = result["kernels"]
    assert len(kernels) > 500, f"only {len(kernels)} kernels"
    # each kernel was compiled, not just accepted: instructions and registers were counted
    assert all(s["Instructions"] > 0 and s["VGPRs"] > 0 for e in kernels.values() for s in e)
    return kernels


def _spilled(kernels: dict) -> dict:
    return {what: s for what, execs in kernels.items() for s in execs
            if s["Spilled VGPRs"] or s["Spilled SGPRs"] or s["Scratch size"]}


def test_every_kernel_builds_on_rdna2_without_spilling(tmp_path):
    spilled = _spilled(_compiled("navi21", tmp_path))
    assert not spilled, f"{len(spilled)} kernels spill, e.g. {next(iter(spilled.items()))}"


def test_every_kernel_builds_on_rdna3_and_only_float64_prime_lines_spill(tmp_path):
    # Mesa 22.3, the first release for RDNA3, gives every kernel at most 132 VGPRs on this chip
    # (256 on RDNA2; docs/drivers.md): there the float64 kernels whose one invocation holds a
    # whole 17- or 31-point line spill, and nothing else may.
    spilled = _spilled(_compiled("gfx1101", tmp_path))
    assert all(" fp64 fft 17 " in w or " fp64 fft 31 " in w for w in spilled), \
        sorted(spilled)


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(compile_all()))
