#!/usr/bin/env python3
"""Measure the GPU memory a training process holds beyond its tensors.

What a layout's tensors need (weights, gradients, optimizer states,
activations) is what the simulator counts. A real process holds more:

- the CUDA context (the driver's per-process state, the kernels' code),
  and the workspaces the libraries allocate on first use: cuBLAS's for
  matmuls, the attention kernels' (PyTorch's scaled_dot_product_attention),
  NCCL's for a communicator (here one of one rank: NCCL's device state
  without peers; the buffers it allocates per peer and channel need a
  second GPU);
- the caching allocator's slack: PyTorch keeps freed blocks for reuse, so
  at a step's peak it has reserved more from the driver than the tensors
  then alive occupy (fragmentation); run it with and without
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (what Megatron-LM's and
  TorchTitan's recipes set) to see both.

The context and workspaces are measured as the device's used memory
(torch.cuda.mem_get_info: total - free) less what the allocator has
reserved, after each first use. The slack is measured over training steps
of a stack of transformer layers (bf16, Adam), for several micro-batches
and sequence lengths: the largest reserved bytes over the largest
allocated bytes, less one, from torch.cuda.max_memory_reserved and
max_memory_allocated.

Writes DIR/memory.csv (what, bytes or share, detail) and DIR/memory-env.json
(device, software). Needs PyTorch with CUDA; it cannot run in CI.

    python3 tools/measure_memory.py --out DIR
"""
import argparse
import datetime
import json
import os


def used(torch):
    free, total = torch.cuda.mem_get_info()
    return total - free


def outside(torch):
    """Device memory the caching allocator did not reserve."""
    torch.cuda.synchronize()
    return used(torch) - torch.cuda.memory_reserved()


def layer_stack(torch, hidden, layers, heads):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            self.out = nn.Linear(hidden, hidden, bias=False)
            self.norm2 = nn.LayerNorm(hidden)
            self.up = nn.Linear(hidden, 4 * hidden, bias=False)
            self.down = nn.Linear(4 * hidden, hidden, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, heads, h // heads).unbind(2)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            x = x + self.out(a.transpose(1, 2).reshape(b, s, h))
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))

    return nn.Sequential(*[Block() for _ in range(layers)])


def slack(torch, hidden, layers, heads, batch, seq, steps):
    """Reserved over allocated at the peak, less one, over training steps."""
    dev = torch.device("cuda", 0)
    model = layer_stack(torch, hidden, layers, heads).to(dev, torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(steps):
        x = torch.randn(batch, seq, hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
        model(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    res, alloc = torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()
    del model, opt, x
    torch.cuda.empty_cache()
    return res, alloc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for memory.csv and memory-env.json")
    ap.add_argument("--steps", type=int, default=8, help="training steps per shape")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import torch.distributed as dist
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    rows = []
    torch.zeros(1, device=dev)   # the context
    base = outside(torch)
    rows.append(("cuda_context", base, "device used less allocator reserved after the first tensor"))
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    (a @ a).sum().item()
    after = outside(torch)
    rows.append(("cublas_workspace", after - base, "growth at the first bf16 matmul"))
    base = after
    q = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16)
    torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().item()
    after = outside(torch)
    rows.append(("attention_workspace", after - base, "growth at the first causal SDPA"))
    base = after
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    t = torch.ones(1 << 20, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    after = outside(torch)
    rows.append(("nccl_one_rank", after - base, "growth at a one-rank communicator's first all-reduce"))
    dist.destroy_process_group()
    shapes = [(4096, 4, 32, b, s) for b, s in ((1, 4096), (2, 4096), (1, 16384))] + \
             [(8192, 2, 64, b, s) for b, s in ((1, 4096), (2, 8192))]
    worst = 0.0
    for hidden, layers, heads, b, s in shapes:
        res, alloc = slack(torch, hidden, layers, heads, b, s, args.steps)
        share = res / alloc - 1
        worst = max(worst, share)
        rows.append(("allocator_slack", share,
                     f"hidden {hidden}, {layers} layers, micro-batch {b} x {s}: reserved {res} "
                     f"over allocated {alloc}"))
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    rows.append(("allocator_slack_max", worst, "the largest of the shapes above; "
                 "PYTORCH_CUDA_ALLOC_CONF=" + (conf or "(unset)")))
    with open(os.path.join(args.out, "memory.csv"), "w") as f:
        f.write("what,value,detail\n")
        for what, v, detail in rows:
            f.write(f"{what},{v:.6g},\"{detail}\"\n")
    env = {
        "device": torch.cuda.get_device_name(0),
        "memory_bytes": torch.cuda.get_device_properties(0).total_memory,
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "date": datetime.date.today().isoformat(),
        "command": "python3 tools/measure_memory.py --out " + args.out,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    with open(os.path.join(args.out, "memory-env.json"), "w") as f:
        json.dump(env, f, indent=1)
    for what, v, detail in rows:
        print(f"{what:22s} {v:14.6g}  {detail}")


if __name__ == "__main__":
    main()
