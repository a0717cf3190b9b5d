"""The small typed records that cross module boundaries: a transform's steps, the names of the
host tables the passes read (built by tables.build_table), and the tuned kernel shapes of
Limits.tuned (read from the wisdom files by wisdom.load)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step of a transform planned in one submission (see compose.plan_steps).

    kind "c2c": a complex transform along `axis` (`inverse`, `norm`);
    kind "r2c": the first step only; the upload holds `n` reals along `axis` (as n/2 complex when
        n is even and the axis innermost, else as complex numbers); the axis becomes n//2+1 long;
    kind "c2r": the last step only; the axis (n//2+1 long) becomes `n` reals (downloaded as n/2
        complex when n is even and the axis innermost, else as complex numbers).
    """

    kind: str
    axis: int
    n: int | None = None
    inverse: bool = False
    norm: str = "backward"

    KINDS = ("c2c", "r2c", "c2r")

    def __post_init__(self):
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown step {self.kind!r}")
        if self.kind != "c2c" and self.n is None:
            raise ValueError(f"a {self.kind} step needs its real length n")

    @property
    def is_inverse(self) -> bool:
        """Whether the step transforms towards the signal (c2r always does)."""
        return self.kind == "c2r" or (self.kind == "c2c" and self.inverse)


# Host tables, named by what they hold; tables.build_table makes their contents.

@dataclass(frozen=True)
class TwiddleKey:
    """exp(-2 pi i m / n), m < n (the real pack / unpack)."""
    n: int


@dataclass(frozen=True)
class StageKey:
    """A Stockham stage's twiddles: W_{radix ns}^(r k) at (r - 1) ns + k, r < radix, k < ns."""
    radix: int
    ns: int


@dataclass(frozen=True)
class FourstepLoKey:
    """The low half of the four-step twiddle W_n^(d k): LO[d][k % FOURSTEP_LO_LEN] for line
    digits d < lines ([k][d] where digit_fastest)."""
    n: int
    lines: int
    digit_fastest: bool


@dataclass(frozen=True)
class FourstepHiKey:
    """The high half: HI[d][k / FOURSTEP_LO_LEN] for outputs k < length."""
    n: int
    lines: int
    digit_fastest: bool
    length: int


@dataclass(frozen=True)
class ChirpKey:
    """Bluestein's chirp exp(-+i pi j^2 / n), j < n."""
    n: int
    inverse: bool


@dataclass(frozen=True)
class BluesteinKernelKey:
    """The spectrum of Bluestein's length-m convolution kernel for length n."""
    n: int
    m: int
    inverse: bool


@dataclass(frozen=True)
class TunedShape:
    """A kernel shape measured fastest for length n (`pyfftgl bench --tune`): its radices,
    invocations per line, lines per workgroup (0: the planner's default) and padded shared
    memory; `tiled`: measured on strided (tiled) passes, else on contiguous lines; `real`:
    measured on the length-n pass that carries a 2n-point real transform's unpack over paired
    rows (rfft2's rows), which may want another shape than plain lines of n (it does on wgpu's
    queue: docs/performance-log.md, fourth session)."""

    n: int
    radices: tuple[int, ...]
    threads: int
    lines: int = 0
    pad: bool = False
    tiled: bool = False
    real: bool = False

    @property
    def key(self):
        """Its wisdom key: n, tiled_key(n) or real_key(n)."""
        return tiled_key(self.n) if self.tiled else real_key(self.n) if self.real else self.n


def tiled_key(n: int) -> tuple[str, int]:
    """The key of wisdom entries measured on strided (tiled) passes of length n."""
    return ("tiled", n)


def real_key(n: int) -> tuple[str, int]:
    """The key of wisdom entries measured on the real-unpack passes of half-length n."""
    return ("real", n)


def is_real_key(key) -> bool:
    """Whether a wisdom key is real_key(n)."""
    return isinstance(key, tuple) and key[0] == "real"


def key_length(key) -> tuple[int, bool]:
    """(n, tiled) of a wisdom key: n, tiled_key(n) or real_key(n)."""
    return (key[1], key[0] == "tiled") if isinstance(key, tuple) else (key, False)
