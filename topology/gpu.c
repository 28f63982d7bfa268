/*
 * gpu.c - GPU presets. Peak rates are the datasheets' dense figures (the
 * tensor-core figures NVIDIA prints "with sparsity" are twice these);
 * capacities are what nvidia-smi reports where we know it (ARCHITECTURE.md).
 */
#include "topology/topo.h"

#include <string.h>

#define MiB (1024.0 * 1024.0)

const struct topo_gpu topo_gpus[] = {
	{
		.name = "A100-SXM-80GB",
		.fp32 = 19.5e12, .tf32 = 156e12, .bf16 = 312e12, .fp8 = 0,
		.hbm_Bps = 2.039e12, .mem_bytes = 81920 * MiB,
		.source = "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): FP32 19.5, "
			  "TF32 156, BF16 312 TFLOPS dense, 2,039 GB/s; no FP8; 81,920 MiB "
			  "per nvidia-smi",
	},
	{
		.name = "H100-SXM-80GB",
		.fp32 = 67e12, .tf32 = 494.7e12, .bf16 = 989.4e12, .fp8 = 1978.9e12,
		.hbm_Bps = 3.35e12, .mem_bytes = 81559 * MiB,
		.source = "NVIDIA H100 Tensor Core GPU datasheet (SXM5): FP32 67, TF32 989, "
			  "BF16 1,979, FP8 3,958 TFLOPS with sparsity (halved here), 3.35 TB/s; "
			  "81,559 MiB per nvidia-smi",
	},
	{
		.name = "H200-SXM-141GB",
		.fp32 = 67e12, .tf32 = 494.7e12, .bf16 = 989.4e12, .fp8 = 1978.9e12,
		.hbm_Bps = 4.8e12, .mem_bytes = 143771 * MiB,
		.source = "NVIDIA H200 Tensor Core GPU datasheet (SXM): same compute as H100 "
			  "SXM, 4.8 TB/s HBM3e; 143,771 MiB per nvidia-smi (shared/calibration)",
	},
	{
		.name = "B200",
		.fp32 = 75e12, .tf32 = 1.125e15, .bf16 = 2.25e15, .fp8 = 4.5e15,
		.hbm_Bps = 8e12, .mem_bytes = 180e9,
		.source = "NVIDIA HGX B200 datasheet, per GPU (8-GPU totals / 8): FP32 75 "
			  "TFLOPS, TF32 2.25, BF16 4.5, FP8 9 PFLOPS with sparsity (halved "
			  "here), 8 TB/s; 180 GB (1,440 GB / 8; nvidia-smi figure not known)",
	},
};

const size_t topo_ngpus = ARRAY_SIZE(topo_gpus);

const struct topo_gpu *topo_gpu_find(const char *name)
{
	for (size_t i = 0; i < topo_ngpus; i++)
		if (strcmp(topo_gpus[i].name, name) == 0)
			return &topo_gpus[i];
	return NULL;
}
