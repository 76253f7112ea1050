#!/usr/bin/env python3
"""The rows of benchmarks/elementwise_bench, timed with PyTorch CUDA eager on the same GPU.

Issue 17: docs/performance.md shows ours and torch's side by side from one session. Timing
as elementwise_bench does it: >= 100 ms of back-to-back warm-up per row, then the best of 5
batches of 10 ops, wall time per op with the device synchronized around each batch;
bandwidth counts the bytes each op must move. Runs only where torch and a CUDA GPU exist
(the GPU machine); elsewhere it says so and exits 0.

Usage: python3 benchmarks/peers/elementwise_torch.py [size_mb]   (default 256 MiB of f32
per operand, 4096 rows, as elementwise_bench)
"""
import os
import sys
import time

from cuda_torch import cuda_torch


def main():
    torch = cuda_torch("elementwise_torch")
    if torch is None:
        return 0
    size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 256.0
    rows = 4096
    cols = int(size_mb * (1 << 20) / 4) // rows
    n = rows * cols
    nbytes = 4.0 * n
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    a = torch.rand((rows, cols), device=dev, generator=g)
    b = torch.rand((rows, cols), device=dev, generator=g)
    row = torch.rand((cols,), device=dev, generator=g)
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    torch.cuda.synchronize()
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")
    print(f"array size: {size_mb:.0f} MiB of float32 per operand")

    def warm(ms):
        t0 = time.perf_counter()
        while (time.perf_counter() - t0) * 1e3 < ms:
            for _ in range(10):
                a.clone()
            torch.cuda.synchronize()

    def time_op(make, batch=int(os.environ.get("ELEMENTWISE_BENCH_BATCH", "10")), reps=5):
        warm_start = time.perf_counter()
        while (time.perf_counter() - warm_start) * 1e3 < 100.0:
            outs = [make() for _ in range(batch)]
            torch.cuda.synchronize()
        best = 1e30
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            outs = [make() for _ in range(batch)]
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) / batch)
            del outs
        return best * 1e3  # ms

    warm(500)
    i64a, i64b = a.to(torch.int64), b.to(torch.int64)
    copy_gbs = 16.0 * n / (time_op(lambda: i64a.clone()) * 1e-3) / 1e9
    read_gbs = 17.0 * n / (time_op(lambda: torch.eq(i64a, i64b)) * 1e-3) / 1e9
    del i64a, i64b
    peak = max(copy_gbs, read_gbs)
    print(f"peak: copy {copy_gbs:.0f} GB/s (int64, {16.0 * n / (1 << 20):.0f} MiB moved), "
          f"read {read_gbs:.0f} GB/s (eq int64 -> bool)")

    table = [
        ("copy f32 (kernel)", 2 * nbytes, lambda: a.clone()),
        ("exp f32", 2 * nbytes, lambda: torch.exp(a)),
        ("add f32", 3 * nbytes, lambda: a + b),
        ("multiply f32 by scalar", 2 * nbytes, lambda: a * 2.0),
        ("add f32 broadcast row", 2 * nbytes, lambda: a + row),
        ("add bf16", 1.5 * nbytes, lambda: a16 + b16),
        ("astype f32->bf16", 1.5 * nbytes, lambda: a.to(torch.bfloat16)),
        ("transposed copy f32", 2 * nbytes, lambda: a.t().contiguous()),
    ]
    print("\n| op | bytes moved | time (us) | GB/s | ratio to peak |")
    print("|---|---|---|---|---|")
    for name, moved, make in table:
        ms = time_op(make)
        gbs = moved / (ms * 1e-3) / 1e9
        print(f"| {name} | {moved / (1 << 20):.0f} MiB | {ms * 1e3:.1f} | {gbs:.0f} | "
              f"{gbs / peak:.2f} |")

    # Host cost per op: enqueueing a dependent chain of 2000 small adds, best of 5.
    x = torch.ones(1024, device=dev)
    best = 1e30
    for _ in range(5):
        y = x
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            y = y + x
        best = min(best, time.perf_counter() - t0)
        torch.cuda.synchronize()
    print(f"\nhost cost per op: {best * 1e6 / 2000:.2f} us (chain of 2000 adds, best of 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
