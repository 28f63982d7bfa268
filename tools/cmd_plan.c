/*
 * cmd_plan.c - `clustersim plan SCENARIO --gpus N`: enumerate every layout of
 * the scenario's model and training run on N GPUs (held or dropped by --fix
 * and --exclude), drop those that are not valid or do not fit, rank the rest
 * with the closed-form estimator (parallel/plan.c), simulate the best, the
 * best of each family and the --compare layout in analytic fidelity and the
 * top K in flow fidelity, and report the ranking, where estimator and
 * simulation disagreed, why the winner wins, why not each family, and the
 * comparison term by term. The simulations run on the worker pool
 * (scenarios/plan_sim.h), so one that aborts is named as failed and the
 * rest go on; a plan with a failed simulation still prints its ranking,
 * and exits 1.
 */
#include "tools/cli.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parallel/plan.h"
#include "parallel/schedule.h"
#include "scenarios/plan_sim.h"
#include "parallel/train.h"
#include "scenarios/scenario.h"
#include "scenarios/train_of.h"
#include "sim/mpi_pool.h"
#include "sim/store.h"
#include "sim/util.h"

static const struct cli_opt plan_opts[] = {
	{ "gpus", 'g', CLI_COUNT, "N", NULL, "GPUs to plan for (whole nodes of the cluster)" },
	{ "set", 0, CLI_LIST, "KEY=VALUE", NULL,
	  "override a scenario key (model, training, cluster) that the plan does not vary" },
	{ "fix", 0, CLI_LIST, "KEY=V", NULL,
	  "hold a varied key (tp, sp, pp, vpp, cp, ep, dp, zero, micro_batch, recompute, "
	  "schedule, tp_overlap) at V; repeat a key for any of several values" },
	{ "exclude", 0, CLI_LIST, "KEY=V", NULL, "drop the layouts with KEY at V (e.g. zero=3, pp=1)" },
	{ "top", 'k', CLI_COUNT, "K", "3", "layouts to simulate in flow fidelity" },
	{ "show", 0, CLI_COUNT, "N", "10", "rows of the ranking to print" },
	{ "compare", 0, CLI_STR, "LAYOUT", NULL,
	  "simulate this layout beside the winner and explain the difference: KEY=V[,KEY=V...] "
	  "over the scenario's own layout (keys as --fix), or 'scenario' for it as written" },
	{ "exact-flow", 0, CLI_FLAG, NULL, NULL,
	  "simulate every rank in the flow runs (minutes at 1,024 GPUs), not one data-parallel "
	  "replica for all" },
	{ "analytic", 0, CLI_COUNT, "N", "16384 / GPUs, 16 to 256",
	  "best estimates to simulate in analytic fidelity" },
	{ "objective", 0, CLI_STR, "GOAL", "step_time", "step_time, mfu or tokens_per_s" },
	{ "jobs", 'j', CLI_COUNT, "N", "all cores", "worker processes for the simulations" },
	{ "db", 0, CLI_FILE_DB, "FILE", NULL,
	  "keep the plan in SQLite: every simulated layout with its figures (report --plan "
	  "prints it again)" },
	{ "json", 0, CLI_FLAG, NULL, NULL, "print a JSON object instead of the table" },
	{ 0 },
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Say on stderr that a layout's simulation failed, and why. */
static void failed(void *ctx, const struct par_candidate *c, const char *fidelity,
		   const char *why)
{
	(void)ctx;
	char name[128];
	scn_plan_layout_name(c, name, sizeof(name));
	if (!strncmp(why, "does not fit after all", 22))
		fprintf(stderr, "clustersim plan: %s %s; the next layout by the estimate takes its "
			"place\n", name, why);
	else
		fprintf(stderr, "clustersim plan: the %s simulation of %s failed: %s\n", fidelity,
			name, why[0] ? why : "no reason given");
}

/* Why the winner beats the runner-up, in one paragraph. */
static void why(const struct scn_plan_layout *a, const struct scn_plan_layout *b, const char *goal)
{
	char wa[128], wb[128];
	scn_plan_layout_name(&a->c, wa, sizeof(wa));
	scn_plan_layout_name(&b->c, wb, sizeof(wb));
	const struct scn_plan_figures *x = &a->r, *y = &b->r;
	/* The reports are the flow ones where both were simulated in flow. */
	int flow = !isnan(a->flow_s) && !isnan(b->flow_s);
	double ta = flow ? a->flow_s : a->sim_s, tb = flow ? b->flow_s : b->sim_s;
	const char *fid = flow ? "flow" : "analytic";
	if (!strcmp(goal, "mfu"))
		printf("\n%s beats %s with an MFU of %.4f against %.4f (%s fidelity). ", wa, wb,
		       a->r.mfu, b->r.mfu, fid);
	else if (!strcmp(goal, "tokens_per_s"))
		printf("\n%s beats %s with %.0f tokens/s against %.0f (%s fidelity). ", wa, wb,
		       a->r.tokens_per_s, b->r.tokens_per_s, fid);
	else
		printf("\n%s beats %s by %.1f %% (%.4f s against %.4f s per step, %s fidelity). ",
		       wa, wb, 100 * (tb / ta - 1), ta, tb, fid);
	double dc = y->compute_s - x->compute_s;
	double db = y->bubble_s - x->bubble_s;
	double de = y->exposed_comm_s - x->exposed_comm_s;
	double di = y->idle_s - x->idle_s;
	printf("Of the difference, compute accounts for %+.4f s, the pipeline bubble %+.4f s, "
	       "exposed communication %+.4f s and other idle time %+.4f s on the critical rank. ",
	       dc, db, de, di);
	printf("The winner peaks at %.1f GB per GPU, the runner-up at %.1f GB.\n",
	       x->peak_bytes / 1e9, y->peak_bytes / 1e9);
}

static void print_json(const struct scn_plan_layout *v, size_t n, uint64_t total, size_t fits,
		       const uint64_t dropped[], double per_s, double wall, const char *blocker,
		       size_t compare_at)
{
	struct scn_plan_order o;
	scn_plan_order(v, n, &o);
	printf("{\"candidates\":%llu,\"fits\":%zu,\"dropped\":{\"invalid\":%llu,\"memory\":%llu,"
	       "\"rules\":%llu},\"screened_per_s\":%.1f,\"wall_s\":%.3f,\"collapsed\":%s,",
	       (unsigned long long)total, fits, (unsigned long long)dropped[PAR_DROP_INVALID],
	       (unsigned long long)dropped[PAR_DROP_MEMORY],
	       (unsigned long long)dropped[PAR_DROP_RULES], per_s, wall, blocker ? "false" : "true");
	if (blocker) {
		printf("\"not_collapsed\":");
		cli_json_str(stdout, blocker);
		printf(",");
	}
	if (compare_at < n)
		printf("\"compare\":%zu,", compare_at);
	if (isnan(o.rho))
		printf("\"spearman_rho\":null,\"layouts\":[");
	else
		printf("\"spearman_rho\":%.6f,\"layouts\":[", o.rho);
	static const char *const rc[] = { "none", "selective", "full" };
	for (size_t i = 0; i < n; i++) {
		const struct par_layout *l = &v[i].c.layout;
		printf("%s{\"tp\":%u,\"sp\":%s,\"pp\":%u,\"vpp\":%u,\"cp\":%u,\"ep\":%u,\"dp\":%u,"
		       "\"micro_batch\":%u,\"zero\":%u,\"recompute\":\"%s\",\"schedule\":\"%s\","
		       "\"tp_overlap\":%s,\"estimate_s\":%.9g,\"step_time_s\":", i ? "," : "", l->tp,
		       l->sp ? "true" : "false", l->pp, l->vpp, l->cp, l->ep, l->dp,
		       v[i].c.micro_batch, l->zero, rc[v[i].c.recompute],
		       par_schedule(l->schedule)->name, l->sp && l->tp_overlap ? "true" : "false",
		       v[i].c.step_s);
		if (isnan(v[i].sim_s)) {   /* the simulation refused it: no figures */
			printf("null,\"failed\":");
			cli_json_str(stdout, v[i].why);
			printf(",\"estimate_rank\":%u}", v[i].est_rank);
			continue;
		}
		printf("%.9g,", v[i].sim_s);
		if (!isnan(v[i].flow_s))
			printf("\"flow_step_time_s\":%.9g,", v[i].flow_s);
		else if (v[i].flow_why) {
			printf("\"flow_failed\":");
			cli_json_str(stdout, v[i].flow_why);
			printf(",");
		}
		const struct scn_plan_figures *f = &v[i].r;
		printf("\"mfu\":%.6g,\"tokens_per_s\":%.9g,\"peak_bytes\":%.17g,\"reserve_bytes\":%.17g,"
		       "\"capacity_bytes\":%.17g,\"compute_s\":%.9g,"
		       "\"interference_s\":%.9g,\"bubble_s\":%.9g,\"exposed_comm_s\":%.9g,"
		       "\"idle_s\":%.9g,\"exposed_by\":{", f->mfu, f->tokens_per_s, f->peak_bytes,
		       f->reserve_bytes, f->capacity_bytes, f->compute_s, f->interference_s,
		       f->bubble_s, f->exposed_comm_s, f->idle_s);
		static const char *const kinds[PAR_COMM_NKINDS] = {
			"tensor_parallel", "data_parallel", "pipeline", "context_parallel", "host",
		};
		for (unsigned k = 0; k < PAR_COMM_NKINDS; k++)
			printf("%s\"%s\":%.9g", k ? "," : "", kinds[k], f->exposed_by[k]);
		printf("},\"families\":[");
		for (unsigned k = 0, first = 1; k < PAR_PLAN_NFAMILIES; k++)
			if (par_plan_in_family(k, &v[i].c) && (k != 6 || l->ep > 1))
				printf("%s\"%s\"", first ? "" : ",", par_plan_family_name(k)), first = 0;
		printf("],\"estimate_rank\":%u}", v[i].est_rank);
	}
	printf("]}\n");
}

/* How far the estimator's order was from the simulation's. */
static void disagreement(const struct scn_plan_layout *v, size_t n)
{
	struct scn_plan_order o;
	scn_plan_order(v, n, &o);
	fprintf(stderr, "clustersim plan: the simulated winner was #%u by the estimate; %zu of "
		"%zu pairs of the %zu simulated layouts swapped order; the largest move was %u "
		"places\n", o.first, o.swaps, o.pairs, n, o.worst);
}

/* The progress line on a terminal (stderr): none when it is not one. */
struct progress {
	int tty;
	double t0;                /* when the current fidelity began      */
	size_t screened;
};

static void progress(void *ctx, const char *fidelity, size_t done, size_t total)
{
	struct progress *p = ctx;
	if (!p->tty)
		return;
	if (done == 1)
		p->t0 = now_s();
	double el = now_s() - p->t0, rate = done / (el > 0 ? el : 1e-9);
	fprintf(stderr, "\r\033[Kclustersim plan: %zu layouts screened; %s: %zu of %zu simulated, "
		"ETA %.0f s", p->screened, fidelity, done, total,
		done > 1 ? (total - done) / rate : 0.0);
	if (done == total)
		fputs("\r\033[K", stderr);
}

/* Reject --set of what the plan varies: --fix holds it. */
static int check_sets(struct cli_args *a, const char **sets, int nsets)
{
	for (int i = 0; i < nsets; i++) {
		const char *eq = strchr(sets[i], '=');
		char key[96];
		snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - sets[i]) : (int)strlen(sets[i]),
			 sets[i]);
		int k = par_plan_key_of_scenario(key);
		if (k >= 0)
			return cli_error(a, CLI_BADINPUT, "option --set %s: the plan varies %s; to hold "
					 "it, use --fix %s=VALUE (--exclude drops a value)", sets[i],
					 key, par_plan_key_name((enum par_plan_key)k));
	}
	return 0;
}

/* The rules of --fix and --exclude, parsed into r (at most cap). */
static int parse_rules(struct cli_args *a, struct par_plan_rule *r, size_t cap, size_t *n)
{
	*n = 0;
	for (int ex = 0; ex < 2; ex++) {
		int k;
		const char **l = cli_list(a, ex ? "exclude" : "fix", &k);
		for (int i = 0; i < k; i++) {
			char err[256];
			if (*n == cap)
				return cli_error(a, CLI_BADINPUT, "at most %zu --fix and --exclude rules",
						 cap);
			if (par_plan_rule_parse(l[i], ex, &r[*n], err, sizeof(err)) < 0)
				return cli_error(a, CLI_BADINPUT, "%s", err);
			(*n)++;
		}
	}
	return 0;
}

/* A --fix value no enumerated layout has is a mistake worth naming (an
 * --exclude of one, a warning). */
static int check_rules(struct cli_args *a, const struct par_plan_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (r[i].matched)
			continue;
		char t[64];
		par_plan_rule_text(&r[i], t, sizeof(t));
		if (!r[i].exclude)
			return cli_error(a, CLI_BADINPUT, "option --fix %s: no layout the plan "
					 "enumerates has %s (docs/plan.md lists the values tried)", t,
					 t);
		fprintf(stderr, "clustersim plan: warning: --exclude %s excludes nothing: no "
			"layout the plan enumerates has it\n", t);
	}
	return 0;
}

/*
 * The layout of --compare: the scenario's own (its parallel section, micro-
 * batch and recomputation) with the keys given over it; dp follows the
 * others unless given, and the schedule the chunks (interleaved with vpp
 * above 1, as the plan's own layouts).
 */
static int compare_layout(struct cli_args *a, const struct scn *s, uint32_t gpus,
			  struct par_candidate *c)
{
	const char *text = cli_str(a, "compare", "scenario");
	*c = (struct par_candidate){ .layout = s->parallel, .micro_batch = s->training.micro_batch,
				     .recompute = s->training.recompute };
	int dp_given = 0, sched_given = 0, ov_given = 0;
	if (strcmp(text, "scenario")) {
		char buf[512];
		snprintf(buf, sizeof(buf), "%s", text);
		for (char *save, *tok = strtok_r(buf, ", ", &save); tok;
		     tok = strtok_r(NULL, ", ", &save)) {
			struct par_plan_rule r;
			char err[256];
			if (par_plan_rule_parse(tok, false, &r, err, sizeof(err)) < 0)
				return cli_error(a, CLI_BADINPUT, "option --compare: %s",
						 strstr(err, ": ") ? strstr(err, ": ") + 2 : err);
			par_plan_key_set(c, r.key, r.value);
			dp_given |= r.key == PAR_PK_DP;
			sched_given |= r.key == PAR_PK_SCHEDULE;
			ov_given |= r.key == PAR_PK_TP_OVERLAP;
			if (r.key == PAR_PK_ZERO)
				c->layout.strategy = 0, c->layout.fsdp.enabled = false;
		}
	}
	struct par_layout *l = &c->layout;
	/* as the plan runs it: blocking where there is no SP to overlap
	 * (unless named with tp_overlap=, which the checks then judge) */
	if (!ov_given && !(l->sp && l->tp > 1))
		l->tp_overlap = false;
	uint64_t mp = (uint64_t)l->tp * l->cp * l->pp;
	if (!dp_given && mp && gpus % mp == 0)
		l->dp = (uint32_t)(gpus / mp);
	int inter = par_schedule_find("interleaved"), f1b1 = par_schedule_find("1f1b");
	if (l->vpp > 1)
		l->schedule = (uint32_t)inter;
	else if (l->schedule == (uint32_t)inter)
		l->schedule = (uint32_t)f1b1;
	/* as the plan runs it: 1F1B where the scenario's schedule splits the
	 * backwards and this layout cannot (unless named with schedule=) */
	else if (!sched_given && par_schedule(l->schedule)->splits &&
		 !par_plan_can_split(&s->model, &s->training, c))
		l->schedule = (uint32_t)f1b1;
	return 0;
}

/* Where v holds the layout c, or n. */
static size_t find_layout(const struct scn_plan_layout *v, size_t n, const struct par_candidate *c)
{
	for (size_t i = 0; i < n; i++)
		if (par_plan_same_layout(&v[i].c, c))
			return i;
	return n;
}

/* A simulated layout's step time: flow where it ran in flow. */
static double best_s(const struct scn_plan_layout *x)
{
	return isnan(x->flow_s) ? x->sim_s : x->flow_s;
}

/* The term that separates layout y from the winner x most. */
static const char *separating_term(const struct scn_plan_figures *x, const struct scn_plan_figures *y,
				   double *by)
{
	struct { const char *name; double d; } t[] = {
		{ "compute", y->compute_s - x->compute_s },
		{ "exposed communication", y->exposed_comm_s - x->exposed_comm_s },
		{ "pipeline bubble", y->bubble_s - x->bubble_s },
		{ "other idle time", y->idle_s - x->idle_s },
	};
	size_t k = 0;
	for (size_t i = 1; i < ARRAY_SIZE(t); i++)
		if (t[i].d > t[k].d)
			k = i;
	*by = t[k].d;
	return t[k].name;
}

/* "Why not": the best simulated layout of each family beside the winner. */
static void print_families(const struct scn_plan_layout *v, size_t n, int moe, int ruled)
{
	printf("\nWhy not another family? The best simulated layout of each:\n");
	printf("%-22s %-54s %10s %8s  %s\n", "family", "layout", "step(s)", "vs #1",
	       "what separates it from #1 (critical rank)");
	/* TP overlapped and blocking: only where the plan tried both */
	int ov = 0, blocking = 0;
	for (size_t i = 0; i < n; i++)
		ov |= par_plan_in_family(8, &v[i].c), blocking |= par_plan_in_family(9, &v[i].c);
	for (unsigned f = 0; f < PAR_PLAN_NFAMILIES; f++) {
		if ((f == 6 && !moe) || (f == 7 && moe))   /* EP; zero bubble: not with MoE */
			continue;
		if ((f == 8 || f == 9) && !(ov && blocking))
			continue;
		size_t best = n;
		for (size_t i = 0; i < n; i++)
			if (!isnan(v[i].sim_s) && par_plan_in_family(f, &v[i].c) &&
			    (best == n || best_s(&v[i]) < best_s(&v[best])))
				best = i;
		char name[128];
		if (best == n) {
			printf("%-22s (no layout of it is valid and fits%s)\n", par_plan_family_name(f),
			       ruled ? " within --fix and --exclude" : "");
			continue;
		}
		scn_plan_layout_name(&v[best].c, name, sizeof(name));
		if (best == 0) {
			printf("%-22s %-54s %10.4f %8s  the winner\n", par_plan_family_name(f), name,
			       best_s(&v[0]), "-");
			continue;
		}
		/* Both in flow fidelity where both ran in it, else both analytic. */
		double by;
		int flow = !isnan(v[0].flow_s) && !isnan(v[best].flow_s);
		double ta = flow ? v[0].flow_s : v[0].sim_s, tb = flow ? v[best].flow_s : v[best].sim_s;
		const char *term = separating_term(flow ? &v[0].r : &v[0].ra,
						   flow ? &v[best].r : &v[best].ra, &by);
		printf("%-22s %-54s %10.4f %+7.1f%%  %s %+.4f s\n", par_plan_family_name(f), name,
		       tb, 100 * (tb / ta - 1), term, by);
	}
}

/* --compare: the user's layout beside the winner, term by term. */
static void print_compare(const struct scn_plan_layout *v, size_t n, size_t at)
{
	char wa[128], wb[128];
	scn_plan_layout_name(&v[0].c, wa, sizeof(wa));
	scn_plan_layout_name(&v[at].c, wb, sizeof(wb));
	printf("\nYour layout (--compare): %s\n", wb);
	if (isnan(v[at].sim_s)) {
		printf("  it was not simulated to the end: %s\n", v[at].why ? v[at].why : "?");
		return;
	}
	int flow = !isnan(v[0].flow_s) && !isnan(v[at].flow_s);
	const struct scn_plan_figures *x = flow ? &v[0].r : &v[0].ra;
	const struct scn_plan_figures *y = flow ? &v[at].r : &v[at].ra;
	double ta = flow ? v[0].flow_s : v[0].sim_s, tb = flow ? v[at].flow_s : v[at].sim_s;
	if (at == 0) {
		printf("  it is the winner (%.4f s per step).\n", ta);
		return;
	}
	printf("  #%zu of %zu simulated: %.4f s per step against the winner's %.4f s (%s, %s "
	       "fidelity), %+.1f %%.\n", at + 1, n, tb, ta, wa, flow ? "flow" : "analytic",
	       100 * (tb / ta - 1));
	printf("  Yours minus the winner's, on each one's critical rank:\n");
	printf("    %-34s %+10.4f s (of which interference %+.4f s)\n", "compute",
	       y->compute_s - x->compute_s, y->interference_s - x->interference_s);
	printf("    %-34s %+10.4f s\n", "exposed communication", y->exposed_comm_s - x->exposed_comm_s);
	for (unsigned k = 0; k < PAR_COMM_NKINDS; k++)
		if (x->exposed_by[k] != 0 || y->exposed_by[k] != 0) {
			char what[64];
			snprintf(what, sizeof(what), "  %s", par_comm_kind_name(k));
			printf("    %-34s %+10.4f s\n", what, y->exposed_by[k] - x->exposed_by[k]);
		}
	printf("    %-34s %+10.4f s\n", "pipeline bubble", y->bubble_s - x->bubble_s);
	printf("    %-34s %+10.4f s\n", "other idle time", y->idle_s - x->idle_s);
	double sum = (y->compute_s + y->exposed_comm_s + y->bubble_s + y->idle_s) -
		     (x->compute_s + x->exposed_comm_s + x->bubble_s + x->idle_s);
	printf("    %-34s %+10.4f s (the step times differ by %+.4f s)\n", "total", sum, tb - ta);
	printf("  Memory: yours peaks at %.1f GB per GPU, the winner at %.1f GB.\n",
	       y->peak_bytes / 1e9, x->peak_bytes / 1e9);
}

static int plan_run(struct cli_args *a)
{
	if (a->npos != 1 || !cli_has(a, "gpus"))
		return cli_error(a, CLI_BADINPUT, "expected a scenario and --gpus N (clustersim plan "
				 "SCENARIO.yaml --gpus N)");
	long long gpus = 0, top = 3, show = 10, nsim, jobs = sysconf(_SC_NPROCESSORS_ONLN);
	if (cli_count(a, "gpus", 1, TOPO_MAX_RANKS, &gpus) < 0)
		return CLI_BADINPUT;
	/* A simulation's cost grows with the GPUs: a few hundred small ones,
	 * a handful of 1,024-GPU ones (about 1 to 2 s each on one core). */
	nsim = 16384 / gpus < 16 ? 16 : 16384 / gpus > 256 ? 256 : 16384 / gpus;
	if (cli_count(a, "jobs", 1, 64, &jobs) < 0 || cli_count(a, "top", 0, 1000, &top) < 0 ||
	    cli_count(a, "show", 1, 100000, &show) < 0 ||
	    cli_count(a, "analytic", 1, 100000, &nsim) < 0)
		return CLI_BADINPUT;
	const char *goal = cli_str(a, "objective", "step_time");
	if (strcmp(goal, "step_time") && strcmp(goal, "mfu") && strcmp(goal, "tokens_per_s"))
		return cli_error(a, CLI_BADINPUT, "option --objective: expected step_time, mfu or "
				 "tokens_per_s, got '%s'", goal);
	int nsets;
	const char **sets = cli_list(a, "set", &nsets);
	if (check_sets(a, sets, nsets))
		return CLI_BADINPUT;
	struct par_plan_rule rules[64];
	size_t nrules;
	if (parse_rules(a, rules, ARRAY_SIZE(rules), &nrules))
		return CLI_BADINPUT;
	struct scn s;
	char err[SCN_ERRLEN];
	if (scn_load_unchecked(&s, a->pos[0], sets, (size_t)nsets, err, sizeof(err)) < 0)
		return cli_error(a, CLI_BADINPUT, "%s", err);
	uint32_t gpn = s.cluster.kind == TOPO_IDEAL ? 1 : s.cluster.gpus_per_node;
	if (gpus % gpn)
		return cli_error(a, CLI_BADINPUT, "option --gpus: %lld is not a whole number of "
				 "nodes of %u GPUs", gpus, gpn);
	s.cluster.nodes = (uint32_t)(gpus / gpn);
	struct par_compute_model *cm = par_compute_model_new(
		&s.compute, topo_gpu_find(s.cluster.gpu), s.training.precision, s.datadir, err,
		sizeof(err));
	if (!cm)
		return cli_error(a, CLI_BADINPUT, "%s: compute: %s", a->pos[0], err);
	if (mp_size() > 1 && mp_rank() > 0) {
		/* An MPI rank other than 0: simulate the layouts rank 0 hands out. */
		scn_plan_serve(&s, cm);
		par_compute_model_free(cm);
		return CLI_OK;
	}
	struct sim_store *st = NULL;
	int db_rc = cli_has(a, "db") ? cli_store_open(a, cli_str(a, "db", ""), &st) : CLI_OK;
	if (db_rc != CLI_OK) {
		par_compute_model_free(cm);
		return db_rc;
	}
	double t0 = now_s();
	struct par_planner *pl = par_planner_new(&s.model, &s.training, &s.parallel, &s.cluster,
						 (uint32_t)gpus, cm, s.sim.seed, err,
						 sizeof(err));
	if (!pl) {
		par_compute_model_free(cm);
		sim_store_close(st);
		return cli_error(a, CLI_BADINPUT, "%s: cluster: %s", a->pos[0], err);
	}
	struct par_train tt;
	scn_train_of(&tt, &s, cm);   /* the interference the runs will have */
	par_planner_set_interference(pl, tt.interference);
	par_planner_rules(pl, rules, nrules);
	struct par_candidate *cands;
	uint64_t dropped[PAR_DROP_NCAUSES], total;
	size_t n = par_plan(pl, &cands, dropped, &total);
	double screened = now_s() - t0;
	struct par_candidate cmp;
	int comparing = cli_has(a, "compare");
	if (check_rules(a, rules, nrules) ||
	    (comparing && compare_layout(a, &s, (uint32_t)gpus, &cmp))) {
		par_planner_free(pl);
		par_compute_model_free(cm);
		free(cands);
		sim_store_close(st);
		return CLI_BADINPUT;
	}
	if (comparing) {
		char why[512];
		if (par_plan_check(pl, &cmp, why, sizeof(why)) < 0) {
			par_planner_free(pl);
			par_compute_model_free(cm);
			free(cands);
			sim_store_close(st);
			return cli_error(a, CLI_BADINPUT, "option --compare: the layout cannot run: %s",
					 why);
		}
		par_plan_estimate(pl, &cmp);   /* the estimate, fitting or not */
		cmp.rank = 0;
		for (size_t i = 0; i < n && !cmp.rank; i++)
			if (par_plan_same_layout(&cands[i], &cmp))
				cmp.rank = cands[i].rank;
	}
	par_planner_free(pl);
	char held[64] = "";
	if (nrules)
		snprintf(held, sizeof(held), ", %llu held out by --fix and --exclude",
			 (unsigned long long)dropped[PAR_DROP_RULES]);
	if (!n) {
		par_compute_model_free(cm);
		free(cands);
		sim_store_close(st);
		return cli_error(a, CLI_NOFIT, "none of %llu layouts fits: %llu invalid, %llu out of "
				 "memory%s", (unsigned long long)total,
				 (unsigned long long)dropped[PAR_DROP_INVALID],
				 (unsigned long long)dropped[PAR_DROP_MEMORY], held);
	}
	/* The simulated set: the best estimates, the best estimate of each
	 * family not among them ("why not"), and the layout of --compare. */
	size_t m = n < (size_t)nsim ? n : (size_t)nsim, nsel = m;
	struct par_candidate *sel = xcalloc(m + PAR_PLAN_NFAMILIES + 1, sizeof(*sel));
	memcpy(sel, cands, m * sizeof(*sel));
	for (unsigned f = 0; f < PAR_PLAN_NFAMILIES; f++) {
		size_t i = 0;
		while (i < n && !par_plan_in_family(f, &cands[i]))
			i++;
		int have = i >= n;
		for (size_t j = 0; j < nsel && !have; j++)
			have = par_plan_same_layout(&sel[j], &cands[i]);
		if (!have)
			sel[nsel++] = cands[i];
	}
	int cmp_have = 0;
	for (size_t j = 0; comparing && j < nsel && !cmp_have; j++)
		cmp_have = par_plan_same_layout(&sel[j], &cmp);
	if (comparing && !cmp_have)
		sel[nsel++] = cmp;
	struct scn_plan_layout *v;
	struct scn_plan_fails fails;
	struct progress pr = { .tty = isatty(2), .screened = (size_t)total };
	const struct scn_plan_hooks hooks = { .failed = failed, .progress = progress, .ctx = &pr };
	const struct scn_plan_run run = { .top = (size_t)top, .jobs = (int)jobs,
					  .exact_flow = cli_has(a, "exact-flow"), .more = cands,
					  .nmore = n, .keep = comparing ? &cmp : NULL };
	size_t nflow = scn_plan_simulate(&s, cm, sel, nsel, &run, &v, &m, &hooks, &fails);
	free(sel);
	size_t afail = fails.analytic, ffail = fails.flow, failures = fails.failures;
	double wall = now_s() - t0, per_s = screened > 0 ? total / screened : 0;
	const char *blocker = scn_plan_collapse_blocker(&s);
	if (cli_has(a, "json"))
		print_json(v, m, total, n, dropped, per_s, wall, blocker,
			   comparing ? find_layout(v, m, &cmp) : m);
	else {
		char af[96] = "", ff[32] = "";
		if (afail)
			snprintf(af, sizeof(af), " (%zu failed)", afail);
		if (fails.nofit)
			snprintf(af + strlen(af), sizeof(af) - strlen(af), " (%zu more did not fit "
				 "after all and %s replaced)", fails.nofit,
				 fails.nofit == 1 ? "was" : "were");
		if (ffail)
			snprintf(ff, sizeof(ff), " (%zu failed)", ffail);
		printf("clustersim plan: %s on %lld GPUs: %llu layouts, %zu valid and fitting "
		       "(%llu invalid, %llu out of memory%s), screened at %.0f per second; "
		       "%zu simulated in analytic fidelity%s%s, %zu in flow%s%s\n\n", a->pos[0], gpus,
		       (unsigned long long)total, n, (unsigned long long)dropped[PAR_DROP_INVALID],
		       (unsigned long long)dropped[PAR_DROP_MEMORY], held, per_s, m,
		       blocker ? "" : " (symmetry-collapsed: one data-parallel replica for all)", af,
		       nflow, ff, blocker || run.exact_flow ? " (every rank)" : " (collapsed)");
		scn_plan_print_table(stdout, v, m, (size_t)show);
		struct scn_plan_order o;
		scn_plan_order(v, m, &o);
		if (!isnan(o.rho))
			printf("\nEstimate against the analytic simulation: Spearman's rho %.3f over "
			       "the %zu simulated layouts.\n", o.rho, m - afail);
		if (blocker)
			printf("Every rank simulated: %s, so one replica cannot stand for the others.\n",
			       blocker);
		if (m > 1 && !isnan(v[1].sim_s))
			why(&v[0], &v[1], goal);
		print_families(v, m, s.model.moe.experts > 0, nrules > 0);
		if (comparing)
			print_compare(v, m, find_layout(v, m, &cmp));
	}
	disagreement(v, m);
	int store_rc = CLI_OK;
	if (st) {
		struct scn_plan_head h = {
			.s = { .gpus = (uint32_t)gpus, .candidates = total, .fits = n,
			       .invalid = dropped[PAR_DROP_INVALID],
			       .no_memory = dropped[PAR_DROP_MEMORY],
			       .held_out = dropped[PAR_DROP_RULES], .replaced = fails.nofit,
			       .collapsed = !blocker, .wall_s = wall },
			.compare_at = comparing ? find_layout(v, m, &cmp) : m,
		};
		struct scn_plan_order o;
		scn_plan_order(v, m, &o);
		h.s.rho = o.rho;
		snprintf(h.s.command, sizeof(h.s.command), "%s", a->line ? a->line : "");
		snprintf(h.s.scenario, sizeof(h.s.scenario), "%s", a->pos[0]);
		char e[512];
		if (scn_plan_store(sim_store_db(st), &h, v, m, e, sizeof(e)) < 0)
			store_rc = cli_error(a, CLI_FAIL, "--db: %s", e);
	}
	sim_store_close(st);
	scn_plan_free(v, m);
	free(v);
	free(cands);
	par_compute_model_free(cm);
	if (store_rc != CLI_OK)
		return store_rc;
	if (failures)
		return cli_error(a, CLI_FAIL, "%zu of %zu simulations failed (named above); the "
				 "ranking leaves them out", failures, m + nflow);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_plan = {
	.name = "plan",
	.usage = "SCENARIO.yaml --gpus N [--set KEY=VALUE]... [--fix KEY=V]... [--exclude KEY=V]... "
		 "[--compare LAYOUT] [--top K] [--show N] [--analytic N] [--exact-flow] "
		 "[--objective GOAL] [--json]",
	.summary = "Find the best parallel layout for a model on N GPUs, and say why.",
	.description =
		"Enumerates every layout (tp, sp, pp, vpp, cp, ep, dp, micro-batch, ZeRO stage,\n"
		"recomputation) of the scenario's model and training run on N GPUs of its\n"
		"cluster, drops those that are not valid or do not fit in memory with the\n"
		"reserve (cluster.memory_reserve), counting each reason, and ranks the rest\n"
		"with a closed-form estimate built on the simulator's own closed forms (kernels,\n"
		"the collectives on the cluster's groups, the schedules, the strategies,\n"
		"interference; no event engine). --fix KEY=V holds a key (repeat a key for any of\n"
		"several values), --exclude KEY=V drops a value; --set of a key the plan varies\n"
		"is refused. It then simulates the best --analytic estimates (by default 16384 /\n"
		"GPUs, at least 16 and at most 256), the best estimate of each family (no\n"
		"pipeline, pipeline, interleaved, ZeRO-3, replicated parameters, context and\n"
		"expert parallel) and the --compare layout in analytic fidelity, replacing a\n"
		"layout that does not fit after all by the next estimate, and the best K of them\n"
		"(--top, 0 for none) in flow fidelity; both run one data-parallel replica for all\n"
		"(sim.symmetry dp) where the model allows, and --exact-flow runs the flow ones on\n"
		"every rank. It prints --show rows of the ranking (the K by flow step time, then\n"
		"the rest by analytic step time), Spearman's rho of the estimate against the\n"
		"simulation, a paragraph on why the winner beats the runner-up, the best\n"
		"layout of each family with the term that separates it from the winner, and\n"
		"for --compare the difference term by term (compute, exposed communication by\n"
		"kind, bubble, idle, memory). With the model and global batch fixed, step time,\n"
		"MFU and tokens/s rank layouts the same way, so --objective only picks the\n"
		"measure the paragraph compares the two in. --json prints {candidates, fits,\n"
		"dropped, screened_per_s, wall_s, collapsed, compare, spearman_rho, layouts:\n"
		"[...]} with every simulated layout; wall_s and screened_per_s are the only keys\n"
		"that differ between identical runs. The simulations run on -j worker processes\n"
		"(default: all cores); the results do not depend on how many, and a simulation\n"
		"whose worker dies (an abort, a signal) is named as failed with the signal while\n"
		"the rest go on. On a terminal a progress line goes to stderr. Exit codes: 0; 1\n"
		"when a simulation was refused or its worker died (the ranking of the others is\n"
		"still printed); 2 for bad input; 3 when no layout fits. docs/plan.md explains\n"
		"it all.",
	.opts = plan_opts,
	.run = plan_run,
	.mpi = 1,
};
