// SPDX-License-Identifier: GPL-2.0
/* namelsm: the creation-time name rules of srt's sandboxes, checked in the
 * kernel (BPF LSM). See doc.go for the design; compile.go builds the maps.
 *
 * Scope: only tasks whose mount namespace is in `scopes` (the sandbox's,
 * registered by srt before PID 1 lets the command run). Everything else
 * returns 0 at the first map lookup.
 *
 * A name is judged by its dentry chain (d_name up the d_parent links to
 * the superblock's root): bind mounts share dentries, so the chain spells
 * the host's names, whatever the sandbox's mount layout. Each component is
 * hashed (FNV-1a 64); the rules are hash-map entries of windows of
 * components, tails of the last name, and paths from a superblock's root.
 * A hash collision can only refuse more (a rule matching a name it does
 * not name); every exception (the git ones) compares the bytes. */

#include "core.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "match.h"

char LICENSE[] SEC("license") = "GPL";

/* Ops in a record. */
#define OP_CREATE 1
#define OP_MKDIR 2
#define OP_MKNOD 3
#define OP_SYMLINK 4
#define OP_LINK 5
#define OP_LINKSRC 6
#define OP_OPEN 7
#define OP_RENAME 8
#define OP_TRUNCATE 9

#define S_IFMT 00170000
#define S_IFREG 0100000
#define FMODE_WRITE 0x2
#define FMODE_CREATED 0x100000
#define O_TRUNC 01000

struct event {
	__u32 pid;  /* tgid, in the initial PID namespace */
	__u32 rule;
	__u32 op;
	__u32 depth; /* components in comp (leaf first) */
	__u32 dev;
	__u32 more; /* the chain went on above comp */
	char comp[EVCOMP][EVLEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);   /* mount namespace inode number */
	__type(value, __u32); /* unused */
} scopes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32); /* superblock s_dev (kernel encoding) */
	__type(value, __u32);
} exempt SEC(".maps");

/* For bpf2go's -type event: the record's layout in the object's BTF. */
const struct event *unused_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} events SEC(".maps");

static __always_inline int in_scope(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct nsproxy *ns = BPF_CORE_READ(t, nsproxy);
	if (!ns)
		return 0;
	__u32 inum = BPF_CORE_READ(ns, mnt_ns, ns.inum);
	return bpf_map_lookup_elem(&scopes, &inum) != 0;
}

struct walkctx {
	struct dentry *d;
	struct chain *c;
};

static long walk_one(__u64 i, void *p)
{
	struct walkctx *w = p;
	struct chain *c = w->c;
	struct dentry *d = w->d;
	if (i >= MAXD)
		return 1;
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	long n = bpf_probe_read_kernel_str(c->buf, NAMEMAX, name);
	if (n < 1)
		n = 1;
	add_comp(c, i, n - 1);
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	if (!parent || parent == d) {
		c->rooted = 1;
		return 1;
	}
	w->d = parent;
	return 0;
}

struct evctx {
	struct dentry *d;
	struct event *e;
};

static long ev_one(__u64 i, void *p)
{
	struct evctx *x = p;
	if (i >= EVCOMP) {
		x->e->more = 1;
		return 1;
	}
	struct dentry *d = x->d;
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	if (!parent || parent == d)
		return 1;
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	bpf_probe_read_kernel_str(x->e->comp[i & (EVCOMP - 1)], EVLEN, name);
	x->e->depth = i + 1;
	x->d = parent;
	return 0;
}

static __always_inline void record(struct dentry *d, __u32 rule, __u32 op, __u32 dev)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->rule = rule;
	e->op = op;
	e->dev = dev;
	e->depth = 0;
	e->more = 0;
	struct evctx x = {.d = d, .e = e};
	bpf_loop(EVCOMP + 1, ev_one, &x, 0);
	bpf_ringbuf_submit(e, 0);
}

/* check judges dentry dp (the new name, or the existing one) as kind. A
 * global function, verified once per program; the dentry comes as a
 * number, read with CO-RE probes. */
__noinline int check(__u64 dp, __u32 kind, __u32 op)
{
	struct dentry *d = (struct dentry *)dp;
	__u32 zero = 0;
	struct config *k = bpf_map_lookup_elem(&cfg, &zero);
	struct chain *c = bpf_map_lookup_elem(&scratch, &zero);
	if (!k || !c)
		return -EACCES; /* fail closed */
	__u32 dev = BPF_CORE_READ(d, d_sb, s_dev);
	if (bpf_map_lookup_elem(&exempt, &dev))
		return 0;
	reset(c);
	struct walkctx w = {.d = d, .c = c};
	bpf_loop(MAXD, walk_one, &w, 0);
	__u32 r = match(c, k, kind, dev);
	if (!r)
		return 0;
	record(d, r, op, dev);
	return -EACCES;
}

#ifndef NAMELSM_NO_HOOKS
SEC("lsm/inode_create")
int BPF_PROG(inode_create, struct inode *dir, struct dentry *dentry, umode_t mode, int ret)
{
	if (ret || !in_scope())
		return ret;
	return check((__u64)dentry, KFILE, OP_CREATE);
}

SEC("lsm/inode_mkdir")
int BPF_PROG(inode_mkdir, struct inode *dir, struct dentry *dentry, umode_t mode, int ret)
{
	if (ret || !in_scope())
		return ret;
	return check((__u64)dentry, KDIR, OP_MKDIR);
}

SEC("lsm/inode_mknod")
int BPF_PROG(inode_mknod, struct inode *dir, struct dentry *dentry, umode_t mode, dev_t rdev, int ret)
{
	if (ret || !in_scope())
		return ret;
	return check((__u64)dentry, (mode & S_IFMT) == S_IFREG ? KFILE : KOTHER, OP_MKNOD);
}

SEC("lsm/inode_symlink")
int BPF_PROG(inode_symlink, struct inode *dir, struct dentry *dentry, const char *old_name, int ret)
{
	if (ret || !in_scope())
		return ret;
	return check((__u64)dentry, KSYMLINK, OP_SYMLINK);
}

SEC("lsm/inode_link")
int BPF_PROG(inode_link, struct dentry *old_dentry, struct inode *dir, struct dentry *new_dentry, int ret)
{
	if (ret || !in_scope())
		return ret;
	/* A hard link to a symlink is a symlink; a second name for a
	 * protected file is a way to write it (link_linux.go). */
	umode_t m = BPF_CORE_READ(old_dentry, d_inode, i_mode);
	int r = check((__u64)new_dentry, (m & S_IFMT) == 0120000 ? KSYMLINK : KOTHER, OP_LINK);
	if (r)
		return r;
	return check((__u64)old_dentry, KEXISTED, OP_LINKSRC);
}

SEC("lsm/inode_rename")
int BPF_PROG(inode_rename, struct inode *old_dir, struct dentry *old_dentry, struct inode *new_dir,
	     struct dentry *new_dentry, int ret)
{
	if (ret || !in_scope())
		return ret;
	/* srt's supervisor performs every rename of the sandbox, from
	 * outside it: one made inside went past the seccomp filter. */
	__u32 dev = BPF_CORE_READ(old_dentry, d_sb, s_dev);
	if (bpf_map_lookup_elem(&exempt, &dev))
		return 0;
	record(new_dentry, R_RENAME, OP_RENAME, dev);
	return -EACCES;
}

SEC("lsm/file_open")
int BPF_PROG(file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	fmode_t fm = BPF_CORE_READ(file, f_mode);
	unsigned int fl = BPF_CORE_READ(file, f_flags);
	if (!(fm & FMODE_WRITE) && !(fl & O_TRUNC))
		return 0;
	if (fm & FMODE_CREATED)
		return 0; /* inode_create judged it */
	if (!in_scope())
		return 0;
	struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
	umode_t m = BPF_CORE_READ(d, d_inode, i_mode);
	if ((m & S_IFMT) != S_IFREG)
		return 0;
	return check((__u64)d, KEXISTED, OP_OPEN);
}

SEC("lsm/path_truncate")
int BPF_PROG(path_truncate, const struct path *path, int ret)
{
	if (ret || !in_scope())
		return ret;
	struct dentry *d = BPF_CORE_READ(path, dentry);
	return check((__u64)d, KEXISTED, OP_TRUNCATE);
}
#endif /* NAMELSM_NO_HOOKS */
