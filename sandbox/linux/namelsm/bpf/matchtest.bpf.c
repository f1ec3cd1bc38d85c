// SPDX-License-Identifier: GPL-2.0
/* A test program for match.h: BPF_PROG_TYPE_SYSCALL, run from user space
 * (BPF_PROG_TEST_RUN) with a chain of names in its context, so that the
 * hashing and matching the LSM program does are tested in the kernel's
 * own BPF machine, on any kernel that runs BPF programs (the LSM program
 * itself needs a kernel that lets it attach). */

#include "core.h"
#include <bpf/bpf_helpers.h>
#include "match.h"

char LICENSE[] SEC("license") = "GPL";

#define TESTD 16
#define TESTLEN 64

struct testctx {
	__u32 kind;
	__u32 dev;
	__u32 depth;  /* names in name, leaf first */
	__u32 rooted; /* the chain reaches its file system's root */
	__u32 rule;   /* out: the refusing rule, or 0 */
	__u32 pad;
	char name[TESTD][TESTLEN];
};

const struct testctx *unused_testctx __attribute__((unused));

struct names {
	char name[TESTD][TESTLEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct names);
} testnames SEC(".maps");

struct feedctx {
	struct names *t;
	__u32 depth;
	struct chain *c;
};

static long feed_one(__u64 i, void *p)
{
	struct feedctx *f = p;
	if (i >= TESTD || i >= f->depth)
		return 1;
	long n = 0;
	for (int j = 0; j < TESTLEN; j++) {
		char b = f->t->name[i & (TESTD - 1)][j];
		if (!b)
			break;
		f->c->buf[j] = b;
		n++;
	}
	add_comp(f->c, i, n);
	return 0;
}

SEC("syscall")
int matchtest(struct testctx *t)
{
	__u32 zero = 0;
	struct config *k = bpf_map_lookup_elem(&cfg, &zero);
	struct chain *c = bpf_map_lookup_elem(&scratch, &zero);
	if (!k || !c)
		return -1;
	reset(c);
	struct names *nm = bpf_map_lookup_elem(&testnames, &zero);
	if (!nm)
		return -1;
	/* Out of the context, which takes no variable offsets. */
	bpf_probe_read_kernel(nm, sizeof(*nm), t->name);
	struct feedctx f = {.t = nm, .depth = t->depth, .c = c};
	bpf_loop(TESTD, feed_one, &f, 0);
	c->rooted = t->rooted;
	t->rule = match(c, k, t->kind, t->dev);
	return 0;
}
