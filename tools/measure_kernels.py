#!/usr/bin/env python3
"""Measure the GPU kernels that clustersim's compute model reads, on your GPU.

Writes a calibration folder in the format of scenarios/calibration/h200/
(docs/calibration.md, "A table of your own"):

  gemm.csv       bf16 GEMMs of a GPT-style layer (QKV, attention output, MLP up
                 and down; forward, dX and dW) over hidden sizes and token counts
  attention.csv  scaled-dot-product attention, FlashAttention and cuDNN
                 backends, forward and forward+backward
  membound.csv   LayerNorm, RMSNorm, GeLU, residual add and cross-entropy
  ceilings.csv   copy/read/write bandwidth, square bf16/fp32/TF32 matmuls and
                 kernel launch costs
  env.json       software versions, device, driver and clocks

How: inputs are random (never zeros, which some GPUs process faster); every
figure is the median of CUDA-event-timed repetitions, and before each
repetition the L2 cache is flushed by writing a buffer larger than it, so
the times are cold-cache kernel times without launch gaps. FLOPs: a GEMM is
2*M*N*K; attention forward is 4*b*H*s^2*d (halved when causal) and backward
2.5x forward. Bytes of memory-bound ops count each tensor read or written
once. Efficiency columns are against --peak-tflops, the GPU's datasheet dense
bf16 peak (989 for an H100/H200 SXM, 312 for an A100).

Needs PyTorch with a CUDA GPU; it cannot run in CI or on a machine without
one. The default grid takes about a minute and a half on an H200 (longer on
slower GPUs: the largest GEMMs are 40 TFLOP each); --quick measures a few
sizes per table with few repetitions in about 20 seconds.

    python3 tools/measure_kernels.py --out my-gpu [--peak-tflops 989] [--quick]

Then fit the GEMM table for the simulator (the command prints it):

    clustersim calibrate gemm my-gpu/gemm.csv --gpu PRESET -o calibration/NAME
"""

import argparse
import csv
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("measure_kernels.py: PyTorch is not installed (it needs PyTorch with CUDA)")


# --- What to measure ------------------------------------------------------

FULL = {
    "gemm_h": [2048, 4096, 8192, 12288],
    "gemm_T": [512, 2048, 8192, 32768],
    "attn_heads": [16, 32, 64],
    "attn_seq": [2048, 4096, 8192],
    "norm_h": [2048, 4096, 8192],
    "vocab": [50257, 128256],
    "copy_GiB": [1, 4],
    "mm_bf16_n": [4096, 8192, 16384],
    "mm_fp32_n": [4096, 8192],
    # Repetitions: as many as fit in budget_ms, within [min_reps, max_reps].
    "budget_ms": 200.0,
    "min_reps": 8,
    "max_reps": 200,
    "warmup": 3,
}

QUICK = {
    "gemm_h": [2048, 8192],
    "gemm_T": [2048, 8192],
    "attn_heads": [32],
    "attn_seq": [2048, 8192],
    "norm_h": [4096],
    "vocab": [50257],
    "copy_GiB": [1],
    # 8192^3 stays: gemm.csv's eff_vs_measured_bf16 is relative to it.
    "mm_bf16_n": [4096, 8192],
    "mm_fp32_n": [4096],
    "budget_ms": 20.0,
    "min_reps": 3,
    "max_reps": 20,
    "warmup": 2,
}

TOKENS_MEMBOUND = 8192      # rows of every memory-bound op, as in the shipped table
ATTN_HEAD_DIM = 128
GIB = 1 << 30

GEMM_PASSES = ["fwd", "dX", "dW"]

ATTN_NOTE = "flops_fwd=4*b*H*s^2*d (x0.5 causal); bwd=2.5x fwd; fwd+bwd=3.5x fwd"
NORM_NOTE = "bytes: fwd x,y; bwd x,dy,dx (params ignored)"
RMS_NOTE = "F.rms_norm; bytes as layernorm"
ADD_NOTE = "bytes: a,b read, c written (bwd is a no-op)"
GELU_NOTE = "bytes: fwd x,y; bwd x,dy,dx"
CE_NOTE = ("bytes model: fwd reads logits once; fwd+bwd reads logits twice and "
           "writes dlogits once (bf16)")

ATTN_COLUMNS = ["backend", "b", "heads", "seq", "head_dim", "causal", "flops_fwd",
                "fwd_ms", "fwd_ms_min", "fwdbwd_ms", "fwdbwd_ms_min", "bwd_ms",
                "fwd_TFLOPs", "bwd_TFLOPs", "fwdbwd_TFLOPs", "relerr_vs_math_fp32", "note"]
MEMBOUND_COLUMNS = ["op", "shape", "dtype", "pass", "bytes_model", "ms", "ms_min", "ms_max",
                    "reps", "GBps", "frac_of_copy_bw", "note"]
CEILING_COLUMNS = ["section", "name", "dtype", "size", "bytes", "flops", "ms", "ms_min",
                   "ms_max", "reps", "GBps", "TFLOPs", "relerr_vs_fp64", "note"]


def gemm_columns(peak_tflops):
    # The shipped table names the efficiency column after the peak it divides by.
    return ["h", "T", "gemm", "pass", "M", "N", "K", "flops", "bytes_min", "intensity",
            "ms", "ms_min", "ms_max", "reps", "TFLOPs", f"eff_vs_{peak_tflops:g}",
            "eff_vs_measured_bf16"]


# --- Timing ----------------------------------------------------------------

class Timer:
    """Times a callable on the GPU with CUDA events, cold L2 before every repetition."""

    def __init__(self, grid):
        self.budget_ms = grid["budget_ms"]
        self.min_reps = grid["min_reps"]
        self.max_reps = grid["max_reps"]
        self.warmup = grid["warmup"]
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
        # Writing this buffer evicts everything the previous repetition left in L2.
        # It is also far larger than L2 (1 GiB, a few tenths of a millisecond to
        # write) so that while the GPU writes it Python has time to queue the next
        # timed call: otherwise a short kernel is timed with its launch gap in it.
        self.flush = torch.empty(max(4 * l2, GIB), dtype=torch.uint8, device="cuda")

    def _run(self, fn, reps):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.flush.fill_(i % 251 + 1)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return sorted(s.elapsed_time(e) for s, e in zip(starts, ends))

    def time(self, fn):
        """Returns (median ms, min ms, max ms, repetitions)."""
        for _ in range(self.warmup):      # first calls pick kernels, build plans
            fn()
        probe = self._run(fn, 3)
        reps = int(self.budget_ms / max(statistics.median(probe), 1e-3))
        reps = min(max(reps, self.min_reps), self.max_reps)
        times = self._run(fn, reps)
        return statistics.median(times), times[0], times[-1], reps


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, dtype=dtype, device="cuda")


def relerr(got, ref):
    return ((got.double() - ref.double()).norm() / ref.double().norm()).item()


def skip(what, err, errors):
    """Report a row that could not be measured; the run goes on without it."""
    msg = f"skipping {what}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    print("  " + msg, flush=True)
    errors.append(msg)
    torch.cuda.empty_cache()      # an out-of-memory error leaves blocks cached


# --- ceilings.csv ----------------------------------------------------------

def bandwidth_rows(timer, gib, errors):
    n = gib * GIB // 2                      # bf16 elements in `gib` GiB
    size = f"{gib}GiB"
    try:
        src = randn(n)
        dst = torch.empty_like(src)
    except RuntimeError as err:
        skip(f"bandwidth at {size}", err, errors)
        return []
    cases = [("d2d_copy", lambda: dst.copy_(src), 2 * n * 2, "bytes = read + written"),
             ("read_sum", lambda: src.sum(), n * 2, "bytes = read"),
             ("write_fill", lambda: dst.fill_(1.5), n * 2, "bytes = written")]
    rows = []
    for name, fn, nbytes, note in cases:
        ms, lo, hi, reps = timer.time(fn)
        rows.append({"section": "bandwidth", "name": name, "dtype": "bf16", "size": size,
                     "bytes": nbytes, "ms": ms, "ms_min": lo, "ms_max": hi, "reps": reps,
                     "GBps": nbytes / ms / 1e6, "note": note})
        print(f"  {name:10s} {size:5s} {rows[-1]['GBps']:8.0f} GB/s", flush=True)
    del src, dst
    torch.cuda.empty_cache()
    return rows


def matmul_row(timer, name, dtype_label, dtype, n, errors):
    try:
        a, b = randn(n, n, dtype=dtype), randn(n, n, dtype=dtype)
        ms, lo, hi, reps = timer.time(lambda: torch.mm(a, b))
        # Check accuracy on a few rows only: a float64 product of all of them is slow.
        rows = 64
        err = relerr(torch.mm(a[:rows], b), torch.mm(a[:rows].double(), b.double()))
    except RuntimeError as e:
        skip(f"{name} {n}^3", e, errors)
        return None
    flops = 2.0 * n ** 3
    print(f"  {name:12s} {n:5d}^3 {flops / ms / 1e9:6.1f} TFLOP/s", flush=True)
    return {"section": "matmul", "name": name, "dtype": dtype_label, "size": f"{n}^3",
            "flops": flops, "ms": ms, "ms_min": lo, "ms_max": hi, "reps": reps,
            "TFLOPs": flops / ms / 1e9, "relerr_vs_fp64": err,
            "note": "randn inputs; relerr on first rows vs float64"}


def launch_rows():
    """Launch costs of a tiny kernel: eager from Python, with a sync, inside a CUDA graph."""
    x = torch.randn(1024, device="cuda")
    launches = 1000
    rows = []

    gpu_ms, host_s = [], []
    for _ in range(7):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(launches):
            x.mul_(1.0)
        end.record()
        host_s.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        gpu_ms.append(start.elapsed_time(end))
    ms = statistics.median(gpu_ms)
    host_us = statistics.median(host_s) / launches * 1e6
    rows.append({"section": "launch", "name": "eager_1000_tiny", "dtype": "fp32",
                 "size": "1024 elems x1000", "ms": ms, "ms_min": min(gpu_ms),
                 "ms_max": max(gpu_ms), "reps": len(gpu_ms),
                 "note": f"per launch {ms / launches * 1e3:.2f} us (GPU span); "
                         f"host issue {host_us:.2f} us/launch"})

    # Host clock here: the round trip a synchronous step pays, which events cannot see.
    sync_ms = []
    for _ in range(200):
        t0 = time.perf_counter()
        x.mul_(1.0)
        torch.cuda.synchronize()
        sync_ms.append((time.perf_counter() - t0) * 1e3)
    rows.append({"section": "launch", "name": "single_launch_plus_sync", "dtype": "fp32",
                 "size": "1024 elems", "ms": statistics.median(sync_ms), "ms_min": min(sync_ms),
                 "ms_max": max(sync_ms), "reps": len(sync_ms),
                 "note": "host clock, launch + cudaDeviceSynchronize"})

    # Capture on a side stream after a warm-up there, as torch.cuda.graph requires.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.mul_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            x.mul_(1.0)
    graph.replay()
    graph_ms = []
    for _ in range(50):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        graph_ms.append(start.elapsed_time(end))
    ms = statistics.median(graph_ms)
    rows.append({"section": "launch", "name": "cudagraph_1000_tiny", "dtype": "fp32",
                 "size": "1024 elems x1000", "ms": ms, "ms_min": min(graph_ms),
                 "ms_max": max(graph_ms), "reps": len(graph_ms),
                 "note": f"per kernel {ms / launches * 1e3:.2f} us "
                         f"(one graph replay of {launches} kernels)"})
    for r in rows:
        print(f"  {r['name']:24s} {r['ms']:.4f} ms", flush=True)
    return rows


def measure_ceilings(timer, grid, errors):
    rows = []
    for gib in grid["copy_GiB"]:
        rows += bandwidth_rows(timer, gib, errors)
    for n in grid["mm_bf16_n"]:
        rows.append(matmul_row(timer, "mm_bf16", "bf16", torch.bfloat16, n, errors))
    # fp32 with and without TF32 tensor cores; restore the caller's setting after.
    saved = torch.get_float32_matmul_precision()
    for name, label, precision in (("mm_fp32_ieee", "fp32_ieee", "highest"),
                                   ("mm_fp32_tf32", "fp32_tf32", "high")):
        torch.set_float32_matmul_precision(precision)
        for n in grid["mm_fp32_n"]:
            rows.append(matmul_row(timer, name, label, torch.float32, n, errors))
    torch.set_float32_matmul_precision(saved)
    try:
        rows += launch_rows()
    except RuntimeError as err:
        skip("launch rows", err, errors)
    return [r for r in rows if r]


def copy_bandwidth(ceilings):
    """GB/s of the largest device-to-device copy: what membound rows are compared with."""
    copies = [r for r in ceilings if r["name"] == "d2d_copy"]
    return max(copies, key=lambda r: r["bytes"])["GBps"] if copies else None


def bf16_reference(ceilings):
    """TFLOP/s of the 8192^3 bf16 matmul (the best bf16 matmul if that one is missing)."""
    bf16 = [r for r in ceilings if r["name"] == "mm_bf16"]
    for r in bf16:
        if r["size"] == "8192^3":
            return r["TFLOPs"]
    return max(r["TFLOPs"] for r in bf16) if bf16 else None


# --- gemm.csv ----------------------------------------------------------------

def layer_gemms(h):
    """(name, output features, input features) of the four linear layers of a GPT block."""
    return [("qkv", 3 * h, h), ("attn_out", h, h), ("mlp_up", 4 * h, h), ("mlp_down", h, 4 * h)]


def gemm_case(T, out_f, in_f, pass_name):
    """Shape (M, N, K) and a callable for one of nn.Linear's three products.

    The operands keep nn.Linear's memory layouts (weight stored [out, in]), because
    cuBLAS picks different kernels for the different transposes of the three passes.
    """
    if pass_name == "fwd":                  # Y[T,out] = X[T,in] @ W[out,in]^T
        x, w = randn(T, in_f), randn(out_f, in_f)
        return (T, out_f, in_f), lambda: torch.mm(x, w.t())
    if pass_name == "dX":                   # dX[T,in] = dY[T,out] @ W[out,in]
        dy, w = randn(T, out_f), randn(out_f, in_f)
        return (T, in_f, out_f), lambda: torch.mm(dy, w)
    dy, x = randn(T, out_f), randn(T, in_f)  # dW[out,in] = dY^T @ X
    return (out_f, in_f, T), lambda: torch.mm(dy.t(), x)


def measure_gemm(timer, grid, peak_tflops, bf16_ref, errors):
    eff_col = gemm_columns(peak_tflops)[15]
    rows = []
    for h in grid["gemm_h"]:
        for T in grid["gemm_T"]:
            for name, out_f, in_f in layer_gemms(h):
                for pass_name in GEMM_PASSES:
                    what = f"gemm h={h} T={T} {name} {pass_name}"
                    try:
                        (M, N, K), fn = gemm_case(T, out_f, in_f, pass_name)
                        ms, lo, hi, reps = timer.time(fn)
                    except RuntimeError as err:
                        skip(what, err, errors)
                        continue
                    flops = 2.0 * M * N * K
                    bytes_min = 2.0 * (M * K + K * N + M * N)   # bf16 A, B read, C written
                    tflops = flops / ms / 1e9
                    rows.append({"h": h, "T": T, "gemm": name, "pass": pass_name,
                                 "M": M, "N": N, "K": K, "flops": flops,
                                 "bytes_min": bytes_min, "intensity": flops / bytes_min,
                                 "ms": ms, "ms_min": lo, "ms_max": hi, "reps": reps,
                                 "TFLOPs": tflops, eff_col: tflops / peak_tflops,
                                 "eff_vs_measured_bf16": tflops / bf16_ref if bf16_ref else None})
                    print(f"  {what:40s} {ms:9.4f} ms {tflops:6.1f} TFLOP/s", flush=True)
                    torch.cuda.empty_cache()   # the largest shapes need several GiB each
    return rows


# --- attention.csv -----------------------------------------------------------

def attention_backends():
    """[(label, SDPBackend)] of the backends this PyTorch knows; reports the others."""
    try:
        from torch.nn.attention import SDPBackend
    except ImportError:
        print("  skipping attention: this PyTorch has no torch.nn.attention.sdpa_kernel")
        return []
    found = []
    for label, attr in (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION")):
        backend = getattr(SDPBackend, attr, None)
        if backend is None:
            print(f"  skipping attention backend {label}: not in this PyTorch")
        else:
            found.append((label, backend))
    return found


def attention_row(timer, backend, heads, seq, causal, check_accuracy):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, d = 1, ATTN_HEAD_DIM
    q, k, v = (randn(b, heads, seq, d) for _ in range(3))
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    is_causal = bool(causal)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
        dout = torch.randn_like(out)

        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)

        def fwdbwd():
            # autograd.grad rather than backward(): no gradient accumulation kernels.
            o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=is_causal)
            return torch.autograd.grad(o, (qg, kg, vg), dout)

        fwd_ms, fwd_min, _, _ = timer.time(fwd)
        fb_ms, fb_min, _, _ = timer.time(fwdbwd)
    err = None
    if check_accuracy:
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                 is_causal=is_causal)
        err = relerr(out, ref)
    flops = 4.0 * b * heads * seq * seq * d * (0.5 if causal else 1.0)
    bwd_ms = fb_ms - fwd_ms
    return {"b": b, "heads": heads, "seq": seq, "head_dim": d, "causal": causal,
            "flops_fwd": flops, "fwd_ms": fwd_ms, "fwd_ms_min": fwd_min,
            "fwdbwd_ms": fb_ms, "fwdbwd_ms_min": fb_min, "bwd_ms": bwd_ms,
            "fwd_TFLOPs": flops / fwd_ms / 1e9,
            "bwd_TFLOPs": 2.5 * flops / bwd_ms / 1e9 if bwd_ms > 0 else None,
            "fwdbwd_TFLOPs": 3.5 * flops / fb_ms / 1e9,
            "relerr_vs_math_fp32": err, "note": ATTN_NOTE}


def backend_rows(timer, grid, label, backend, errors):
    rows = []
    for heads in grid["attn_heads"]:
        for seq in grid["attn_seq"]:
            for causal in (1, 0):
                what = f"attention {label} heads={heads} seq={seq} causal={causal}"
                try:
                    # The accuracy check runs once per backend, on its first row.
                    row = attention_row(timer, backend, heads, seq, causal, not rows)
                except RuntimeError as err:
                    skip(what, err, errors)
                    if not rows:
                        print(f"  skipping the {label} backend: it does not run here")
                        return rows
                    continue
                rows.append({"backend": label, **row})
                print(f"  {what:45s} fwd {row['fwd_TFLOPs']:6.1f} "
                      f"fwd+bwd {row['fwdbwd_TFLOPs']:6.1f} TFLOP/s", flush=True)
    return rows


def measure_attention(timer, grid, errors):
    rows = []
    for label, backend in attention_backends():
        rows += backend_rows(timer, grid, label, backend, errors)
    return rows


# --- membound.csv ------------------------------------------------------------

def membound_rows(timer, op, forward, tensors, needs_grad, bytes_fwd, bytes_fwdbwd,
                  note, copy_gbps):
    """fwd row, and a fwd+bwd row when bytes_fwdbwd is given (gradients of needs_grad)."""
    shape = "x".join(str(s) for s in tensors[0].shape)
    rows = []

    def row(pass_name, nbytes, fn):
        ms, lo, hi, reps = timer.time(fn)
        gbps = nbytes / ms / 1e6
        rows.append({"op": op, "shape": shape, "dtype": "bfloat16", "pass": pass_name,
                     "bytes_model": nbytes, "ms": ms, "ms_min": lo, "ms_max": hi,
                     "reps": reps, "GBps": gbps,
                     "frac_of_copy_bw": gbps / copy_gbps if copy_gbps else None,
                     "note": note})
        print(f"  {op:26s} {shape:12s} {pass_name:8s} {gbps:7.0f} GB/s", flush=True)

    row("fwd", bytes_fwd, lambda: forward(*tensors))
    if bytes_fwdbwd:
        leaves = [t.detach().requires_grad_(g) for t, g in zip(tensors, needs_grad)]
        wrt = [t for t, g in zip(leaves, needs_grad) if g]
        dy = torch.randn_like(forward(*tensors))
        row("fwd+bwd", bytes_fwdbwd,
            lambda: torch.autograd.grad(forward(*leaves), wrt, dy))
    return rows


def layernorm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b)


def rmsnorm(x, w):
    return F.rms_norm(x, x.shape[-1:], w)


def residual_add(a, b):
    return a + b


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def gelu_none(x):
    return F.gelu(x)


def cross_entropy_bf16(logits, target):
    return F.cross_entropy(logits, target)


def cross_entropy_fp32_upcast(logits, target):
    # What a loss that keeps fp32 logits does: an upcast copy, then the loss.
    return F.cross_entropy(logits.float(), target)


def membound_cases(grid):
    """(op, forward, make tensors, which need gradients, bytes fwd, bytes fwd+bwd, note)."""
    T = TOKENS_MEMBOUND
    cases = []
    for h in grid["norm_h"]:
        act = T * h * 2                      # bytes of one [T, h] bf16 tensor
        mlp = T * 4 * h * 2                  # bytes of one [T, 4h] bf16 tensor
        cases += [
            ("layernorm", layernorm, lambda h=h: [randn(T, h), randn(h), randn(h)],
             [True, True, True], 2 * act, 5 * act, NORM_NOTE),
            ("rmsnorm", rmsnorm, lambda h=h: [randn(T, h), randn(h)],
             [True, True], 2 * act, 5 * act, RMS_NOTE),
            ("residual_add", residual_add, lambda h=h: [randn(T, h), randn(T, h)],
             [True, True], 3 * act, None, ADD_NOTE),
            ("gelu_tanh", gelu_tanh, lambda h=h: [randn(T, 4 * h)],
             [True], 2 * mlp, 5 * mlp, GELU_NOTE),
            ("gelu_none", gelu_none, lambda h=h: [randn(T, 4 * h)],
             [True], 2 * mlp, 5 * mlp, GELU_NOTE),
        ]
    for vocab in grid["vocab"]:
        logits = T * vocab * 2
        make = (lambda vocab=vocab: [randn(T, vocab),
                                     torch.randint(0, vocab, (T,), device="cuda")])
        for op, fn in (("cross_entropy_bf16", cross_entropy_bf16),
                       ("cross_entropy_fp32_upcast", cross_entropy_fp32_upcast)):
            cases.append((op, fn, make, [True, False], logits, 3 * logits, CE_NOTE))
    return cases


def measure_membound(timer, grid, copy_gbps, errors):
    rows = []
    for op, forward, make, needs_grad, b_fwd, b_fwdbwd, note in membound_cases(grid):
        if op == "rmsnorm" and not hasattr(F, "rms_norm"):
            skip("rmsnorm", "this PyTorch has no F.rms_norm (2.4 or later does)", errors)
            continue
        try:
            rows += membound_rows(timer, op, forward, make(), needs_grad, b_fwd, b_fwdbwd,
                                  note, copy_gbps)
        except RuntimeError as err:
            skip(op, err, errors)
    return rows


# --- Output ------------------------------------------------------------------

def fmt(value):
    """Like the shipped tables: 6 significant digits for measured figures, ints exact."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)     # CRLF line ends, quoting as needed: as the shipped files
        out.writerow(columns)
        for r in rows:
            out.writerow([fmt(r.get(c)) for c in columns])
    print(f"wrote {path} ({len(rows)} rows)", flush=True)


def nvidia_smi(*args):
    if not shutil.which("nvidia-smi"):
        return None
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        return f"nvidia-smi failed: {err}"


def smi_state():
    """Driver, clocks, power and temperature now: clocks drift under sustained load."""
    return nvidia_smi("--query-gpu=name,driver_version,pci.bus_id,memory.total,"
                      "clocks.current.sm,clocks.max.sm,clocks.current.memory,"
                      "clocks.max.memory,power.draw,power.limit,temperature.gpu,pstate",
                      "--format=csv")


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def sdpa_default_kernels():
    """Kernel names PyTorch's default attention runs here (which backend it picks)."""
    try:
        q, k, v = (randn(1, 16, 1024, ATTN_HEAD_DIM).requires_grad_() for _ in range(3))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.autograd.grad(out, (q, k, v), torch.randn_like(out))
            torch.cuda.synchronize()
        return sorted({e.name[:120] for e in prof.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA})
    except Exception as err:   # only informative: never stop the run for it
        return [f"unavailable: {err}"]


def environment(args):
    props = torch.cuda.get_device_properties(0)
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "triton": package_version("triton"),
        "gpu_name": props.name,
        "gpu_cc": f"{props.major}.{props.minor}",
        "gpu_sms": props.multi_processor_count,
        "gpu_mem_bytes": props.total_memory,
        "gpu_l2_bytes": getattr(props, "L2_cache_size", None),
        "cublas_bf16_reduced_precision_reduction":
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "args": {"quick": args.quick, "peak_tflops": args.peak_tflops},
        "nvidia_smi_start": smi_state(),
        "nvidia_smi_L": nvidia_smi("-L"),
    }
    try:
        env["torch_clock_rate_mhz"] = torch.cuda.clock_rate()   # needs pynvml; often absent
    except Exception:
        pass
    env["sdpa_default"] = {
        "flash_sdp_enabled": torch.backends.cuda.flash_sdp_enabled(),
        "mem_efficient_sdp_enabled": torch.backends.cuda.mem_efficient_sdp_enabled(),
        "cudnn_sdp_enabled": getattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: None)(),
        "math_sdp_enabled": torch.backends.cuda.math_sdp_enabled(),
        "default_kernels": sdpa_default_kernels(),
    }
    return env


def ceilings_summary(ceilings):
    summary = {"copy_GBps": copy_bandwidth(ceilings)}
    for r in ceilings:
        if r["section"] == "matmul":
            summary[f"{r['name']}_{r['size'].split('^')[0]}"] = r["TFLOPs"]
        elif r["section"] == "launch":
            summary[r["name"] + "_ms"] = r["ms"]
    return summary


# --- Main ----------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(
        description="Measure GPU kernel tables for clustersim's compute model "
                    "(needs a CUDA GPU).")
    p.add_argument("--out", required=True, help="folder to write the five files into")
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="the GPU's datasheet dense bf16 TFLOP/s, for the efficiency "
                        "column (default 989, H100/H200 SXM)")
    p.add_argument("--quick", action="store_true",
                   help="a few sizes per table and few repetitions (about a minute)")
    return p.parse_args()


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("measure_kernels.py: no CUDA device (torch.cuda.is_available() is False); "
                 "run it on a machine with an NVIDIA GPU and a CUDA build of PyTorch")
    if args.peak_tflops <= 0:
        sys.exit("measure_kernels.py: --peak-tflops must be positive")
    os.makedirs(args.out, exist_ok=True)
    grid = QUICK if args.quick else FULL
    started = time.time()
    torch.manual_seed(0)
    errors = []

    print(f"{torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}, "
          f"{'quick' if args.quick else 'full'} grid", flush=True)
    env = environment(args)
    timer = Timer(grid)

    print("ceilings", flush=True)
    ceilings = measure_ceilings(timer, grid, errors)
    write_csv(os.path.join(args.out, "ceilings.csv"), CEILING_COLUMNS, ceilings)

    print("gemm", flush=True)
    gemm = measure_gemm(timer, grid, args.peak_tflops, bf16_reference(ceilings), errors)
    write_csv(os.path.join(args.out, "gemm.csv"), gemm_columns(args.peak_tflops), gemm)

    print("attention", flush=True)
    attention = measure_attention(timer, grid, errors)
    write_csv(os.path.join(args.out, "attention.csv"), ATTN_COLUMNS, attention)

    print("membound", flush=True)
    membound = measure_membound(timer, grid, copy_bandwidth(ceilings), errors)
    write_csv(os.path.join(args.out, "membound.csv"), MEMBOUND_COLUMNS, membound)

    env["nvidia_smi_end"] = smi_state()
    env["ceilings"] = ceilings_summary(ceilings)
    env["errors"] = errors
    env["wall_s"] = round(time.time() - started, 1)
    with open(os.path.join(args.out, "env.json"), "w") as f:
        json.dump(env, f, indent=1)
    print(f"wrote {os.path.join(args.out, 'env.json')}")

    print(f"\ndone in {env['wall_s']:.0f} s; {len(errors)} rows skipped" +
          (" (listed in env.json)" if errors else ""))
    print("Next, fit the GEMM table for clustersim (PRESET: the GPU it was measured on, "
          "see `clustersim presets`):")
    print(f"  clustersim calibrate gemm {os.path.join(args.out, 'gemm.csv')} "
          f"--gpu PRESET -o calibration/NAME")


if __name__ == "__main__":
    main()
