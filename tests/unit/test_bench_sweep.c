/*
 * test_bench_sweep.c - collectives/bench_sweep.c: the sizes' rows are what
 * coll_bench_run gives each size, the stored run is complete with a row
 * per size and a rank row per rank, and its configuration names what ran.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bench_sweep.h"
#include "collectives/coll.h"
#include "scenarios/scenario.h"
#include "sim/store.h"
#include "tests/checkmain.h"
#include "tests/tmpdir.h"

static struct coll_bench_config config(void)
{
	struct coll_bench_config c = { .nranks = 4, .op = SIM_COLL_ALLREDUCE, .algo = &coll_ring,
				       .fidelity = SIM_FIDELITY_ANALYTIC };
	char err[512];
	ck_assert_msg(scn_cluster_preset(&c.cluster, "ideal", err, sizeof err) == 0, "%s", err);
	c.cluster.nodes = 4;
	return c;
}

static long long count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	long long n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

START_TEST(rows_are_the_runs)
{
	struct coll_bench_config c = config();
	char err[512];
	const double sizes[3] = { 1048576, 4194304, 16777216 };
	struct coll_bench *b = coll_bench_new(&c, err, sizeof err), *ref = coll_bench_new(&c, err,
											   sizeof err);
	ck_assert_msg(b && ref, "%s", err);
	struct coll_bench_row rows[3];
	ck_assert_int_eq(coll_bench_sweep(b, &c, sizes, 3, NULL, "x", rows, err, sizeof err), 0);
	for (int i = 0; i < 3; i++) {
		struct coll_bench_result r;
		ck_assert_int_eq(coll_bench_run(ref, sizes[i], &r, err, sizeof err), 0);
		ck_assert_str_eq(rows[i].algo, "ring");
		ck_assert(rows[i].bytes == sizes[i]);
		ck_assert(rows[i].r.time_s == r.time_s && rows[i].r.busbw_Bps == r.busbw_Bps);
		ck_assert_uint_eq(rows[i].channels, r.channels);
	}
	coll_bench_free(b);
	coll_bench_free(ref);
	char *json = coll_bench_config_json(&c);
	ck_assert_msg(strstr(json, "{\"command\":\"collective\",\"op\":\"allreduce\",\"algo\":"
				   "\"ring\",\"channels\":0,\"root\":0,\"ranks\":4,\"fidelity\":"
				   "\"analytic\""), "%s", json);
	free(json);
}
END_TEST

START_TEST(stored_run)
{
	struct tmp t;
	tmp_init(&t, "test_bench_sweep");
	char *path = tmp_path(&t, "c.db");
	char err[512];
	struct sim_store *st = sim_store_open(path, err, sizeof err);
	ck_assert_msg(st, "%s", err);
	struct coll_bench_config c = config();
	const double sizes[2] = { 1048576, 2097152 };
	struct coll_bench *b = coll_bench_new(&c, err, sizeof err);
	struct coll_bench_row rows[2];
	ck_assert_int_eq(coll_bench_sweep(b, &c, sizes, 2, st, "clustersim collective", rows, err,
					  sizeof err), 0);
	coll_bench_free(b);
	sim_store_close(st);
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(count(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND "
				   "command = 'clustersim collective'"), 1);
	ck_assert_int_eq(count(db, "SELECT count(*) FROM collective_results"), 2);
	ck_assert_int_eq(count(db, "SELECT count(*) FROM ranks"), 4);
	ck_assert_int_eq(count(db, "SELECT count(*) FROM runs WHERE config LIKE "
				   "'%\"algo\":\"ring\"%'"), 1);
	sqlite3_close(db);
	free(path);
	tmp_clear(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bench_sweep");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, rows_are_the_runs);
	tcase_add_test(tc, stored_run);
	suite_add_tcase(s, tc);
	return check_run(s);
}
