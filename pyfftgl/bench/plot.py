"""Plots and tables of the benchmark's records (matplotlib only when a plot is drawn)."""
from __future__ import annotations

from pathlib import Path


def plot(records: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(15, 5), gridspec_kw={"width_ratios": [1, 1.2]})
    _plot_ratios(ax2, records)
    ones = [r for r in records if r.get("group") in ("1d", "mixed", "bluestein")]
    style = {"1d": "o-", "mixed": "s", "bluestein": "x"}

    def series(rows, value):
        """Powers of two as a line, mixed-radix and Bluestein lengths as separate markers."""
        for group, fmt in style.items():
            pts = sorted((r["shape"][-1], value(r)) for r in rows if r["group"] == group)
            if pts:
                yield group, fmt, pts
    for k, backend in enumerate(sorted({r["backend"] for r in ones})):
        rows = [r for r in ones if r["backend"] == backend]
        for group, fmt, pts in series(rows, lambda r: r["gbps"]):
            ax.plot(*zip(*pts), fmt, color=f"C{k}",
                    label=f"pyfftgl {backend}" + ("" if group == "1d" else f" ({group})"))
    first = sorted({r["backend"] for r in ones})[:1]
    ref_rows = [r for r in ones if r["backend"] in first and r["ref"].get("cufft_ms")]
    for group, fmt, pts in series(ref_rows, lambda r: 16 * r["shape"][0] * r["shape"][-1]
                                  / (r["ref"]["cufft_ms"] * 1e-3) / 1e9):
        ax.plot(*zip(*pts), fmt.replace("-", "--"), color="k",
                label="cuFFT (one pass)" + ("" if group == "1d" else f" ({group})"))
    if ones:
        ax.axhline(ones[0]["copy_gbps"], color="grey", lw=0.8, label="copy bandwidth")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (batched 1D C2C)")
    ax.set_ylabel("GB/s (16 B per element per pass)")
    ax.set_title(ones[0]["device"] if ones else "pyfftgl")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)



def _plot_ratios(ax, records: list[dict]) -> None:
    """Every case's GPU time over cuFFT's (torch.fft), one bar per backend; 1.0 = cuFFT."""
    cases = [r["case"] for r in records if r["backend"] == "vulkan" and r["ref"].get("cufft_ms")]
    backends = sorted({r["backend"] for r in records})
    width = 0.8 / max(1, len(backends))
    for k, backend in enumerate(backends):
        by_case = {r["case"]: r for r in records if r["backend"] == backend}
        ys = [by_case[c]["gpu_ms"] / by_case[c]["ref"]["cufft_ms"] if c in by_case else 0
              for c in cases]
        ax.bar([i + k * width for i in range(len(cases))], ys, width, label=f"pyfftgl {backend}",
               color=f"C{k}")
    ax.axhline(1.0, color="k", lw=0.8, label="cuFFT")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
    ax.set_xticklabels(cases, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("GPU time / cuFFT GPU time")
    ax.set_title("every case against cuFFT (lower is better)")
    ax.legend(fontsize=7)



def table(records: list[dict]) -> str:
    """A markdown table of the records: GPU times per backend, cuFFT, ratios, host time."""
    rows = ["| case | group | Vulkan GPU ms | GL GPU ms | cuFFT ms | Vulkan / cuFFT | GL / Vulkan "
            "| Vulkan % copy | host us per call, Vulkan / GL |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    by = {(r["case"], r["backend"]): r for r in records}
    for case in dict.fromkeys(r["case"] for r in records):
        vk, gl = by.get((case, "vulkan")), by.get((case, "gl"))
        first = vk or gl
        cu = first["ref"].get("cufft_ms")

        def f(x, fmt="{:.3f}"):
            return "-" if x is None else fmt.format(x)
        rows.append(
            f"| {case} | {first['group']} | {f(vk and vk['gpu_ms'])} | {f(gl and gl['gpu_ms'])} "
            f"| {f(cu)} | {f(vk and cu and vk['gpu_ms'] / cu, '{:.2f}x')} "
            f"| {f(vk and gl and gl['gpu_ms'] / vk['gpu_ms'], '{:.2f}x')} "
            f"| {f(vk and vk['pct_copy'], '{:.0f}%')} "
            f"| {f(vk and vk['host_ms'] * 1e3, '{:.0f}')} "
            f"/ {f(gl and gl['host_ms'] * 1e3, '{:.0f}')} |")
    return "\n".join(rows)


def loop_table(records: list[dict]) -> str:
    """A markdown table of the records' loop sections: wall-clock us per call of back-to-back
    device-resident calls, the plan's GPU us, torch.fft's same loop, and the ratios."""
    def f(x, fmt):
        return "-" if x is None else fmt.format(x)
    rows = ["| case | backend | calls | loop us/call | GPU us | loop / GPU | torch loop us/call "
            "| ours / torch |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        lp = r.get("loop")
        if lp:
            rows.append(f"| {r['case']} | {r['backend']} | {lp['calls']} | {lp['us_per_call']:.1f} "
                        f"| {lp['gpu_us']:.1f} | {lp['vs_gpu']:.2f}x "
                        f"| {f(lp['torch_us_per_call'], '{:.1f}')} "
                        f"| {f(lp['vs_torch'], '{:.2f}x')} |")
    return "\n".join(rows)
