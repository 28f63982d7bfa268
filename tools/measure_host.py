#!/usr/bin/env python3
"""Measure the host's and the GPU's cost of one call: kernels and NCCL collectives.

A training step's kernels and collectives are issued by one host thread.
Each call costs the host some time (Python, PyTorch's dispatcher, c10d,
NCCL's enqueue) and the GPU some time of its own (the kernel's launch and
NCCL's set-up, beyond the data it moves). The two are measured apart:

- host: the GPU is first given a long sleep kernel (torch.cuda._sleep), so
  that every call of the window only queues; the host's time per call is
  the wall time of the window over the calls (perf_counter).
- GPU: the same window's calls run back to back on the GPU once the sleep
  ends; their GPU time per call is the time from an event recorded after
  the sleep to one recorded after the last call, over the calls.

Calls: an empty kernel (a C++ extension, launched from Python), a small
torch.matmul (PyTorch's dispatcher), and, on a one-rank NCCL communicator
(torch.distributed, backend nccl, world size 1: NCCL's host path and
device set-up without a network), all_reduce, all_gather_into_tensor,
reduce_scatter_tensor, all_to_all_single, broadcast and the list form
all_gather, from 4 bytes to 16 MiB. (Sends and receives need a second rank:
NCCL refuses a send to oneself.)

Writes DIR/host.csv (op, bytes, host_us_per_call, gpu_us_per_call) and
DIR/host-env.json (device, software). Needs PyTorch with CUDA and nvcc; it
cannot run in CI.

    python3 tools/measure_host.py --out DIR [--calls 500]
"""
import argparse
import datetime
import json
import os
import statistics
import tempfile
import time

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
__global__ void empty_kernel() {}
void launch_empty()
{
    empty_kernel<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>();
}
"""
CPP_SRC = "void launch_empty();\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for host.csv and host-env.json")
    ap.add_argument("--calls", type=int, default=500, help="calls per window")
    ap.add_argument("--trials", type=int, default=5, help="windows per figure (median)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import torch.distributed as dist
    from torch.utils.cpp_extension import load_inline
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    ext = load_inline(name="clustersim_host", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                      functions=["launch_empty"],
                      extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"],
                      verbose=False)
    # Cycles of sleep that outlast a window of calls (checked below).
    sleep_cycles = 2_000_000_000

    def window(call):
        """(host us, GPU us) per call of one window queued behind a sleep."""
        torch.cuda.synchronize()
        after_sleep = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(sleep_cycles)
        after_sleep.record()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            call()
        host = (time.perf_counter() - t0) / args.calls
        end.record()
        queued = not after_sleep.query()  # the sleep outlasted the window
        torch.cuda.synchronize()
        if not queued:
            raise SystemExit("the sleep ended before the window did: raise sleep_cycles")
        return host * 1e6, after_sleep.elapsed_time(end) * 1e3 / args.calls

    def measure(name, nbytes, call):
        for _ in range(20):
            call()
        runs = [window(call) for _ in range(args.trials)]
        h = statistics.median(r[0] for r in runs)
        g = statistics.median(r[1] for r in runs)
        rows.append((name, nbytes, h, g))
        print("%-28s %9d B  host %.2f us a call, GPU %.2f us a call" % (name, nbytes, h, g),
              flush=True)

    rows = []
    measure("empty_kernel", 0, ext.launch_empty)
    a = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    measure("torch_matmul_64", 0, lambda: torch.matmul(a, a))
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("nccl", init_method="file://" + os.path.join(d, "pg"),
                                rank=0, world_size=1, device_id=dev)
        for nbytes in [4, 4096, 65536, 1 << 20, 16 << 20]:
            t = torch.ones(max(1, nbytes // 4), device=dev)
            big = torch.empty_like(t)
            lst = [torch.empty_like(t)]
            for op, call in (
                    ("nccl_all_reduce", lambda: dist.all_reduce(t)),
                    ("nccl_all_gather_into_tensor", lambda: dist.all_gather_into_tensor(big, t)),
                    ("nccl_reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(big, t)),
                    ("nccl_all_to_all_single", lambda: dist.all_to_all_single(big, t)),
                    ("nccl_broadcast", lambda: dist.broadcast(t, 0)),
                    ("nccl_all_gather_list", lambda: dist.all_gather(lst, t))):
                measure(op, nbytes, call)
        dist.destroy_process_group()
    with open(os.path.join(args.out, "host.csv"), "w") as f:
        f.write("op,bytes,host_us_per_call,gpu_us_per_call\n")
        for op, nb, h, g in rows:
            f.write("%s,%d,%.4g,%.4g\n" % (op, nb, h, g))
    props = torch.cuda.get_device_properties(dev)
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "calls": args.calls, "trials": args.trials, "cpu": os.cpu_count(),
    }
    with open(os.path.join(args.out, "host-env.json"), "w") as f:
        json.dump(env, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
