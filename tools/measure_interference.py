#!/usr/bin/env python3
"""Measure how compute kernels and communication-like kernels slow each other.

NCCL's kernels run on SMs, one CUDA block per channel, and stream HBM: a
GEMM or attention kernel that overlaps them runs slower, and so do they.
This script measures that on one GPU (issue "Overlap is not free"):

    python3 tools/measure_interference.py --out DIR

A communication-like kernel (built here with torch.utils.cpp_extension)
runs on k blocks, k in --blocks (NCCL's channels): each block has 512
threads, as NCCL's Simple protocol, and reserves most of an SM's shared
memory, as NCCL's blocks do, so that each of the k blocks holds an SM; it
streams HBM with a reduce loop (c = a + b over 16-byte vectors of three
buffers of --comm-mib MiB each, as a ring all-reduce step reads two
buffers and writes one). Beside it, on another stream, one of the compute
kernels:

    gemm8k    bf16 8192 x 8192 x 8192 matmul (compute-bound)
    gemm4k    bf16 4096 x 4096 x 4096 matmul
    attn      flash attention forward, bf16, batch 4, 32 heads, sequence
              4096, head dim 128, causal (scaled_dot_product_attention)
    add       bf16 elementwise add of two 256 Mi-element tensors
              (memory-bound)

Each pair is measured twice, as it happens in a step:
  - compute under communication: the communication kernel is launched
    first, sized to outlast the compute window, then the compute kernel
    --reps times; the compute time is the window between two events on the
    compute stream, per kernel;
  - communication under compute: --reps compute kernels are launched
    first, sized to outlast the communication, then the communication
    kernel; its rate is its bytes over the events around it.
Both alone too, in each trial right before the pair together (so that
clock and power drift falls on both alike). Every figure is the median of
--trials trials after a warm-up, timed with CUDA events, default stream
priorities.

Per-call costs (the floor of a collective): an empty kernel's launch, and
a one-rank NCCL communicator's all-reduce and all-gather of 4 bytes to
16 MiB (torch.distributed, backend nccl, world size 1: NCCL's host launch
and set-up without a network), each the mean of --calls calls between two
events after a warm-up, and the host time of one call.

Writes DIR/interference.csv, DIR/percall.csv and DIR/interference-env.json
(device, software, clocks). Needs PyTorch with CUDA and nvcc; it cannot run
in CI.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void comm_like(const float4 *__restrict__ a, const float4 *__restrict__ b,
                          float4 *__restrict__ c, long long n, int iters)
{
    extern __shared__ float4 reserve[];  /* holds the SM, as NCCL's blocks do */
    if (n < 0)
        reserve[threadIdx.x] = a[0];     /* never: keeps the reservation */
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int it = 0; it < iters; it++)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            float4 x = a[i], y = b[i];
            c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        }
}

void launch(torch::Tensor a, torch::Tensor b, torch::Tensor c, int64_t blocks, int64_t iters,
            int64_t smem)
{
    long long n = a.numel() / 4;
    cudaFuncSetAttribute(comm_like, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    comm_like<<<(unsigned)blocks, 512, (size_t)smem, at::cuda::getCurrentCUDAStream()>>>(
        (const float4 *)a.data_ptr<float>(), (const float4 *)b.data_ptr<float>(),
        (float4 *)c.data_ptr<float>(), n, (int)iters);
}

__global__ void empty_kernel() {}

void launch_empty()
{
    empty_kernel<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>();
}
"""
CPP_SRC = r"""
#include <torch/extension.h>
void launch(torch::Tensor a, torch::Tensor b, torch::Tensor c, int64_t blocks, int64_t iters,
            int64_t smem);
void launch_empty();
"""


def build():
    from torch.utils.cpp_extension import load_inline
    return load_inline(name="clustersim_interference", cpp_sources=CPP_SRC,
                       cuda_sources=CUDA_SRC, functions=["launch", "launch_empty"],
                       extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"],
                       verbose=False)


def compute_kernels(torch):
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1)

    def rnd(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.bfloat16, generator=g)

    a8, b8 = rnd(8192, 8192), rnd(8192, 8192)
    a4, b4 = rnd(4096, 4096), rnd(4096, 4096)
    q, k, v = rnd(4, 32, 4096, 128), rnd(4, 32, 4096, 128), rnd(4, 32, 4096, 128)
    x, y = rnd(256 << 20), rnd(256 << 20)
    F = torch.nn.functional
    return {
        "gemm8k": (lambda: torch.matmul(a8, b8), 2.0 * 8192 ** 3, 3 * 2 * 8192 ** 2),
        "gemm4k": (lambda: torch.matmul(a4, b4), 2.0 * 4096 ** 3, 3 * 2 * 4096 ** 2),
        "attn": (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 4.0 * 4 * 32 * 4096 ** 2 * 128 / 2, 4 * 2 * 4 * 32 * 4096 * 128),
        "add": (lambda: torch.add(x, y), float(256 << 20), 3 * 2 * (256 << 20)),
    }


def nccl_version(torch):
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)


def timed(torch, stream, fn):
    """Run fn on stream between two events; ms (after synchronising)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        s.record(stream)
        fn()
        e.record(stream)
    return s, e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the CSV and JSON files")
    ap.add_argument("--blocks", default="1,2,4,8,16,24,32",
                    help="blocks of the communication kernel (NCCL channels)")
    ap.add_argument("--comm-mib", type=int, default=1024, help="MiB of each of its buffers")
    ap.add_argument("--smem", type=int, default=160 * 1024,
                    help="dynamic shared memory a block reserves (bytes)")
    ap.add_argument("--reps", type=int, default=20, help="compute kernels per window")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200, help="calls per per-call figure")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    ext = build()
    dev = torch.device("cuda", torch.cuda.current_device())
    props = torch.cuda.get_device_properties(dev)
    n = args.comm_mib << 18  # floats: comm-mib MiB of fp32
    ca = torch.rand(n, device=dev)
    cb = torch.rand(n, device=dev)
    cc = torch.empty(n, device=dev)
    comm_bytes = 3 * 4 * n  # read a and b, write c, per iteration
    s_comp, s_comm = torch.cuda.Stream(), torch.cuda.Stream()
    kernels = compute_kernels(torch)
    blocks = [int(b) for b in args.blocks.split(",")]

    def comm(k, iters):
        return lambda: ext.launch(ca, cb, cc, k, iters, args.smem)

    def reps(fn, r):
        def run():
            for _ in range(r):
                fn()
        return run

    def median_ms(pairs):
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs)

    # Alone: each compute kernel, the communication kernel at each k.
    alone_c = {}
    for name, (fn, _, _) in kernels.items():
        for _ in range(3):
            fn()
        alone_c[name] = median_ms([timed(torch, s_comp, reps(fn, args.reps))
                                   for _ in range(args.trials)]) / args.reps
    alone_m = {}
    for k in blocks:
        comm(k, 1)()
        alone_m[k] = median_ms([timed(torch, s_comm, comm(k, 1))
                                for _ in range(args.trials)])  # ms per iteration
    rows = []
    for name, (fn, flops, _) in kernels.items():
        for k in blocks:
            # Each trial times the pair alone right before together, so
            # that clock and power drift (the card runs at its power cap
            # under sustained matmuls) falls on both alike.
            window = alone_c[name] * args.reps
            c_alone, c_under, m_alone, m_under = [], [], [], []
            for _ in range(args.trials):
                # Compute under communication: comm outlasts the compute
                # window (twice its alone length, at least one iteration).
                iters = max(1, int(2 * window / alone_m[k]) + 1)
                torch.cuda.synchronize()
                c_alone.append(timed(torch, s_comp, reps(fn, args.reps)))
                torch.cuda.synchronize()
                with torch.cuda.stream(s_comm):
                    comm(k, iters)()
                c_under.append(timed(torch, s_comp, reps(fn, args.reps)))
                torch.cuda.synchronize()
                # Communication under compute: the compute outlasts one
                # communication of about half the compute window.
                iters = max(1, int(0.5 * window / alone_m[k]))
                r = max(args.reps, int(2 * iters * alone_m[k] / alone_c[name]) + 1)
                m_alone.append(timed(torch, s_comm, comm(k, iters)))
                torch.cuda.synchronize()
                with torch.cuda.stream(s_comp):
                    reps(fn, r)()
                m_under.append(timed(torch, s_comm, comm(k, iters)))
                torch.cuda.synchronize()
            ca_ms = median_ms(c_alone) / args.reps
            c_with = median_ms(c_under) / args.reps
            ma_ms = median_ms(m_alone) / iters
            m_with = median_ms(m_under) / iters
            rows.append({
                "kernel": name, "blocks": k, "sms": props.multi_processor_count,
                "compute_alone_ms": ca_ms, "compute_with_comm_ms": c_with,
                "compute_slowdown": c_with / ca_ms,
                "comm_alone_GBps": comm_bytes / ma_ms / 1e6,
                "comm_with_compute_GBps": comm_bytes / m_with / 1e6,
                "comm_slowdown": m_with / ma_ms,
                "compute_TFLOPs_alone": flops / ca_ms / 1e9,
            })
            print("%-7s k=%2d compute %.3f -> %.3f ms (x%.3f)  comm %.1f -> %.1f GB/s (x%.3f)"
                  % (name, k, ca_ms, c_with, c_with / ca_ms, comm_bytes / ma_ms / 1e6,
                     comm_bytes / m_with / 1e6, m_with / ma_ms), flush=True)
    cols = ["kernel", "blocks", "sms", "compute_alone_ms", "compute_with_comm_ms",
            "compute_slowdown", "comm_alone_GBps", "comm_with_compute_GBps", "comm_slowdown",
            "compute_TFLOPs_alone"]
    with open(os.path.join(args.out, "interference.csv"), "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(("%.6g" % r[c]) if isinstance(r[c], float) else str(r[c])
                             for c in cols) + "\n")

    # Per-call costs.
    per = []
    for _ in range(10):
        ext.launch_empty()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    s, e = timed(torch, s_comp, reps(ext.launch_empty, args.calls))
    host = (time.perf_counter() - t0) / args.calls
    per.append(("empty_kernel", 0, median_ms([(s, e)]) * 1e3 / args.calls, host * 1e6))
    import torch.distributed as dist
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("nccl", init_method="file://" + os.path.join(d, "pg"),
                                rank=0, world_size=1, device_id=dev)
        for nbytes in [4, 4096, 65536, 1 << 20, 16 << 20]:
            t = torch.ones(max(1, nbytes // 4), device=dev)
            out = [torch.empty_like(t)]
            for op, call in (("all_reduce", lambda: dist.all_reduce(t)),
                             ("all_gather", lambda: dist.all_gather(out, t))):
                for _ in range(10):
                    call()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(args.calls):
                    call()
                e.record()
                host = (time.perf_counter() - t0) / args.calls
                torch.cuda.synchronize()
                per.append(("nccl_" + op, nbytes, s.elapsed_time(e) * 1e3 / args.calls,
                            host * 1e6))
        dist.destroy_process_group()
    with open(os.path.join(args.out, "percall.csv"), "w") as f:
        f.write("op,bytes,gpu_us_per_call,host_us_per_call\n")
        for op, nb, g_us, h_us in per:
            f.write("%s,%d,%.4g,%.4g\n" % (op, nb, g_us, h_us))
            print("%-16s %9d B  %.2f us a call on the GPU, %.2f us on the host"
                  % (op, nb, g_us, h_us), flush=True)

    def smi(q):
        try:
            return subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            return "unavailable: %s" % e
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": props.name, "sms": props.multi_processor_count,
        "memory_bytes": props.total_memory, "torch": torch.__version__,
        "cuda": torch.version.cuda, "nccl": nccl_version(torch),
        "python": sys.version.split()[0],
        "driver": smi("driver_version"), "clocks_end": smi("clocks.sm,clocks.mem,power.draw"),
        "args": vars(args),
        "comm_kernel": "512 threads a block, %d B of shared memory reserved, float4 c = a + b "
                       "over three buffers of %d MiB" % (args.smem, args.comm_mib),
    }
    with open(os.path.join(args.out, "interference-env.json"), "w") as f:
        json.dump(env, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
