/*
 * fattree.c - nodes of G GPUs on an NVSwitch, NICs on a rail-optimised
 * two-level fat tree.
 *
 * Links (all directed, one per direction):
 *   NVLink     each GPU to its NVSwitch and back, nvlink.bandwidth each; the
 *              switch itself is non-blocking.
 *   NIC        each NIC to its leaf and back, network.bandwidth each. GPU i
 *              of a node uses NIC i * nics / G: its rail.
 *   leaf       rail r has one leaf switch per network.nodes_per_leaf nodes;
 *              each leaf has one aggregate uplink to the spine and one
 *              downlink from it, of (nodes under it) x network.bandwidth /
 *              oversubscription.
 * Routes: inside a node, GPU -> NVSwitch -> GPU (nvlink.latency). Across
 * nodes on the same rail and leaf, NIC -> leaf -> NIC (network.latency);
 * otherwise up through the spine and down (plus two hop latencies). Rings
 * are laid out so that consecutive nodes meet on one rail.
 *
 * Faults (cluster.faults): a degraded NIC or NVLink runs at its fraction of
 * the bandwidth. A failed NIC's traffic crosses NVLink to a GPU of another
 * rail of its node and leaves through that rail's NIC, as NCCL's PXN does
 * (the destination's rail when it works, else the nearest working one; the
 * same on the receiving side); each detour adds the NVLink latency. A node
 * with no working NIC, or a GPU whose NVLink failed, has no route: the check
 * says so.
 */
#include "topology/topo-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG_NVL_TX = 1, TAG_NVL_RX, TAG_NIC_TX, TAG_NIC_RX, TAG_UP, TAG_DOWN };

struct fattree {
	uint32_t nodes, gpn, nics, npl, leaves;  /* leaves per rail */
	uint32_t nvl_tx, nvl_rx, nic_tx, nic_rx, up, down;  /* first link ids */
	sim_ps nvl_alpha, net_alpha, spine_alpha;
	double *nic_f, *nvl_f;    /* per NIC, per GPU: share of the bandwidth
				   * (0: failed); NULL without faults      */
};

/* The faults that apply to the nodes in use, checked (topo_faults_check);
 * their factors in nic_f[node * nics + k] and nvl_f[node * gpn + g] (1
 * where none). */
static int faults_apply(const struct topo *t, uint32_t nodes, double **nic_f, double **nvl_f,
			char *err, size_t errlen)
{
	const struct topo_config *c = &t->cfg;
	struct topo_fault f[TOPO_MAX_FAULTS];
	size_t n;
	*nic_f = *nvl_f = NULL;
	if (!c->faults[0])
		return 0;
	if (topo_faults_check(c, nodes, "the run uses", err, errlen) < 0 ||
	    topo_faults_parse(c->faults, f, &n, err, errlen) < 0)
		return -1;
	if (!n)
		return 0;
	uint32_t gpn = c->gpus_per_node, nics = c->nics_per_node;
	double *nf = xmalloc((size_t)nodes * nics * sizeof(double));
	double *gf = xmalloc((size_t)nodes * gpn * sizeof(double));
	for (size_t i = 0; i < (size_t)nodes * nics; i++)
		nf[i] = 1;
	for (size_t i = 0; i < (size_t)nodes * gpn; i++)
		gf[i] = 1;
	for (size_t i = 0; i < n; i++) {
		int nic = f[i].kind == TOPO_FAULT_NIC;
		(nic ? nf : gf)[(size_t)f[i].node * (nic ? nics : gpn) + f[i].index] = f[i].factor;
	}
	*nic_f = nf, *nvl_f = gf;
	return 0;
}

static int fattree_check(struct topo *t, char *err, size_t errlen)
{
	uint64_t have = (uint64_t)t->cfg.nodes * t->cfg.gpus_per_node;
	if (t->nranks > have) {
		uint32_t need = (t->nranks + t->cfg.gpus_per_node - 1) / t->cfg.gpus_per_node;
		snprintf(err, errlen, "%u ranks need %u nodes of %u GPUs; the cluster has %u "
			 "(set --nodes or cluster.nodes)", t->nranks, need,
			 t->cfg.gpus_per_node, t->cfg.nodes);
		return -1;
	}
	double *nf, *gf;
	uint32_t nodes = (t->nranks + t->cfg.gpus_per_node - 1) / t->cfg.gpus_per_node;
	if (faults_apply(t, nodes, &nf, &gf, err, errlen) < 0)
		return -1;
	free(nf);
	free(gf);
	return 0;
}

/* Bandwidth of leaf l's trunk to the spine (each direction). */
static double leaf_bw(const struct topo *t, const struct fattree *f, uint32_t l)
{
	uint32_t under = f->nodes - l * f->npl;
	if (under > f->npl)
		under = f->npl;
	return under * t->cfg.net_bw_Bps / t->cfg.oversub;
}

/* Add n links of one kind and bandwidth, each scaled by its factor (a
 * failed link keeps its bandwidth: nothing is routed over it); returns the
 * first id. */
static uint32_t add_links(struct sim *sim, uint32_t n, double bw, uint32_t kind,
			  const double *factor)
{
	uint32_t first = sim_nlinks(sim);
	for (uint32_t i = 0; i < n; i++)
		sim_link_add(sim, factor && factor[i] > 0 ? bw * factor[i] : bw,
			     TOPO_TAG(kind, i));
	return first;
}

static void fattree_attach(struct topo *t)
{
	struct fattree *f = xcalloc(1, sizeof(*f));
	const struct topo_config *c = &t->cfg;
	f->gpn = c->gpus_per_node;
	f->nodes = (t->nranks + f->gpn - 1) / f->gpn;  /* nodes in use */
	f->nics = c->nics_per_node;
	f->npl = c->nodes_per_leaf;
	f->leaves = (f->nodes + f->npl - 1) / f->npl;
	uint32_t gpus = f->nodes * f->gpn;
	char err[256];
	if (faults_apply(t, f->nodes, &f->nic_f, &f->nvl_f, err, sizeof(err)) < 0)
		BUG("%s", err);  /* fattree_check accepted them */
	f->nvl_tx = add_links(t->sim, gpus, c->nvlink_bw_Bps, TAG_NVL_TX, f->nvl_f);
	f->nvl_rx = add_links(t->sim, gpus, c->nvlink_bw_Bps, TAG_NVL_RX, f->nvl_f);
	if (f->nodes > 1) {
		f->nic_tx = add_links(t->sim, f->nodes * f->nics, c->net_bw_Bps, TAG_NIC_TX,
				      f->nic_f);
		f->nic_rx = add_links(t->sim, f->nodes * f->nics, c->net_bw_Bps, TAG_NIC_RX,
				      f->nic_f);
		/* A leaf's aggregate trunk carries what its nodes' NICs can send,
		 * divided by the oversubscription. */
		f->up = sim_nlinks(t->sim);
		for (int dir = 0; dir < 2; dir++)
			for (uint32_t i = 0; i < f->nics * f->leaves; i++)
				sim_link_add(t->sim, leaf_bw(t, f, i % f->leaves),
					     TOPO_TAG(dir ? TAG_DOWN : TAG_UP, i));
		f->down = f->up + f->nics * f->leaves;
	}
	f->nvl_alpha = sim_ps_from_s(c->nvlink_lat_s);
	f->net_alpha = sim_ps_from_s(c->net_lat_s);
	f->spine_alpha = sim_ps_from_s(c->net_lat_s + 2 * c->hop_lat_s);
	t->state = f;
}

static double nic_f(const struct fattree *f, uint32_t node, uint32_t k)
{
	return f->nic_f ? f->nic_f[node * f->nics + k] : 1;
}

static double nvl_f(const struct fattree *f, uint32_t gpu)
{
	return f->nvl_f ? f->nvl_f[gpu] : 1;
}

/* The NIC of node a rank leaves or arrives by: its own rail's when it works,
 * else `want`'s when that works, else the nearest working one. */
static uint32_t pick_nic(const struct fattree *f, uint32_t node, uint32_t own, uint32_t want)
{
	if (nic_f(f, node, own) > 0)
		return own;
	if (nic_f(f, node, want) > 0)
		return want;
	for (uint32_t d = 1; d < f->nics; d++)
		if (nic_f(f, node, (own + d) % f->nics) > 0)
			return (own + d) % f->nics;
	BUG("node %u has no working NIC", node);  /* the check refused it */
}

/* A GPU of node `node` on rail k: the first one. */
static uint32_t rail_gpu(const struct fattree *f, uint32_t node, uint32_t k)
{
	return node * f->gpn + (k * f->gpn + f->nics - 1) / f->nics;
}

static void fattree_route(struct topo *t, uint32_t src, uint32_t dst, struct sim_route *out)
{
	const struct fattree *f = t->state;
	uint32_t ns = src / f->gpn, nd = dst / f->gpn;
	double nvl = t->cfg.nvlink_bw_Bps;
	if (ns == nd) {
		*out = (struct sim_route){
			.alpha_ps = f->nvl_alpha,
			.bw_Bps = nvl * fmin(nvl_f(f, src), nvl_f(f, dst)), .n = 2,
			.link = { f->nvl_tx + src, f->nvl_rx + dst },
		};
		return;
	}
	uint32_t rs = (src % f->gpn) * f->nics / f->gpn, rd = (dst % f->gpn) * f->nics / f->gpn;
	uint32_t ks = pick_nic(f, ns, rs, rd), kd = pick_nic(f, nd, rd, ks);
	uint32_t ls = ns / f->npl, ld = nd / f->npl;
	out->n = 0;
	out->bw_Bps = t->cfg.net_bw_Bps * fmin(nic_f(f, ns, ks), nic_f(f, nd, kd));
	out->alpha_ps = f->net_alpha;
	if (ks != rs) {  /* PXN: over NVLink to a GPU of the working rail first */
		uint32_t via = rail_gpu(f, ns, ks);
		out->link[out->n++] = f->nvl_tx + src;
		out->link[out->n++] = f->nvl_rx + via;
		out->bw_Bps = fmin(out->bw_Bps, nvl * fmin(nvl_f(f, src), nvl_f(f, via)));
		out->alpha_ps = sim_ps_add(out->alpha_ps, f->nvl_alpha);
	}
	out->link[out->n++] = f->nic_tx + ns * f->nics + ks;
	if (ks != kd || ls != ld) {
		/* Up through the spine and down: the trunks are never narrower
		 * than one NIC unless oversubscribed beyond the leaf's nodes. */
		out->link[out->n++] = f->up + ks * f->leaves + ls;
		out->link[out->n++] = f->down + kd * f->leaves + ld;
		double trunk = fmin(leaf_bw(t, f, ls), leaf_bw(t, f, ld));
		if (trunk < out->bw_Bps)
			out->bw_Bps = trunk;
		out->alpha_ps = sim_ps_add(out->alpha_ps, f->spine_alpha - f->net_alpha);
	}
	out->link[out->n++] = f->nic_rx + nd * f->nics + kd;
	if (kd != rd) {  /* and from the working rail's GPU to the destination */
		uint32_t via = rail_gpu(f, nd, kd);
		out->link[out->n++] = f->nvl_tx + via;
		out->link[out->n++] = f->nvl_rx + dst;
		out->bw_Bps = fmin(out->bw_Bps, nvl * fmin(nvl_f(f, via), nvl_f(f, dst)));
		out->alpha_ps = sim_ps_add(out->alpha_ps, f->nvl_alpha);
	}
}

static void fattree_link_name(struct topo *t, uint32_t tag, char *buf, size_t len)
{
	const struct fattree *f = t->state;
	uint32_t i = TOPO_TAG_INDEX(tag);
	switch (TOPO_TAG_KIND(tag)) {
	case TAG_NVL_TX:
	case TAG_NVL_RX:
		snprintf(buf, len, "node%u.gpu%u.nvlink.%s", i / f->gpn, i % f->gpn,
			 TOPO_TAG_KIND(tag) == TAG_NVL_TX ? "tx" : "rx");
		break;
	case TAG_NIC_TX:
	case TAG_NIC_RX:
		snprintf(buf, len, "node%u.nic%u.%s", i / f->nics, i % f->nics,
			 TOPO_TAG_KIND(tag) == TAG_NIC_TX ? "tx" : "rx");
		break;
	default:
		snprintf(buf, len, "rail%u.leaf%u.%s", i / f->leaves, i % f->leaves,
			 TOPO_TAG_KIND(tag) == TAG_UP ? "up" : "down");
		break;
	}
}

static void fattree_free(struct topo *t)
{
	struct fattree *f = t->state;
	if (f) {
		free(f->nic_f);
		free(f->nvl_f);
	}
	free(t->state);
}

const struct topo_kind_ops topo_fattree_ops = {
	.name = "fattree",
	.check = fattree_check,
	.attach = fattree_attach,
	.route = fattree_route,
	.link_name = fattree_link_name,
	.free = fattree_free,
};
