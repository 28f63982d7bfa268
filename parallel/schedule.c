/*
 * schedule.c - the registry of pipeline schedules (schedule.h).
 *
 * To add a schedule, four places:
 *   1. parallel/sched_NAME.c exporting `const struct par_schedule_ops
 *      par_sched_NAME`: copy sched_1f1b.c, the reference plug-in (name,
 *      help, check, nactions, actions, and the closed forms bubble_s,
 *      pipeline_s and in_flight);
 *   2. one line S(par_sched_NAME) at the end of SCHEDULES below (the order
 *      is the key's value order, entry i being value i: add at the end);
 *   3. one line for the file in libclustersim_a_SOURCES in Makefile.am;
 *   4. its test in tests/unit/test_schedule.c, whose registry-wide tests
 *      already check its actions and its closed forms against the flow
 *      simulation.
 * Nothing else: the key parallel.schedule takes its names and help from
 * here (regenerate docs/scenario.md's key table with `clustersim help
 * --keys`), the builder runs the actions, the planner uses the closed forms.
 */
#include "parallel/schedule.h"

#include <string.h>

#include "sim/util.h"

#define SCHEDULES \
	S(par_sched_1f1b) \
	S(par_sched_gpipe) \
	S(par_sched_interleaved) \
	S(par_sched_fthenb) \
	/* new schedules go on the line above this one */

#define S(x) extern const struct par_schedule_ops x;
SCHEDULES
#undef S

#define S(x) &x,
const struct par_schedule_ops *const par_schedules[] = { SCHEDULES NULL };
#undef S

/* The names, filled on first use (the registry is constant after that). */
#define S(x) 1 +
static const char *names[SCHEDULES 1];
#undef S

unsigned par_schedule_count(void)
{
	return (unsigned)ARRAY_SIZE(par_schedules) - 1;
}

const struct par_schedule_ops *par_schedule(unsigned i)
{
	BUG_ON(i >= par_schedule_count());
	return par_schedules[i];
}

int par_schedule_find(const char *name)
{
	for (unsigned i = 0; i < par_schedule_count(); i++)
		if (strcmp(par_schedules[i]->name, name) == 0)
			return (int)i;
	return -1;
}

const char *const *par_schedule_names(void)
{
	for (unsigned i = 0; i < par_schedule_count(); i++)
		names[i] = par_schedules[i]->name;
	return names;
}

const char *par_schedule_help(unsigned i)
{
	return par_schedule(i)->help;
}

int par_sched_check_one_chunk(uint32_t p, uint32_t m, uint32_t v, char *err, size_t errlen)
{
	(void)p, (void)m;
	if (v != 1)
		return sim_errf(err, errlen, "parallel.vpp: %u chunks need parallel.schedule: "
				"interleaved", v);
	return 0;
}
