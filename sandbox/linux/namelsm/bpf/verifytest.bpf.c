// SPDX-License-Identifier: GPL-2.0
/* A test program for namelsm.bpf.c's check(): the LSM program's whole
 * check (walk, match, record) called from a kprobe program, which a
 * kernel that refuses LSM programs still loads, so that the verifier's
 * verdict on check() and what it costs are known there too. It is
 * loaded, never attached; amd64's registers only. */

#define NAMELSM_NO_HOOKS
#include "namelsm.bpf.c"

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
};

SEC("kprobe/vfs_mkdir")
int verifytest(struct pt_regs *ctx)
{
	if (!in_scope())
		return 0;
	/* vfs_mkdir(idmap, dir, dentry, mode): the dentry is the third. */
	return check(ctx->dx, KDIR, OP_MKDIR);
}
