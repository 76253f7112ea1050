#!/usr/bin/env python3
"""Rows of benchmarks/reduce_bench timed with PyTorch CUDA eager on the same GPU (issue 11).

GPU time per op from CUDA events around a batch of back-to-back ops (after >= 100 ms of
warm-up), best of 5 batches of 20; bandwidth counts the bytes each op must move, against a
copy measured the same way. Runs only where torch and a CUDA GPU exist (the GPU machine);
elsewhere it says so and exits 0.

Usage: python3 benchmarks/peers/reduce_torch.py
"""
import sys

from cuda_torch import cuda_torch


def main():
    torch = cuda_torch("reduce_torch")
    if torch is None:
        return 0
    import torch.nn.functional as F
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")

    def time_us(fn, batch=20, rounds=5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        fn()
        torch.cuda.synchronize()
        warm = 0.0
        while warm < 100.0:  # ms of back-to-back work, so the clocks are up
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            end.synchronize()
            warm += start.elapsed_time(end)
        best = float("inf")
        for _ in range(rounds):
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) * 1e3 / batch)
        return best

    big = torch.rand((1 << 28) // 8, device=dev, generator=g, dtype=torch.float64).view(torch.int64)
    out = torch.empty_like(big)
    peak_us = time_us(lambda: out.copy_(big))
    peak = 2 * big.numel() * 8 / peak_us / 1e3
    print(f"peak (copy of {big.numel() * 8 >> 20} MiB): {peak:.0f} GB/s")
    del big, out

    xb = torch.randn((4096, 4096), device=dev, generator=g).to(torch.bfloat16)
    wb = torch.randn((4096,), device=dev, generator=g).to(torch.bfloat16)
    bb = torch.randn((4096,), device=dev, generator=g).to(torch.bfloat16)
    xf = torch.randn((4096, 4096), device=dev, generator=g)
    x8 = torch.randn((8192, 8192), device=dev, generator=g)
    sm = torch.randn((5, 4096, 4096), device=dev, generator=g)
    am = torch.randn((512, 32000), device=dev, generator=g)
    rows = [
        ("copy bf16 4096x4096", 2 * xb.numel() * 2, lambda: xb.clone()),
        ("rms_norm bf16 4096x4096", 2 * xb.numel() * 2, lambda: F.rms_norm(xb, (4096,), wb, 1e-5)),
        ("layer_norm bf16 4096x4096", 2 * xb.numel() * 2,
         lambda: F.layer_norm(xb, (4096,), wb, bb, 1e-5)),
        ("rms_norm f32 4096x4096", 2 * xf.numel() * 4, lambda: F.rms_norm(xf, (4096,), None, 1e-5)),
        ("row sum f32 8192x8192", x8.numel() * 4, lambda: x8.sum(-1)),
        ("column sum f32 8192x8192", x8.numel() * 4, lambda: x8.sum(0)),
        ("softmax f32 5x4096x4096", 2 * sm.numel() * 4, lambda: torch.softmax(sm, -1)),
        ("argmax f32 512x32000", am.numel() * 4, lambda: am.argmax(-1)),
        ("cumsum f32 8192x8192", 2 * x8.numel() * 4, lambda: x8.cumsum(-1)),
    ]
    print("| op | GPU us | ratio to peak |")
    print("|---|---|---|")
    for name, nbytes, fn in rows:
        us = time_us(fn)
        print(f"| {name} | {us:.1f} | {nbytes / us / 1e3 / peak:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
