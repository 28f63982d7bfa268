#!/usr/bin/env python3
"""Measure NCCL all-reduce on the GPUs of one machine, as all_reduce_perf would.

Prints a table in the format of nccl-tests' all_reduce_perf (docs/calibration.md,
"nccl-tests logs"), which `clustersim calibrate nccl --inplace` reads:

    python3 tools/measure_allreduce.py --gpus 8 > ar.txt
    NCCL_PROTO=Simple python3 tools/measure_allreduce.py --gpus 8 > ar-simple.txt
    clustersim calibrate nccl --inplace ar.txt

One process per GPU (torch.multiprocessing, NCCL backend, fp32 sum). PyTorch's
all_reduce works in place, so the times are in the in-place columns and the
out-of-place ones say N/A. Each size runs --warmup times, then --iters times
between two CUDA events on rank 0 after a barrier; the figure is the mean per
call, as all_reduce_perf reports it. Bus bandwidth is nccl-tests': the
algorithm bandwidth times 2(n-1)/n. NCCL's own environment (NCCL_ALGO,
NCCL_PROTO, NCCL_NVLS_ENABLE, ...) applies and is printed in the header, so a
sweep says which algorithm and protocol it was allowed.

--check prints, instead of the sweep, a test of whether the sweep's figures
are steady: every size timed with 5, 20 and 200 iterations in ascending
order, then with 20 in descending order, then the single-call times of the
smallest and the largest size. If the per-call time moved with the count or
the order, the sweep would be measuring warm-up (clocks, caches), not the
collective:

    python3 tools/measure_allreduce.py --gpus 2 --check --min-bytes 67108864 > check.txt

Needs PyTorch with CUDA and at least --gpus GPUs; it cannot run in CI.
"""
import argparse
import os
import socket
import sys


def sizes(lo, hi):
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def header(args, names, env):
    lines = [
        "# measure_allreduce.py (clustersim tools/): all_reduce_perf's table, times "
        "from torch.distributed (NCCL), in place",
        "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: %d "
        "iters: %d agg iters: 1 validation: 0 graph: 0"
        % (args.min_bytes, args.max_bytes, args.warmup, args.iters),
    ]
    for k in sorted(env):
        lines.append("# env %s=%s" % (k, env[k]))
    lines += ["#", "# Using devices"]
    host = socket.gethostname() or "node0"
    for r, name in enumerate(names):
        lines.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] %s"
                     % (r, os.getpid(), host, r, r, name))
    lines += [
        "#",
        "# Collective test starting: all_reduce_perf",
        "#",
        "#                                                              out-of-place"
        "                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw"
        " #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)       ",
    ]
    return lines


def row(nbytes, n, t_us):
    algbw = nbytes / (t_us * 1e-6) / 1e9
    busbw = algbw * 2 * (n - 1) / n
    return ("%12d  %12d     float     sum      -1      N/A     N/A     N/A    N/A  %7.1f"
            " %7.2f %7.2f      0" % (nbytes, nbytes // 4, t_us, algbw, busbw))


def timed(dist, torch, x, iters, per_call=False):
    """Mean microseconds per all_reduce of x over iters calls, or each call's."""
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1 if per_call else 2)]
    ev[0].record()
    for i in range(iters):
        dist.all_reduce(x)
        if per_call:
            ev[i + 1].record()
    if not per_call:
        ev[1].record()
    torch.cuda.synchronize()
    if per_call:
        return [ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(iters)]
    return ev[0].elapsed_time(ev[1]) * 1e3 / iters


def check(dist, torch, buf, args):
    """The --check rows: (label, bytes, mean us) and (label, bytes, [us per call])."""
    ss = sizes(args.min_bytes, args.max_bytes)
    for s in ss:
        for _ in range(args.warmup):
            dist.all_reduce(buf[: s // 4])
    out = []
    for iters in (5, 20, 200):
        for s in ss:
            out.append(("up, %d iters" % iters, s, timed(dist, torch, buf[: s // 4], iters)))
    for s in reversed(ss):
        out.append(("down, 20 iters", s, timed(dist, torch, buf[: s // 4], 20)))
    for s in sorted({ss[0], ss[-1]}):
        out.append(("each of 60 calls", s, timed(dist, torch, buf[: s // 4], 60, True)))
    return out


def worker(rank, args, port, queue):
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.gpus,
                            device_id=torch.device("cuda", rank))
    out = []
    buf = torch.ones(args.max_bytes // 4, dtype=torch.float32, device="cuda")
    if args.check:
        out = check(dist, torch, buf, args)
    else:
        for s in sizes(args.min_bytes, args.max_bytes):
            x = buf[: s // 4]
            for _ in range(args.warmup):
                dist.all_reduce(x)
            out.append((s, timed(dist, torch, x, args.iters)))
    if rank == 0:
        names = [torch.cuda.get_device_name(i) for i in range(args.gpus)]
        queue.put((names, out))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpus", type=int, default=0, help="GPUs (default: all visible)")
    p.add_argument("--min-bytes", type=int, default=1 << 20)
    p.add_argument("--max-bytes", type=int, default=1 << 31)
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before each size")
    p.add_argument("--iters", type=int, default=20,
                   help="timed calls per size (--check times 5, 20 and 200)")
    p.add_argument("--check", action="store_true",
                   help="test that the figures do not move with iteration count or order")
    args = p.parse_args()
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        sys.exit("measure_allreduce.py: needs PyTorch (import torch failed)")
    if not torch.cuda.is_available():
        sys.exit("measure_allreduce.py: no CUDA GPU")
    if args.gpus <= 0:
        args.gpus = torch.cuda.device_count()
    if args.gpus < 2 or args.gpus > torch.cuda.device_count():
        sys.exit("measure_allreduce.py: --gpus %d, but %d GPUs are visible (2 or more needed)"
                 % (args.gpus, torch.cuda.device_count()))
    if args.min_bytes < 4 or args.min_bytes % 4 or args.max_bytes < args.min_bytes:
        sys.exit("measure_allreduce.py: sizes must be multiples of 4 bytes, min <= max")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, port, queue)) for r in range(args.gpus)]
    for pr in procs:
        pr.start()
    names, rows = queue.get()
    for pr in procs:
        pr.join()
        if pr.exitcode:
            sys.exit("measure_allreduce.py: a worker failed (exit %d)" % pr.exitcode)
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
    env["torch"] = torch.__version__
    env["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
    if args.check:
        print_check(args, names, env, rows)
        return
    print("\n".join(header(args, names, env)))
    for s, t in rows:
        print(row(s, args.gpus, t))


def print_check(args, names, env, rows):
    print("# measure_allreduce.py --check: all_reduce per-call times, %d x %s"
          % (args.gpus, names[0]))
    print("# minBytes %d maxBytes %d step: 2(factor) warmup iters: %d"
          % (args.min_bytes, args.max_bytes, args.warmup))
    for k in sorted(env):
        print("# env %s=%s" % (k, env[k]))
    print("# %-18s %12s %10s %8s" % ("timing", "size(B)", "time(us)", "busbw"))
    f = 2 * (args.gpus - 1) / args.gpus
    for label, s, t in rows:
        if isinstance(t, list):
            print("# %s, %d B, us: %s" % (label, s, " ".join("%.0f" % v for v in t)))
        else:
            print("  %-18s %12d %10.1f %8.2f" % (label, s, t, s * f / t / 1e3))


if __name__ == "__main__":
    main()
