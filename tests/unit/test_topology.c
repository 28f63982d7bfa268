/*
 * test_topology.c - unit tests for topology/: GPU and cluster presets, the
 * cluster keys (topo_config_set and its errors), topo_new's checks, and the
 * routes and links the fat tree and the ideal cluster build in a sim.
 *
 * Routes are asked for exactly as the engine asks: through topo_sim_ops()
 * on a sim made with sim_config_init and topo_attach. Expected figures come
 * from the presets' documented numbers (DGX H100: NVLink 450 GB/s at 1 us,
 * NDR 50 GB/s per NIC at 5 us, 0.3 us per switch hop, 32 nodes per leaf).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/testlib.h"
#include "scenarios/scenario.h"
#include "topology/topo.h"
#include "tests/checkmain.h"

static const double MiB = 1024.0 * 1024.0;

/* ---- helpers ---------------------------------------------------------------- */

static struct topo_config preset(const char *name)
{
	struct topo_config cfg;
	char err[512] = "";
	int rc = scn_cluster_preset(&cfg, name, err, sizeof err);
	ck_assert_msg(rc == 0, "scn_cluster_preset(%s): %s", name, err);
	return cfg;
}

/* A topology and its sim, wired as the engine's users wire them. */
struct tw {
	struct topo *topo;
	struct sim *sim;
};

static void tw_init(struct tw *w, const struct topo_config *cfg, uint32_t nranks)
{
	char err[512] = "";
	w->topo = topo_new(cfg, nranks, err, sizeof err);
	ck_assert_msg(w->topo != NULL, "topo_new(%s, %u ranks): %s", cfg->preset, nranks, err);
	struct sim_config sc;
	sim_config_init(&sc);
	w->sim = sim_new(&sc, nranks, topo_sim_ops(), w->topo);
	topo_attach(w->topo, w->sim);
}

static void tw_clear(struct tw *w)
{
	sim_free(w->sim);
	topo_free(w->topo);
}

static struct sim_route route(struct tw *w, uint32_t src, uint32_t dst)
{
	struct sim_route r;
	memset(&r, 0xff, sizeof r);
	topo_sim_ops()->route(w->topo, w->sim, src, dst, &r);
	ck_assert_msg(r.n >= 1 && r.n <= SIM_ROUTE_MAX, "route %u -> %u has %u links", src, dst,
		      r.n);
	for (uint32_t i = 0; i < r.n; i++)
		ck_assert_msg(r.link[i] < sim_nlinks(w->sim), "route %u -> %u: link %u of %u",
			      src, dst, r.link[i], sim_nlinks(w->sim));
	return r;
}

static void link_name(struct tw *w, uint32_t link, char *buf, size_t len)
{
	struct sim_link_stats st;
	sim_link_stats(w->sim, link, &st);
	buf[0] = 0;
	topo_sim_ops()->link_name(w->topo, st.tag, buf, len);
}

static double link_bw(struct tw *w, uint32_t link)
{
	struct sim_link_stats st;
	sim_link_stats(w->sim, link, &st);
	return st.bw_Bps;
}

#define ASSERT_ROUTE(r, want_n, want_bw, want_alpha_s, what) do {		\
	ck_assert_msg((r).n == (want_n), "%s: %u links, expected %u", (what),	\
		      (r).n, (unsigned)(want_n));				\
	ck_assert_msg(rel_err((r).bw_Bps, (want_bw)) < 1e-12,			\
		      "%s: bandwidth %.6g B/s, expected %.6g", (what),		\
		      (r).bw_Bps, (double)(want_bw));				\
	ck_assert_msg((r).alpha_ps == sim_ps_from_s(want_alpha_s),		\
		      "%s: latency %lld ps, expected %lld", (what),		\
		      (long long)(r).alpha_ps,					\
		      (long long)sim_ps_from_s(want_alpha_s));			\
} while (0)

#define ASSERT_LINK_NAME(w, link, want) do {					\
	char n_[96];								\
	link_name((w), (link), n_, sizeof n_);					\
	ck_assert_msg(strcmp(n_, (want)) == 0, "link %u is \"%s\", expected \"%s\"", \
		      (unsigned)(link), n_, (want));				\
} while (0)

/* ---- GPUs and presets ---------------------------------------------------------- */

START_TEST(test_gpu_presets)
{
	ck_assert_uint_ge(topo_ngpus, 4);
	for (size_t i = 0; i < topo_ngpus; i++) {
		const struct topo_gpu *g = &topo_gpus[i];
		ck_assert_msg(g->name && g->name[0], "GPU %zu has no name", i);
		ck_assert_msg(g->bf16 > 0 && g->mem_bytes > 0 && g->hbm_Bps > 0 && g->fp32 > 0,
			      "GPU %s: bf16 %g, memory %g, hbm %g, fp32 %g", g->name, g->bf16,
			      g->mem_bytes, g->hbm_Bps, g->fp32);
		ck_assert_msg(g->source && g->source[0], "GPU %s cites no source", g->name);
		ck_assert_ptr_eq(topo_gpu_find(g->name), g);
	}
	static const struct {
		const char *name;
		double mib, bf16;
	} want[] = {
		{ "H100-SXM-80GB", 81559, 989.4e12 },
		{ "A100-SXM-80GB", 81920, 312e12 },
		{ "H200-SXM-141GB", 143771, 989.4e12 },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct topo_gpu *g = topo_gpu_find(want[i].name);
		ck_assert_msg(g != NULL, "no GPU preset %s", want[i].name);
		ck_assert_msg(g->mem_bytes == want[i].mib * MiB, "%s: %.17g bytes = %.3f MiB, "
			      "expected %.0f MiB", g->name, g->mem_bytes, g->mem_bytes / MiB,
			      want[i].mib);
		ck_assert_msg(rel_err(g->bf16, want[i].bf16) < 1e-12, "%s: bf16 %.6g, expected "
			      "%.6g", g->name, g->bf16, want[i].bf16);
	}
	ck_assert_ptr_null(topo_gpu_find("Z100"));
	ck_assert_ptr_null(topo_gpu_find(""));
}
END_TEST

START_TEST(test_cluster_presets)
{
	static const char *const want[] = { "ideal", "dgx-a100", "dgx-h100", "dgx-h200",
					     "gb200-nvl72" };
	char **names;
	size_t n;
	ck_assert_int_eq(scn_preset_names("clusters", &names, &n), 0);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int found = 0;
		for (size_t j = 0; j < n; j++)
			found |= strcmp(names[j], want[i]) == 0;
		ck_assert_msg(found, "no cluster preset %s", want[i]);
	}
	for (size_t i = 0; i < n; i++) {
		struct topo_config cfg = preset(names[i]);
		char err[512] = "";
		ck_assert_str_eq(cfg.preset, names[i]);
		ck_assert_msg(topo_config_check(&cfg, err, sizeof err) == 0, "preset %s: %s",
			      names[i], err);
		ck_assert_msg(cfg.description[0] && cfg.source[0],
			      "preset %s lacks a description or a source", names[i]);
		ck_assert_msg(cfg.net_bw_Bps > 0 && cfg.net_lat_s > 0 && cfg.nodes >= 1 &&
			      cfg.gpus_per_node >= 1 && cfg.nics_per_node >= 1 &&
			      cfg.oversub >= 1 && cfg.nodes_per_leaf >= 1,
			      "preset %s: net %g B/s %g s, nodes %u x %u, nics %u, oversub %g, "
			      "per leaf %u", names[i], cfg.net_bw_Bps, cfg.net_lat_s, cfg.nodes,
			      cfg.gpus_per_node, cfg.nics_per_node, cfg.oversub,
			      cfg.nodes_per_leaf);
		ck_assert_msg(topo_gpu_find(cfg.gpu) != NULL, "preset %s: GPU %s unknown",
			      names[i], cfg.gpu);
		/* Each builds for one full node and for two. */
		struct tw w;
		tw_init(&w, &cfg, cfg.gpus_per_node);
		tw_clear(&w);
		cfg.nodes = 2;
		tw_init(&w, &cfg, 2 * cfg.gpus_per_node);
		tw_clear(&w);
		free(names[i]);
	}
	free(names);
	/* GPUs: nodes x GPUs per node; each rank is a node of the ideal cluster;
	 * the count does not wrap around 32 bits. */
	struct topo_config big = preset("dgx-h100"), ideal = preset("ideal");
	big.nodes = 1u << 30;
	ck_assert_uint_eq(topo_config_gpus_per_node(&big), 8);
	ck_assert_uint_eq(topo_config_gpus(&big), (uint64_t)8 << 30);
	ideal.nodes = 24;
	ck_assert_uint_eq(topo_config_gpus_per_node(&ideal), 1);
	ck_assert_uint_eq(topo_config_gpus(&ideal), 24);
	struct topo_config cfg;
	char err[512] = "";
	ck_assert_int_eq(scn_cluster_preset(&cfg, "dgx-h999", err, sizeof err), -1);
	ck_assert_msg(strstr(err, "dgx-h999") && strstr(err, "clusters"),
		      "unknown preset message: \"%s\"", err);
}
END_TEST

START_TEST(test_config_check_errors)
{
	char err[512] = "";
	struct topo_config cfg = preset("dgx-h100");
	cfg.nics_per_node = 16;
	ck_assert_int_eq(topo_config_check(&cfg, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "nics_per_node") != NULL, "err \"%s\"", err);
	cfg = preset("dgx-h100");
	snprintf(cfg.gpu, sizeof cfg.gpu, "Z100");
	ck_assert_int_eq(topo_config_check(&cfg, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "gpu") && strstr(err, "Z100"), "err \"%s\"", err);
	cfg = preset("dgx-h100");
	cfg.net_bw_Bps = 0;
	ck_assert_int_eq(topo_config_check(&cfg, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "network.bandwidth") != NULL, "err \"%s\"", err);
	cfg = preset("dgx-h100");
	cfg.nvlink_bw_Bps = 0;
	ck_assert_int_eq(topo_config_check(&cfg, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "nvlink.bandwidth") != NULL, "err \"%s\"", err);
	/* topo_new runs the same checks. */
	ck_assert_ptr_null(topo_new(&cfg, 8, err, sizeof err));
	ck_assert_msg(strstr(err, "nvlink.bandwidth") != NULL, "err \"%s\"", err);
}
END_TEST

/* ---- keys ------------------------------------------------------------------------ */

static void set_ok(struct topo_config *cfg, const char *key, const char *value)
{
	char err[512] = "";
	int rc = topo_config_set(cfg, key, value, err, sizeof err);
	ck_assert_msg(rc == 0, "set %s=%s: %s", key, value, err);
}

START_TEST(test_config_set_good)
{
	struct topo_config cfg = preset("dgx-a100");
	set_ok(&cfg, "nvlink.bandwidth", "450GB/s");
	ck_assert_double_eq_tol(cfg.nvlink_bw_Bps, 450e9, 1e-3);
	set_ok(&cfg, "network.latency", "5us");
	ck_assert_double_eq_tol(cfg.net_lat_s, 5e-6, 1e-18);
	set_ok(&cfg, "nodes", "4");
	ck_assert_uint_eq(cfg.nodes, 4);
	set_ok(&cfg, "network.oversubscription", "2");
	ck_assert_double_eq_tol(cfg.oversub, 2.0, 1e-15);
	set_ok(&cfg, "network.bandwidth", "400Gb/s");
	ck_assert_double_eq_tol(cfg.net_bw_Bps, 50e9, 1e-3);
	set_ok(&cfg, "nvlink.latency", "3us");
	ck_assert_double_eq_tol(cfg.nvlink_lat_s, 3e-6, 1e-18);
	set_ok(&cfg, "network.hop_latency", "0");
	ck_assert_double_eq_tol(cfg.hop_lat_s, 0, 1e-18);
	set_ok(&cfg, "gpu", "H200-SXM-141GB");
	ck_assert_str_eq(cfg.gpu, "H200-SXM-141GB");
	set_ok(&cfg, "gpus_per_node", "4");
	set_ok(&cfg, "network.nics_per_node", "4");
	ck_assert_msg(cfg.gpus_per_node == 4 && cfg.nics_per_node == 4, "gpus %u nics %u",
		      cfg.gpus_per_node, cfg.nics_per_node);
	set_ok(&cfg, "network.nodes_per_leaf", "16");
	ck_assert_uint_eq(cfg.nodes_per_leaf, 16);
	set_ok(&cfg, "pcie.bandwidth", "64GB/s");
	ck_assert_double_eq_tol(cfg.pcie_bw_Bps, 64e9, 1e-3);
	/* The preset they started from is still named: keys override it. */
	ck_assert_str_eq(cfg.preset, "dgx-a100");
	char err[512] = "";
	ck_assert_msg(topo_config_check(&cfg, err, sizeof err) == 0, "after sets: %s", err);
}
END_TEST

/* "preset" reloads every field, dropping earlier overrides. */
/* Presets are YAML files of cluster keys: loading one gives its values. */
START_TEST(test_config_set_preset_reloads)
{
	struct topo_config cfg = preset("dgx-a100"), h100 = preset("dgx-h100");
	ck_assert_str_eq(cfg.preset, "dgx-a100");
	ck_assert_double_eq_tol(cfg.nvlink_bw_Bps, 300e9, 1e-3);
	ck_assert_double_eq_tol(cfg.net_bw_Bps, 25e9, 1e-3);
	ck_assert_str_eq(h100.preset, "dgx-h100");
	ck_assert_double_eq_tol(h100.nvlink_bw_Bps, 450e9, 1e-3);
	ck_assert_double_eq_tol(h100.net_bw_Bps, 50e9, 1e-3);
	ck_assert_uint_eq(h100.kind, TOPO_FATTREE);
	ck_assert_uint_eq(preset("ideal").kind, TOPO_IDEAL);
	/* "preset" is the scenario loader's key, not the topology's. */
	char err[512] = "";
	ck_assert_int_eq(topo_config_set(&cfg, "preset", "dgx-h100", err, sizeof err), -1);
	ck_assert_msg(strstr(err, "unknown key cluster.preset"), "message: %s", err);
}
END_TEST

START_TEST(test_config_set_bad)
{
	static const struct {
		const char *key, *value;
		const char *needle1, *needle2;  /* both must appear in the error */
	} cases[] = {
		{ "nvlink.speed", "450GB/s", "nvlink.speed", "nvlink.bandwidth" },
		{ "network.bandwidth", "50", "network.bandwidth", "" },
		{ "network.bandwidth", "-50GB/s", "network.bandwidth", "negative" },
		{ "network.bandwidth", "0", "network.bandwidth", "" },
		{ "network.bandwidth", "5us", "network.bandwidth", "" },
		{ "network.latency", "-5us", "network.latency", "negative" },
		{ "network.latency", "5", "network.latency", "" },
		{ "nvlink.bandwidth", "fast", "nvlink.bandwidth", "" },
		{ "nodes", "0", "nodes", "0" },
		{ "nodes", "-4", "nodes", "" },
		{ "nodes", "4.5", "nodes", "" },
		{ "nodes", "four", "nodes", "four" },
		{ "nodes", "", "nodes", "" },
		{ "gpus_per_node", "0", "gpus_per_node", "" },
		{ "network.oversubscription", "0.5", "network.oversubscription", "" },
		{ "network.oversubscription", "-2", "network.oversubscription", "" },
		{ "gpu", "Z100", "gpu", "Z100" },
		{ "topology", "torus", "topology", "torus" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct topo_config cfg = preset("dgx-h100");
		char err[1024] = "";
		int rc = topo_config_set(&cfg, cases[i].key, cases[i].value, err, sizeof err);
		ck_assert_msg(rc == -1, "set %s=\"%s\" = %d, expected an error", cases[i].key,
			      cases[i].value, rc);
		ck_assert_msg(strstr(err, cases[i].needle1) && strstr(err, cases[i].needle2),
			      "set %s=\"%s\": error \"%s\", expected \"%s\" and \"%s\" in it",
			      cases[i].key, cases[i].value, err, cases[i].needle1,
			      cases[i].needle2);
	}
}
END_TEST

/* Every key in the table is accepted by topo_config_set with a value of its kind. */
START_TEST(test_key_table)
{
	size_t n = topo_key_count();
	ck_assert_uint_ge(n, 10);
	for (size_t i = 0; i < n; i++) {
		const char *name, *value, *help;
		topo_key_info(i, &name, &value, &help);
		ck_assert_msg(name && name[0] && value && help && help[0], "key %zu incomplete", i);
		const char *v = NULL;
		if (!strcmp(value, "integer"))
			v = "2";
		else if (!strcmp(value, "rate"))
			v = "100GB/s";
		else if (!strcmp(value, "time"))
			v = "2us";
		else if (!strcmp(value, "ratio"))
			v = "2";
		else if (!strcmp(value, "name"))
			v = !strcmp(name, "topology") ? "fattree" : "H100-SXM-80GB";
		else if (!strcmp(value, "text"))
			v = "some words";
		else if (!strcmp(value, "links"))
			v = "node0.nic1, node0.gpu2.nvlink=0.5";
		else if (!strcmp(value, "bytes or auto"))
			v = "4GB";
		ck_assert_msg(v != NULL, "key %s: unknown value kind \"%s\"", name, value);
		struct topo_config cfg = preset("dgx-h100");
		set_ok(&cfg, name, v);
	}
	char json[2048];
	struct topo_config cfg = preset("dgx-h100");
	topo_config_json(&cfg, json, sizeof json);
	ck_assert_msg(json[0] == '{' && json[strlen(json) - 1] == '}' &&
		      strstr(json, "\"preset\":\"dgx-h100\"") && strstr(json, "\"nodes\":1") &&
		      strstr(json, "\"memory_reserve\":\"auto\"}"), "json: %s", json);
	set_ok(&cfg, "memory_reserve", "3GB");
	ck_assert(cfg.memory_reserve_set && cfg.memory_reserve_B == 3e9);
	topo_config_json(&cfg, json, sizeof json);
	ck_assert_msg(strstr(json, "\"memory_reserve\":3000000000}"), "json: %s", json);
	set_ok(&cfg, "memory_reserve", "auto");
	ck_assert(!cfg.memory_reserve_set);
}
END_TEST

/* ---- topo_new ------------------------------------------------------------------- */

START_TEST(test_topo_new_errors)
{
	char err[512] = "";
	struct topo_config ideal = preset("ideal"), dgx = preset("dgx-h100");
	ck_assert_ptr_null(topo_new(&ideal, 0, err, sizeof err));
	ck_assert_msg(strstr(err, "0 ranks") != NULL, "0 ranks: \"%s\"", err);
	err[0] = 0;
	ck_assert_ptr_null(topo_new(&ideal, TOPO_MAX_RANKS + 1, err, sizeof err));
	ck_assert_msg(strstr(err, "ranks") != NULL, "too many ranks: \"%s\"", err);
	err[0] = 0;
	ck_assert_ptr_null(topo_new(&dgx, 9, err, sizeof err));   /* one node of 8 */
	ck_assert_msg(strstr(err, "nodes") != NULL, "9 ranks on 1 node: \"%s\"", err);
	dgx.nodes = 4;
	err[0] = 0;
	ck_assert_ptr_null(topo_new(&dgx, 33, err, sizeof err));
	ck_assert_msg(strstr(err, "nodes") && strstr(err, "33"), "33 ranks on 4 nodes: \"%s\"",
		      err);
	/* The limits themselves are accepted. */
	struct topo *t = topo_new(&dgx, 32, err, sizeof err);
	ck_assert_msg(t != NULL, "32 ranks on 4 nodes: %s", err);
	topo_free(t);
	t = topo_new(&ideal, TOPO_MAX_RANKS, err, sizeof err);
	ck_assert_msg(t != NULL, "TOPO_MAX_RANKS on ideal: %s", err);
	topo_free(t);
	topo_free(NULL);
}
END_TEST

START_TEST(test_placement)
{
	struct topo_config dgx = preset("dgx-h100");
	dgx.nodes = 4;
	struct tw w;
	tw_init(&w, &dgx, 32);
	for (uint32_t r = 0; r < 32; r++) {
		ck_assert_uint_eq(topo_node_of(w.topo, r), r / 8);
		ck_assert_uint_eq(topo_local_of(w.topo, r), r % 8);
		ck_assert_uint_eq(topo_sim_ops()->node_of(w.topo, r), r / 8);
	}
	ck_assert_uint_eq(topo_sim_ops()->rails(w.topo), 8);
	ck_assert_uint_eq(topo_config(w.topo)->nodes, 4);
	tw_clear(&w);
	struct topo_config ideal = preset("ideal");
	tw_init(&w, &ideal, 5);
	for (uint32_t r = 0; r < 5; r++)
		ck_assert_uint_eq(topo_sim_ops()->node_of(w.topo, r), r);
	ck_assert_uint_eq(topo_sim_ops()->rails(w.topo), 1);
	tw_clear(&w);
}
END_TEST

/* ---- routes ------------------------------------------------------------------------ */

START_TEST(test_routes_dgx_h100)
{
	struct topo_config dgx = preset("dgx-h100");
	dgx.nodes = 4;
	struct tw w;
	tw_init(&w, &dgx, 32);
	/* Same node: GPU 0 -> NVSwitch -> GPU 1. */
	struct sim_route r = route(&w, 0, 1);
	ASSERT_ROUTE(r, 2, 450e9, 1e-6, "0 -> 1 (same node)");
	ASSERT_LINK_NAME(&w, r.link[0], "node0.gpu0.nvlink.tx");
	ASSERT_LINK_NAME(&w, r.link[1], "node0.gpu1.nvlink.rx");
	/* Same rail across nodes: NIC tx, leaf, NIC rx. */
	r = route(&w, 0, 8);
	ASSERT_ROUTE(r, 2, 50e9, 5e-6, "0 -> 8 (rail 0, node 0 -> 1)");
	ASSERT_LINK_NAME(&w, r.link[0], "node0.nic0.tx");
	ASSERT_LINK_NAME(&w, r.link[1], "node1.nic0.rx");
	r = route(&w, 13, 29);
	ASSERT_ROUTE(r, 2, 50e9, 5e-6, "13 -> 29 (rail 5, node 1 -> 3)");
	ASSERT_LINK_NAME(&w, r.link[0], "node1.nic5.tx");
	ASSERT_LINK_NAME(&w, r.link[1], "node3.nic5.rx");
	/* Across rails: up to the spine and down, two more hops of latency. */
	r = route(&w, 0, 9);
	ASSERT_ROUTE(r, 4, 50e9, 5e-6 + 2 * 0.3e-6, "0 -> 9 (rail 0 -> rail 1)");
	ASSERT_LINK_NAME(&w, r.link[0], "node0.nic0.tx");
	ASSERT_LINK_NAME(&w, r.link[1], "rail0.leaf0.up");
	ASSERT_LINK_NAME(&w, r.link[2], "rail1.leaf0.down");
	ASSERT_LINK_NAME(&w, r.link[3], "node1.nic1.rx");
	ck_assert_msg(r.alpha_ps > route(&w, 0, 8).alpha_ps, "the spine adds no latency");
	/* A leaf trunk carries its 4 nodes' NICs: 4 x 50 GB/s. */
	ck_assert_double_eq_tol(link_bw(&w, r.link[1]), 200e9, 1e-3);
	ck_assert_double_eq_tol(link_bw(&w, r.link[2]), 200e9, 1e-3);
	/* Routes are fixed: asking twice gives the same links. */
	struct sim_route again = route(&w, 0, 9);
	ck_assert_msg(memcmp(again.link, r.link, r.n * sizeof r.link[0]) == 0 &&
		      again.n == r.n, "route 0 -> 9 changed between two calls");
	/* The reverse direction uses other links. */
	struct sim_route back = route(&w, 9, 0);
	for (uint32_t i = 0; i < back.n; i++)
		for (uint32_t j = 0; j < r.n; j++)
			ck_assert_msg(back.link[i] != r.link[j], "9 -> 0 and 0 -> 9 share link %u",
				      r.link[j]);
	tw_clear(&w);
}
END_TEST

/*
 * cluster.faults: node 0's NIC 0 has failed, so GPU 0 crosses NVLink to GPU
 * 1 and leaves by NIC 1 (PXN); GPU 8 on node 1 arrives on its own rail 0, so
 * the message changes rails through the spine. A NIC at half its bandwidth
 * halves the routes through it, and its links.
 */
START_TEST(test_routes_with_faults)
{
	struct topo_config dgx = preset("dgx-h100");
	dgx.nodes = 2;
	snprintf(dgx.faults, sizeof dgx.faults, "node0.nic0, node1.nic5=0.5");
	struct tw w;
	tw_init(&w, &dgx, 16);
	struct sim_route r = route(&w, 0, 8);
	ASSERT_ROUTE(r, 6, 50e9, 1e-6 + 5e-6 + 2 * 0.3e-6, "0 -> 8 around node0.nic0");
	ASSERT_LINK_NAME(&w, r.link[0], "node0.gpu0.nvlink.tx");
	ASSERT_LINK_NAME(&w, r.link[1], "node0.gpu1.nvlink.rx");
	ASSERT_LINK_NAME(&w, r.link[2], "node0.nic1.tx");
	ASSERT_LINK_NAME(&w, r.link[3], "rail1.leaf0.up");
	ASSERT_LINK_NAME(&w, r.link[4], "rail0.leaf0.down");
	ASSERT_LINK_NAME(&w, r.link[5], "node1.nic0.rx");
	/* Into the failed NIC's node: node 1's GPU 8 sends to GPU 0 the same way
	 * round, arriving on node 0's rail 1 and crossing to GPU 0 on NVLink. */
	r = route(&w, 8, 0);
	ck_assert_uint_eq(r.n, 6);
	ASSERT_LINK_NAME(&w, r.link[4], "node0.gpu1.nvlink.tx");
	ASSERT_LINK_NAME(&w, r.link[5], "node0.gpu0.nvlink.rx");
	/* Rail 5 with node 1's NIC at half bandwidth. */
	r = route(&w, 5, 13);
	ASSERT_ROUTE(r, 2, 25e9, 5e-6, "5 -> 13 through node1.nic5 at 0.5");
	ck_assert_double_eq_tol(link_bw(&w, r.link[1]), 25e9, 1e-3);
	tw_clear(&w);
}
END_TEST

/*
 * 64 nodes with 32 per leaf: two leaves per rail, each trunk 32 x 50 / 4 =
 * 400 GB/s at oversubscription 4, still above one NIC; at 64 it falls to
 * 25 GB/s and bounds the route.
 */
START_TEST(test_routes_oversubscribed)
{
	static const struct {
		double oversub, trunk, route_bw;
	} cases[] = {
		{ 4, 400e9, 50e9 },
		{ 64, 25e9, 25e9 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct topo_config dgx = preset("dgx-h100");
		dgx.nodes = 64;
		dgx.oversub = cases[i].oversub;
		struct tw w;
		tw_init(&w, &dgx, 512);
		/* Node 0 and node 32 sit under different leaves of rail 0. */
		struct sim_route r = route(&w, 0, 256);
		char what[64];
		snprintf(what, sizeof what, "0 -> 256 at oversubscription %g", cases[i].oversub);
		ASSERT_ROUTE(r, 4, cases[i].route_bw, 5e-6 + 2 * 0.3e-6, what);
		ASSERT_LINK_NAME(&w, r.link[1], "rail0.leaf0.up");
		ASSERT_LINK_NAME(&w, r.link[2], "rail0.leaf1.down");
		ck_assert_msg(rel_err(link_bw(&w, r.link[1]), cases[i].trunk) < 1e-12 &&
			      rel_err(link_bw(&w, r.link[2]), cases[i].trunk) < 1e-12,
			      "%s: trunks %.6g and %.6g B/s, expected %.6g", what,
			      link_bw(&w, r.link[1]), link_bw(&w, r.link[2]), cases[i].trunk);
		ck_assert_double_eq_tol(link_bw(&w, r.link[0]), 50e9, 1e-3);
		/* Same rail and leaf: no trunk. */
		struct sim_route near = route(&w, 0, 8);
		ck_assert_uint_eq(near.n, 2);
		tw_clear(&w);
	}
	/* 40 nodes: the second leaf has 8, so its trunk is 8 x 50 / 4. */
	struct topo_config dgx = preset("dgx-h100");
	dgx.nodes = 40;
	dgx.oversub = 4;
	struct tw w;
	tw_init(&w, &dgx, 320);
	struct sim_route r = route(&w, 256, 0);
	ASSERT_LINK_NAME(&w, r.link[1], "rail0.leaf1.up");
	ck_assert_double_eq_tol(link_bw(&w, r.link[1]), 100e9, 1e-3);
	tw_clear(&w);
}
END_TEST

START_TEST(test_routes_ideal)
{
	struct topo_config ideal = preset("ideal");
	struct tw w;
	tw_init(&w, &ideal, 16);
	uint32_t before = sim_nlinks(w.sim);
	struct sim_route ab = route(&w, 3, 7), ab2 = route(&w, 3, 7), ba = route(&w, 7, 3);
	ASSERT_ROUTE(ab, 1, 50e9, 10e-6, "ideal 3 -> 7");
	ASSERT_ROUTE(ba, 1, 50e9, 10e-6, "ideal 7 -> 3");
	ck_assert_uint_eq(ab2.link[0], ab.link[0]);
	ck_assert_msg(ab.link[0] != ba.link[0], "3 -> 7 and 7 -> 3 share link %u", ab.link[0]);
	ck_assert_uint_eq(sim_nlinks(w.sim), before + 2);
	ASSERT_LINK_NAME(&w, ab.link[0], "rank3->rank7");
	ASSERT_LINK_NAME(&w, ba.link[0], "rank7->rank3");
	/* Many pairs: the table grows and keeps every link. */
	for (uint32_t a = 0; a < 16; a++)
		for (uint32_t b = 0; b < 16; b++)
			if (a != b)
				route(&w, a, b);
	ck_assert_uint_eq(sim_nlinks(w.sim), before + 16 * 15);
	ck_assert_uint_eq(route(&w, 3, 7).link[0], ab.link[0]);
	ASSERT_LINK_NAME(&w, route(&w, 15, 14).link[0], "rank15->rank14");
	tw_clear(&w);
}
END_TEST

/* Names of a sample of links are non-empty and pairwise distinct. */
START_TEST(test_link_names_distinct)
{
	struct topo_config dgx = preset("dgx-h100");
	dgx.nodes = 4;
	struct tw w;
	tw_init(&w, &dgx, 32);
	uint32_t n = sim_nlinks(w.sim);
	/* 32 x 2 NVLink, 32 x 2 NIC, 8 rails x 1 leaf x 2 trunks. */
	ck_assert_uint_eq(n, 32 * 2 + 32 * 2 + 8 * 2);
	char (*names)[96] = calloc(n, sizeof *names);
	ck_assert_ptr_nonnull(names);
	for (uint32_t i = 0; i < n; i++) {
		link_name(&w, i, names[i], sizeof names[i]);
		ck_assert_msg(names[i][0] != 0, "link %u has an empty name", i);
		for (uint32_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(names[i], names[j]) != 0, "links %u and %u are both "
				      "\"%s\"", j, i, names[i]);
	}
	free(names);
	tw_clear(&w);
	struct topo_config ideal = preset("ideal");
	tw_init(&w, &ideal, 4);
	route(&w, 0, 1);
	route(&w, 1, 0);
	route(&w, 2, 3);
	char a[96], b[96], c[96];
	link_name(&w, 0, a, sizeof a);
	link_name(&w, 1, b, sizeof b);
	link_name(&w, 2, c, sizeof c);
	ck_assert_msg(a[0] && b[0] && c[0] && strcmp(a, b) && strcmp(b, c) && strcmp(a, c),
		      "ideal link names \"%s\", \"%s\", \"%s\"", a, b, c);
	tw_clear(&w);
}
END_TEST

static Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("presets");
	tcase_add_test(tc, test_gpu_presets);
	tcase_add_test(tc, test_cluster_presets);
	tcase_add_test(tc, test_config_check_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys");
	tcase_add_test(tc, test_config_set_good);
	tcase_add_test(tc, test_config_set_preset_reloads);
	tcase_add_test(tc, test_config_set_bad);
	tcase_add_test(tc, test_key_table);
	suite_add_tcase(s, tc);

	tc = tcase_create("build");
	tcase_add_test(tc, test_topo_new_errors);
	tcase_add_test(tc, test_placement);
	suite_add_tcase(s, tc);

	tc = tcase_create("routes");
	tcase_add_test(tc, test_routes_dgx_h100);
	tcase_add_test(tc, test_routes_with_faults);
	tcase_add_test(tc, test_routes_oversubscribed);
	tcase_add_test(tc, test_routes_ideal);
	tcase_add_test(tc, test_link_names_distinct);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(topology_suite());
}
