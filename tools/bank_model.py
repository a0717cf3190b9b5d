"""A model of stockham.comp's shared-memory banks: the wavefronts a workgroup issues on its
exchanges, per pass (a warp's access costs as many wavefronts as the most distinct 32-bit words
it touches on one of the 32 banks; vec2 accesses approximately, as two words each). Wide
elements (slot_scale 2: two-field texels, complex128) exchange 8-byte halves, each half-warp
served apart, two words an access.

    python tools/bank_model.py        # the H200 wisdom's passes of the benchmark cases, then
                                      # the two-field texture passes

Reads only the planner; no GPU. `model(p, stagger_words)` tries another line pitch (halves);
`model(p, xor=x)` flips bit x of the odd line's slots (a LINE_XOR tried on the H100 and not
kept: docs/performance-log.md)."""
from collections import defaultdict

from pyfftgl import planner


def swizzle_m(N, R, Ns, block=16):
    g = Ns * R
    if N % block or g & (g - 1):
        return 0
    return block // R if g >= block else 1

def swz(p, m, block=16):
    return p ^ (((p // block) * m) % block) if m else p

class Banks:
    """One pass's shared-memory geometry and the wavefronts counted so far (`waves`)."""

    def __init__(self, p, stagger_words=None, block=None, xor=None):
        self.block = block or (1 << p.swizzle_bits)  # the pass's own swizzle unless asked
        self.xor = xor or 0
        self.wide = p.slot_scale == 2
        self.N, self.T, self.L = p.n, p.threads, p.lines
        self.halves = p.sh_halves
        self.lf_all = p.line_fastest
        self.slf = p.store_line_fastest
        self.pad = p.sh_pad
        self.shl = p.sh_line
        if stagger_words is not None:
            base = self.N + (self.N - 1) // 16 if self.pad else self.N
            row = 16 if self.wide else 32
            self.shl = base + (stagger_words - base) % row if self.halves else self.shl
        self.G = self.T * self.L
        self.waves = 0

    def ids(self, idx, last):
        if self.lf_all or (last and self.slf):
            return idx // self.L, idx % self.L
        return idx % self.T, idx // self.T

    def addr(self, ly, pos):
        pos ^= (ly & 1) * self.xor
        s = pos + (pos >> 4) if self.pad else pos
        return ly * self.shl + s

    def instr(self, fn):
        """One access of every invocation (fn(idx): its slot, or None where it is idle)."""
        if self.halves and self.wide:  # 8-byte halves: each half-warp apart, two words an access
            for h0 in range(0, self.G, 16):
                banks = defaultdict(set)
                for idx in range(h0, min(self.G, h0 + 16)):
                    a = fn(idx)
                    if a is not None:
                        for w in (2 * a, 2 * a + 1):
                            banks[w % 32].add(w)
                if banks:
                    self.waves += max(len(v) for v in banks.values())
            return
        for w0 in range(0, self.G, 32):
            banks = defaultdict(set)
            for idx in range(w0, min(self.G, w0 + 32)):
                a = fn(idx)
                if a is None:
                    continue
                if self.halves:
                    banks[a % 32].add(a)
                else:  # 8-byte: two words
                    banks[(2 * a) % 32].add(a)
            if banks:
                self.waves += self._warp_waves(banks)

    def _warp_waves(self, banks):
        if self.halves:
            return max(len(v) for v in banks.values())
        # 8-byte accesses: 2 wavefronts minimum per full warp; approximate by words
        cnt = defaultdict(set)
        for v in banks.values():
            for a in v:
                cnt[(2 * a) % 32].add(a)
                cnt[(2 * a + 1) % 32].add(a)
        return max(len(v) for v in cnt.values())

    def writes(self, R, Ns, m, last):
        # a radix-R stage's stores to shared memory: element r of butterfly j at its Stockham place
        span, T = self.N // R, self.T
        for b in range(-(-span // T)):
            for r in range(R):
                def f(idx, b=b, r=r):
                    tid, ly = self.ids(idx, last)
                    j = tid + b * T
                    if j >= span:
                        return None
                    return self.addr(ly, swz((j // Ns) * Ns * R + j % Ns + r * Ns, m, self.block))
                self.instr(f)

    def reader(self, b, r, span, m_in, last):
        def f(idx):
            tid, ly = self.ids(idx, last)
            j = tid + b * self.T
            return self.addr(ly, swz(j + r * span, m_in, self.block)) if j < span else None
        return f


def model(p, stagger_words=None, block=None, xor=None):
    m = Banks(p, stagger_words, block, xor)
    block, T = m.block, m.T
    rad = p.radices
    strides = p.strides
    S = len(rad)
    for s in range(S):
        R, Ns = rad[s], strides[s]
        first, last = s == 0, s == S - 1
        prev_r = rad[s - 1] if s else 0
        from_sh = (not first) or (p.load_tiled and not m.lf_all)
        # the unpack from registers stores straight after the last stage (its reads are
        # modelled in plain butterfly order, not in pairs)
        to_sh = (not last) or (p.real_unpack and not p.unpack_in_registers)
        span = m.N // R
        m_in = swizzle_m(m.N, prev_r, Ns // prev_r, block) if prev_r else 0
        m_out = 0 if last else swizzle_m(m.N, R, Ns, block)
        nb = -(-span // T)
        if from_sh:
            reads = [(b, r) for b in range(nb) for r in range(R)]
            for b, r in reads:
                m.instr(m.reader(b, r, span, m_in, last))
            if m.halves:  # the previous stage's imaginary parts, written back in its layout
                m.writes(prev_r, Ns // prev_r, m_in, False)
                for b, r in reads:
                    m.instr(m.reader(b, r, span, m_in, last))
        if to_sh:
            m.writes(R, Ns, m_out, last)
    return m.waves


if __name__ == "__main__":
    import dataclasses
    from pyfftgl import wisdom
    from pyfftgl.limits import Limits
    GPU = Limits(49152, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32 - 1)
    lim = dataclasses.replace(GPU, tuned=wisdom.load("NVIDIA H200", "vulkan"))
    def show(spec, name):
        for p in spec.passes:
            if not p.sh_halves:
                continue
            L = p.lines
            best = {sw: model(p, sw) for sw in range(0, 32)}
            cur = model(p)
            mn = min(best.values())
            at = [k for k, v in best.items() if v == mn][:6]
            print(f"{name:12s} {p.n}{list(p.radices)}x{p.threads}x{L} lf={p.line_fastest} "
                  f"slf={p.store_line_fastest} pitch={p.sh_line} wavefronts {cur}, best {mn} "
                  f"at pitch mod 32 in {at}, swizzle on 16 / 32 slots {model(p, None, 16)} / "
                  f"{model(p, None, 32)}")
    for n in (64, 256, 1024, 4096, 1000, 3125):
        show(planner.plan_fft(n, 64, False, "backward", lim), f"1d {n}")
    for n in (65536, 2**18, 2**20, 2**22, 8192):
        show(planner.plan_fft(n, 4, False, "backward", lim), f"1d {n}")
    for s in (1024, 2048, 4096):
        show(planner.plan_c2c((s, s), (0, 1), False, "backward", lim), f"fft2 {s}")
    from pyfftgl.gl import texture_limits
    tex = texture_limits(GPU, 2)
    for shape in ((1024, 1024), (512, 512), (720, 1280), (1080, 1920), (2048, 2048)):
        for p in planner.plan_c2c(shape, (0, 1), False, "backward", tex).passes:
            flips = [model(p, xor=x) for x in (1, 2, 4)]
            print(f"rgba {shape[0]}x{shape[1]} {p.n}{list(p.radices)}x{p.threads}x{p.lines} "
                  f"pitch={p.sh_line}: wavefronts {model(p)}, best pitch mod 16 "
                  f"{min(model(p, sw) for sw in range(16))}, odd line's bit 1/2/4 flipped {flips}")
