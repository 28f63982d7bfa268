/*
 * test_result_text.c - unit tests for parallel/result_text.c, the text form
 * of a run's result: the report's lines of a known report, byte for byte
 * (fitting, not fitting, with the pipeline, experts, offload, variability
 * and failures lines, and without them), and the text and JSON of a known
 * run of two jobs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/goodput.h"
#include "parallel/jobs.h"
#include "parallel/result_text.h"
#include "sim/store.h"
#include "tests/checkmain.h"

/* What fn printed, as a string the caller frees. */
#define TEXT_OF(call)                                                           \
	({                                                                      \
		char *buf_ = NULL;                                              \
		size_t len_ = 0;                                                \
		FILE *out = open_memstream(&buf_, &len_);                       \
		ck_assert_ptr_nonnull(out);                                     \
		call;                                                           \
		fclose(out);                                                    \
		buf_;                                                           \
	})

static void known(struct par_report *r, struct par_result_setting *s)
{
	*r = (struct par_report){
		.strategy = "zero1", .gpus = 16, .dp = 2, .micro_batches = 4,
		.step_time_s = 1.5, .tokens_per_s = 1234.56789012, .mfu = 0.5, .hfu = 0.123456789,
		.params = 1.3e9,
		.memory = { .bytes = { 1e9, 2e9, 3e9, 4e9 }, .model_states = 6e9, .peak = 10e9,
			    .capacity = 80e9, .fits = true },
		.breakdown = { 1, 0.25, 0.125, 0.125 },
		.critical_rank = 5, .busiest_stage = 1, .pipeline_s = 1.25,
		.steps = 1,
	};
	*s = (struct par_result_setting){
		.preset = "gpt3-1.3b", .gpu = "H200", .cluster = "dgx-h200", .fidelity = "flow",
		.layers = 24, .hidden = 2048, .tp = 2, .pp = 4, .cp = 1, .ep = 1, .micro_batch = 1,
		.seq = 2048, .jitter = "none", .gpu_speed = "none", .seed = 1,
	};
}

static const char known_head[] =
	"  model       gpt3-1.3b: 1.30 B parameters, 24 layers, hidden 2048\n"
	"  cluster     16 x H200 (dgx-h200), flow fidelity\n"
	"  layout      dp 2 (zero1), tp 2, pp 4, cp 1; 4 micro-batches of 1 x 2048 tokens per "
	"replica\n"
	"  memory      peak 10.00 GB of 80.00 GB per GPU with 0.00 GB reserved: fits; model "
	"states 6.00 GB held from the start\n"
	"             at the peak: weights 1.00 GB, grads 2.00 GB, optimizer 3.00 GB, "
	"activations 4.00 GB, logits 0.00 GB, buffers 0.00 GB";

START_TEST(test_text_known)
{
	struct par_report r;
	struct par_result_setting s;
	known(&r, &s);
	char *t = TEXT_OF(par_result_text(out, &s, &r));
	char *want;
	ck_assert_int_gt(asprintf(&want, "%s%s", known_head,
		"\n  step time   1.500000 s   tokens/s 1235   MFU 0.5000   HFU 0.1235 (causal FLOPs)\n"
		"  rank 5      compute 1.000000 s, exposed communication 0.250000 s, bubble "
		"0.125000 s, idle 0.125000 s\n"
		"  pipeline    bubble 0.1000 of the pipeline phase (1.250000 s, first forward to "
		"last backward of rank 5); memory peaks on stage 1\n"), 0);
	ck_assert_str_eq(t, want);
	free(t);
	free(want);
}
END_TEST

/* Out of memory: the lines stop after the memory (and options) lines. */
START_TEST(test_text_unfit)
{
	struct par_report r;
	struct par_result_setting s;
	known(&r, &s);
	r.memory.fits = false;
	r.micro_batches = 1;
	s.preset = "";
	s.experts = 8, s.top_k = 2, s.ep = 4;
	r.moe.imbalance = 1.25, r.moe.dropped = 0.015, r.moe.imbalance_s = 0.002;
	s.offload = 1;
	r.offload.saved_bytes = 5e9, r.offload.host_s = 0.5;
	char *t = TEXT_OF(par_result_text(out, &s, &r));
	ck_assert_ptr_nonnull(strstr(t, "  model       1.30 B parameters, 24 layers"));
	ck_assert_ptr_nonnull(strstr(t, "; 1 micro-batch of 1 x 2048 tokens"));
	ck_assert_ptr_nonnull(strstr(t, "reserved: OUT OF MEMORY;"));
	const char *tail = strstr(t, "buffers 0.00 GB\n");
	ck_assert_ptr_nonnull(tail);
	ck_assert_str_eq(tail,
		"buffers 0.00 GB\n"
		"  experts     8 experts, top 2, EP 4: the busiest GPU routes 1.250x the even share "
		"(1.5 % of tokens dropped over capacity), adding 0.002000 s per step\n"
		"  offload     5.00 GB of optimizer states on the CPU; PCIe copies and the CPU step "
		"take 0.500000 s per step\n");
	free(t);
}
END_TEST

/* Steps, variability and failures lines, and their absence. */
START_TEST(test_text_lines)
{
	struct par_report r;
	struct par_result_setting s;
	known(&r, &s);
	s.pp = 1;
	r.steps = 3, r.step_p50_s = 1.25, r.step_p90_s = 1.5, r.step_p99_s = 1.75;
	r.step_min_s = 1, r.step_max_s = 2;
	s.jitter = "lognormal", s.jitter_cv = 0.05, s.stragglers = 3, s.straggler_slowdown = 1.5;
	s.seed = 42;
	r.stragglers[0] = 3, r.stragglers[1] = 7, r.nstragglers = 2;
	r.goodput = (struct par_goodput){ .job_mtbf_s = 7200, .checkpoint_bytes = 2e9,
					  .checkpoint_s = 4, .interval_s = 300, .young_s = 250,
					  .goodput = 0.5, .failures = 12.5, .useful_s = 86400 };
	char *t = TEXT_OF(par_result_text(out, &s, &r));
	const char *from = strstr(t, "  steps");
	ck_assert_ptr_nonnull(from);
	ck_assert_str_eq(from,
		"  steps       3: p50 1.250000 s, p90 1.500000 s, p99 1.750000 s (min 1.000000, "
		"max 2.000000)\n"
		"  variability kernel jitter lognormal (cv 0.05), GPU speed none, 3 stragglers 1.5x "
		"slower (rank 3, 7, ...); seed 42\n"
		"  failures    job MTBF 2.00 h over 16 GPUs; checkpoint 2.0 GB in 4.0 s, every 300 s "
		"(Daly; Young 250 s): goodput 0.5000, 12.5 interruptions and 1.00 days of training "
		"in 2.0 days\n"
		"  rank 5      compute 1.000000 s, exposed communication 0.250000 s, bubble "
		"0.125000 s, idle 0.125000 s\n");
	free(t);
	/* Nothing to say: no line at all. */
	known(&r, &s);
	t = TEXT_OF(par_result_variability(out, &s, r.stragglers, 0));
	ck_assert_str_eq(t, "");
	free(t);
	t = TEXT_OF(par_result_failures(out, "x", &r.goodput, 16));
	ck_assert_str_eq(t, "");
	free(t);
	s.gpu_speed = "normal", s.gpu_cv = 0.1;
	t = TEXT_OF(par_result_variability(out, &s, r.stragglers, 0));
	ck_assert_str_eq(t, "  variability kernel jitter none, GPU speed normal (cv 0.1); seed 1\n");
	free(t);
}
END_TEST

/* Two jobs, one of them out of memory, one link they share. */
static void two_jobs(struct sim_store_job_row job[2], struct par_link_share *link,
		     struct par_goodput g[2], struct par_jobs_view *v)
{
	job[0] = (struct sim_store_job_row){
		.job = 0, .name = "a", .model = "m1", .strategy = "ddp", .first_node = 0,
		.nodes = 2, .first_rank = 0, .gpus = 16, .dp = 16, .tp = 1, .pp = 1, .cp = 1,
		.params = 1e9, .peak_bytes = 4e10, .capacity_bytes = 8e10, .fits = 1,
		.alone = { 1, 1, 1, 1, 1000, 0.5, 1 }, .shared = { 1.5, 1.5, 1.5, 1.5, 800, 0.25, 1 },
	};
	job[1] = (struct sim_store_job_row){
		.job = 1, .name = "b", .model = "", .strategy = "zero3", .first_node = 2,
		.nodes = 1, .first_rank = 16, .gpus = 8, .dp = 8, .tp = 1, .pp = 1, .cp = 1,
		.params = 2e9, .peak_bytes = 9e10, .capacity_bytes = 8e10, .fits = 0,
		.start_s = 0.5,
	};
	*link = (struct par_link_share){ .bw_Bps = 50e9, .bytes = { 3e9, 0 } };
	snprintf(link->name, sizeof(link->name), "leaf0-spine0");
	g[0] = g[1] = (struct par_goodput){ 0 };
	*v = (struct par_jobs_view){
		.gpu = "H100", .preset = "dgx-h100", .fidelity = "flow", .gpus = 24, .steps = 1,
		.job = job, .n = 2, .links = link, .nlinks = 1, .goodput = g, .events = 99,
		.wall_s = 0.25,
	};
}

START_TEST(test_jobs_text)
{
	struct sim_store_job_row job[2];
	struct par_link_share link;
	struct par_goodput g[2];
	struct par_jobs_view v;
	two_jobs(job, &link, g, &v);
	char *t = TEXT_OF(par_jobs_text(out, &v));
	ck_assert_str_eq(t,
		"  cluster     24 x H100 (dgx-h100), flow fidelity; 2 jobs, timed until each has 1 "
		"step\n"
		"  job a       nodes 0-1 (ranks 0-15): m1, 1.00 B parameters; dp 16 (ddp), tp 1, pp 1, "
		"cp 1\n"
		"              memory peak 40.00 GB of 80.00 GB per GPU: fits\n"
		"              step alone 1.000000 s, shared 1.500000 s (+50.00 %); shared: tokens/s "
		"800, MFU 0.2500\n"
		"  job b       node 2 (ranks 16-23): 2.00 B parameters; dp 8 (zero3), tp 1, pp 1, cp 1\n"
		"              starts at 0.500000 s\n"
		"              memory peak 90.00 GB of 80.00 GB per GPU: OUT OF MEMORY\n"
		"  links       1 carry more than one job's traffic (bytes per step, each job alone):\n"
		"              leaf0-spine0                50.0 GB/s: a 3.000 GB\n");
	free(t);
	v.nlinks = 0;
	t = TEXT_OF(par_jobs_text(out, &v));
	ck_assert_ptr_nonnull(strstr(t, "  links       no link carries more than one job's "
				     "traffic\n"));
	free(t);
}
END_TEST

START_TEST(test_jobs_json)
{
	struct sim_store_job_row job[2];
	struct par_link_share link;
	struct par_goodput g[2];
	struct par_jobs_view v;
	two_jobs(job, &link, g, &v);
	const uint32_t strag[] = { 4 };
	v.stragglers = strag, v.nstragglers = 1;
	g[1].job_mtbf_s = 100;
	char *t = TEXT_OF(par_jobs_json(out, &v));
	ck_assert_str_eq(t,
		"{\"jobs\":[{\"name\":\"a\",\"model\":\"m1\",\"first_node\":0,\"nodes\":2,"
		"\"first_rank\":0,\"gpus\":16,\"start_s\":0,\"dp\":16,\"tp\":1,\"pp\":1,\"cp\":1,"
		"\"strategy\":\"ddp\",\"params\":1000000000,\"memory\":{\"peak\":40000000000,"
		"\"capacity\":80000000000,\"fits\":true},\"alone\":{\"steps\":1,\"step_time_s\":1,"
		"\"step_time_p50_s\":1,\"step_time_p90_s\":1,\"step_time_p99_s\":1,"
		"\"tokens_per_s\":1000,\"mfu\":0.5},\"shared\":{\"steps\":1,\"step_time_s\":1.5,"
		"\"step_time_p50_s\":1.5,\"step_time_p90_s\":1.5,\"step_time_p99_s\":1.5,"
		"\"tokens_per_s\":800,\"mfu\":0.25},\"slowdown\":1.5},"
		"{\"name\":\"b\",\"model\":\"\",\"first_node\":2,\"nodes\":1,\"first_rank\":16,"
		"\"gpus\":8,\"start_s\":0.5,\"dp\":8,\"tp\":1,\"pp\":1,\"cp\":1,\"strategy\":\"zero3\","
		"\"params\":2000000000,\"memory\":{\"peak\":90000000000,\"capacity\":80000000000,"
		"\"fits\":false},\"failures\":{\"job_mtbf_s\":100,\"checkpoint_bytes\":0,"
		"\"checkpoint_s\":0,\"young_s\":0,\"interval_s\":0,\"goodput\":0,"
		"\"interruptions\":0,\"useful_s\":0}}],"
		"\"shared_links\":[{\"link\":\"leaf0-spine0\",\"bw_Bps\":50000000000,"
		"\"bytes\":{\"a\":3000000000}}],\"stragglers\":[4],\"events\":99,\"wall_s\":0.250000}\n");
	free(t);
}
END_TEST

static Suite *result_text_suite(void)
{
	Suite *s = suite_create("result_text");
	TCase *tc = tcase_create("text");
	tcase_add_test(tc, test_text_known);
	tcase_add_test(tc, test_text_unfit);
	tcase_add_test(tc, test_text_lines);
	tcase_add_test(tc, test_jobs_text);
	tcase_add_test(tc, test_jobs_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(result_text_suite());
}
