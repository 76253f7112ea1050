#!/usr/bin/env python3
"""Issue 14's benchmark rows (benchmarks/sort_bench and indexing_bench), timed with PyTorch
CUDA eager on the same GPU, for a side-by-side in docs/performance.md.

Rows: embedding gather of 1 and 512 rows of a [151936, 1024] bf16 table; argsort f32 of
1x151936 and 64x151936; top-k (k = 50) of 1x151936; categorical sampling of 1x151936 logits
(Gumbel-max, the algorithm MLX's random.categorical uses, and torch.multinomial over the
softmax for reference). Each row: >= 100 ms of back-to-back warm-up, then 5 batches of 10
ops; "GPU us" is the CUDA-event time of a batch divided by 10 (kernels and the gaps
between them, as our timestamp union counts the kernels), "wall us" the best batch's wall
time per op with the device synchronized around it. Runs only where torch and a CUDA GPU
exist (the GPU machine); elsewhere it says so and exits 0.

Usage: python3 benchmarks/peers/sampling_torch.py
"""
import time

from cuda_torch import cuda_torch


def main():
    torch = cuda_torch("sampling_torch")
    if torch is None:
        return 0
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    vocab, dim = 151936, 1024
    table = torch.rand((vocab, dim), device=dev, generator=g).to(torch.bfloat16)
    ids1 = torch.randint(0, vocab, (1,), device=dev, generator=g)
    ids512 = torch.randint(0, vocab, (512,), device=dev, generator=g)
    row = torch.rand((1, vocab), device=dev, generator=g)
    rows = torch.rand((64, vocab), device=dev, generator=g)
    torch.cuda.synchronize()
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")

    def time_op(make, batch=10, reps=5):
        warm_start = time.perf_counter()
        while (time.perf_counter() - warm_start) * 1e3 < 100.0:
            outs = [make() for _ in range(batch)]
            torch.cuda.synchronize()
        best_wall, best_gpu = 1e30, 1e30
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            outs = [make() for _ in range(batch)]
            end.record()
            torch.cuda.synchronize()
            best_wall = min(best_wall, (time.perf_counter() - t0) / batch)
            best_gpu = min(best_gpu, start.elapsed_time(end) * 1e-3 / batch)
            del outs
        return best_gpu, best_wall

    def gumbel_max(logits):
        u = torch.rand(logits.shape, device=dev, generator=g)
        return torch.argmax(logits - torch.log(-torch.log(u)), dim=-1)

    table_rows = [
        ("take 1 rows of bf16 [151936,1024]", 2.0 * 2.0 * dim, lambda: table[ids1]),
        ("take 512 rows of bf16 [151936,1024]", 2.0 * 2.0 * 512 * dim, lambda: table[ids512]),
        ("argsort f32 1x151936", 8.0 * vocab, lambda: torch.argsort(row, dim=-1, stable=True)),
        ("argsort f32 64x151936", 8.0 * 64 * vocab,
         lambda: torch.argsort(rows, dim=-1, stable=True)),
        ("topk 50 f32 1x151936", 4.0 * vocab, lambda: torch.topk(row, 50, dim=-1)),
        ("categorical 1x151936 (Gumbel-max)", 4.0 * vocab, lambda: gumbel_max(row)),
        ("categorical 1x151936 (multinomial of softmax)", 4.0 * vocab,
         lambda: torch.multinomial(torch.softmax(row, dim=-1), 1, generator=g)),
    ]
    print("\n| op | bytes moved | GPU us (events) | wall us per op | GB/s (GPU) |")
    print("|---|---|---|---|---|")
    for name, nbytes, make in table_rows:
        gpu, wall = time_op(make)
        print(f"| {name} | {nbytes / (1 << 20):.2f} MiB | {gpu * 1e6:.1f} | {wall * 1e6:.1f} | "
              f"{nbytes / gpu / 1e9:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
