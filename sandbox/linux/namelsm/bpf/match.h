/* The matching half of namelsm: a chain of names against the rules maps.
 * Shared by the LSM program (namelsm.bpf.c) and its test program
 * (matchtest.bpf.c), which feeds it chains from user space. */
#pragma once

#define EACCES 13
#define MAXD 64	  /* components walked; deeper chains: see R_DEEP */
#define MAXK 8	  /* components in a window */
#define MAXEXT 32 /* bytes in a tail ("*.ext") */
#define NAMEMAX 256
#define EVCOMP 16 /* components in a violation record */
#define EVLEN 48

#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* Key kinds (compile.go's kind*). */
#define K_SUFFIX 1     /* the last k components; k in bits 8.. */
#define K_WIN 2	       /* k consecutive components anywhere */
#define K_EXT 3	       /* the last name's last L bytes, reversed; L in bits 8.. */
#define K_TREE 4       /* a path from the superblock's root: it and below */
#define K_ANCHOR 5     /* that path only */
#define K_SYMSUF 6     /* a symlink whose last k components are a rule's directory part */
#define K_SYMANCHOR 7  /* a symlink at a proper ancestor of an anchored rule */
#define K_UNDER 8      /* a path from the superblock's root some rules need the name below */

/* Rule ids of the program's own rules (compile.go's rule*). */
#define R_DEEP 1
#define R_GITFILE 2
#define R_COMMONDIR 3
#define R_BARE 4
#define R_RENAME 5

/* Kinds of new names (names.go's k*). */
#define KFILE 0
#define KDIR 1
#define KOTHER 2
#define KEXISTED 3
#define KSYMLINK 4

struct key {
	__u64 h;
	__u32 kind;
	__u32 dev;
};

/* A rules map value: the rule, and the K_UNDER directories (bits) one of
 * which the name must be below for it to apply (0: anywhere). For a
 * K_UNDER key, anchors is that directory's bit. */
struct value {
	__u32 rule;
	__u32 anchors;
};

struct config {
	__u32 suffix_mask; /* bit k: some K_SUFFIX key has k components */
	__u32 win_mask;
	__u32 symsuf_mask;
	__u32 full;	   /* some rule needs the whole chain (windows, anchors) */
	__u64 ext_mask;	   /* bit L: some K_EXT key has L bytes */
	__u32 hooks_rule;  /* rule id of **\/.git/hooks/\*\* (0: none) */
	__u32 git;	   /* the git name rules are on */
	__u32 anchors;	   /* some K_TREE/K_ANCHOR/K_UNDER key */
	__u32 unders;	   /* some K_UNDER key */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct value);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} cfg SEC(".maps");

/* A chain, walked once per check. */
struct chain {
	__u64 ch[MAXD];	       /* component hashes, leaf first */
	__u64 ext[MAXEXT + 1]; /* ext[L]: reversed hash of the leaf's last L bytes */
	__u32 depth;
	__u32 rooted; /* the walk reached the superblock's root */
	__u32 gitanc; /* some ancestor (not the leaf) is named .git */
	__u32 n;      /* bytes in buf */
	/* What the git rules ask of the last three names, compared byte by
	 * byte (F_*), leaf first. */
	__u32 flags[3];
	__u32 pad;
	char buf[NAMEMAX];
};

#define F_GIT 1	      /* ".git" */
#define F_HOOKS 2     /* "hooks" */
#define F_COMMONDIR 4 /* "commondir" */
#define F_BARE 8      /* "HEAD", "objects", "refs" */
#define F_SAMPLE 16   /* "*.sample" */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chain);
} scratch SEC(".maps");

static __always_inline __u64 mix(__u64 h, __u64 c)
{
	return (h ^ c) * FNV_PRIME;
}

struct hashctx {
	struct chain *c;
	__u64 h;
};

static long hash_byte(__u64 j, void *p)
{
	struct hashctx *x = p;
	x->h = (x->h ^ (__u8)x->c->buf[j & (NAMEMAX - 1)]) * FNV_PRIME;
	return 0;
}

static long ext_byte(__u64 l, void *p)
{
	struct hashctx *x = p;
	struct chain *c = x->c;
	/* l counts from 0: the tail of l+1 bytes. */
	if (l >= MAXEXT || l >= c->n)
		return 1;
	x->h = (x->h ^ (__u8)c->buf[(c->n - 1 - l) & (NAMEMAX - 1)]) * FNV_PRIME;
	c->ext[(l + 1) & 63 & (MAXEXT | (MAXEXT - 1))] = x->h;
	return 0;
}

/* word: 8 bytes of c->buf from off (little-endian), the first n kept. */
static __always_inline __u64 word(struct chain *c, __u32 off, __u32 n)
{
	off &= 0xff;
	if (off > NAMEMAX - 8)
		return 0;
	__u64 w = *(__u64 *)(c->buf + off);
	return n >= 8 ? w : w & ((1ULL << (8 * n)) - 1);
}

/* The names of the git rules as little-endian words. */
#define W_GIT 0x7469672eULL		/* ".git" */
#define W_HOOKS 0x736b6f6f68ULL		/* "hooks" */
#define W_COMMONDI 0x69646e6f6d6d6f63ULL /* "commondi", then 'r' */
#define W_HEAD 0x44414548ULL		/* "HEAD" */
#define W_REFS 0x73666572ULL		/* "refs" */
#define W_OBJECTS 0x737463656a626fULL	/* "objects" */
#define W_SAMPLE 0x656c706d61732eULL	/* ".sample" */

/* name_flags compares the name in c->buf with the git rules' names. */
static __always_inline __u32 name_flags(struct chain *c)
{
	__u32 n = c->n, f = 0;
	if (n < 4 || n > NAMEMAX - 8)
		return 0;
	__u64 w = word(c, 0, n);
	if (n == 4 && w == W_GIT)
		f |= F_GIT;
	if (n == 5 && w == W_HOOKS)
		f |= F_HOOKS;
	if (n == 9 && w == W_COMMONDI && c->buf[8] == 'r')
		f |= F_COMMONDIR;
	if ((n == 4 && (w == W_HEAD || w == W_REFS)) || (n == 7 && w == W_OBJECTS))
		f |= F_BARE;
	if (n >= 7 && word(c, n - 7, 7) == W_SAMPLE)
		f |= F_SAMPLE;
	return f;
}

/* add_comp records component i (0: the last name) of a chain, whose
 * bytes are in c->buf (n of them, no NUL). */
static __always_inline void add_comp(struct chain *c, __u64 i, long n)
{
	if (n < 0)
		n = 0;
	if (n > NAMEMAX - 1)
		n = NAMEMAX - 1;
	c->n = n;
	struct hashctx x = {.c = c, .h = FNV_BASIS};
	bpf_loop(n, hash_byte, &x, 0);
	c->ch[i & (MAXD - 1)] = x.h;
	__u32 f = name_flags(c);
	if (i < 3)
		c->flags[i] = f;
	if (i == 0) {
		for (int l = 0; l <= MAXEXT; l++)
			c->ext[l] = 0;
		struct hashctx e = {.c = c, .h = FNV_BASIS};
		bpf_loop(MAXEXT, ext_byte, &e, 0);
	} else if (f & F_GIT) {
		c->gitanc = 1;
	}
	c->depth = i + 1;
}

/* reset empties c before a walk. */
static __always_inline void reset(struct chain *c)
{
	c->depth = 0;
	c->rooted = 0;
	c->gitanc = 0;
	c->flags[0] = c->flags[1] = c->flags[2] = 0;
}

struct matchctx {
	struct chain *c;
	struct config *k;
	__u32 kind;
	__u32 dev;
	__u32 rule;
	__u32 excepted; /* hooks_ok: the hooks rule does not apply */
	__u32 under;	/* the K_UNDER directories the name is below */
	__u32 pad2;
	__u64 prefix;
};

/* hooks_ok: the git exceptions of **\/.git/hooks/\*\*: mkdir of .git/hooks,
 * a regular *.sample directly in it. */
static __always_inline int hooks_ok(struct chain *c, __u32 kind)
{
	if (kind == KDIR && (c->flags[0] & F_HOOKS) && (c->flags[1] & F_GIT))
		return 1;
	if (kind == KFILE && (c->flags[0] & F_SAMPLE) && (c->flags[1] & F_HOOKS) && (c->flags[2] & F_GIT) && c->depth >= 3)
		return 1;
	return 0;
}

/* hit returns the rule of key, or 0; excepted: the hooks rule is not one
 * here (hooks_ok). A global function, verified once. */
__noinline int hit(struct key *key, __u32 hooks_rule, __u32 excepted, __u32 under)
{
	if (!key)
		return 0;
	struct value *v = bpf_map_lookup_elem(&rules, key);
	if (!v)
		return 0;
	if (v->rule == hooks_rule && excepted)
		return 0;
	if (v->anchors && !(v->anchors & under))
		return 0;
	return v->rule;
}

#define HIT(m, key)                                                                  \
	({                                                                           \
		__u32 __r = hit(&(key), (m)->k->hooks_rule, (m)->excepted, (m)->under); \
		if (__r)                                                             \
			(m)->rule = __r;                                             \
		__r;                                                                 \
	})

/* win_one: the windows at component i, one per length, folded leaf to
 * root (compile.go's hashWindow). */
static long win_one(__u64 i, void *p)
{
	struct matchctx *m = p;
	struct chain *c = m->c;
	if (i >= c->depth || i >= MAXD)
		return 1;
	__u32 mask = m->k->win_mask;
	__u64 h = FNV_BASIS;
	for (__u32 k = 1; k <= MAXK; k++) {
		if (i + k > c->depth)
			break;
		h = mix(h, c->ch[(i + k - 1) & (MAXD - 1)]);
		if (!(mask & (1u << k)))
			continue;
		struct key key = {.h = h, .kind = K_WIN | (k << 8)};
		if (HIT(m, key))
			return 1;
	}
	return 0;
}

static long anchor_one(__u64 j, void *p)
{
	struct matchctx *m = p;
	struct chain *c = m->c;
	if (j >= c->depth)
		return 1;
	__u32 x = c->depth - 1 - j;
	m->prefix = mix(m->prefix, c->ch[x & (MAXD - 1)]);
	struct key key = {.h = m->prefix, .kind = K_TREE, .dev = m->dev};
	if (x > 0 && m->k->unders) {
		key.kind = K_UNDER;
		struct value *v = bpf_map_lookup_elem(&rules, &key);
		if (v)
			m->under |= v->anchors;
		key.kind = K_TREE;
	}
	if (HIT(m, key))
		return 1;
	if (x == 0) {
		key.kind = K_ANCHOR;
		if (HIT(m, key))
			return 1;
		if (m->kind == KSYMLINK) {
			key.kind = K_SYMANCHOR;
			if (HIT(m, key))
				return 1;
		}
	}
	return 0;
}

static long ext_one(__u64 l, void *p)
{
	struct matchctx *m = p;
	l++;
	if (l > MAXEXT)
		return 1;
	if (!(m->k->ext_mask & (1ULL << l)))
		return 0;
	__u64 h = m->c->ext[l & 63 & (MAXEXT | (MAXEXT - 1))];
	if (!h)
		return 1;
	struct key key = {.h = h, .kind = K_EXT | (l << 8)};
	return HIT(m, key) != 0;
}

/* suffixes: the last n components, n = 1..MAXK (and, for a symlink,
 * a rule's directory part). */
static __always_inline int suffixes(struct matchctx *m)
{
	struct chain *c = m->c;
	__u64 h = FNV_BASIS;
	for (__u32 n = 1; n <= MAXK; n++) {
		if (n > c->depth)
			break;
		h = mix(h, c->ch[(n - 1) & (MAXD - 1)]);
		if (m->k->suffix_mask & (1u << n)) {
			struct key key = {.h = h, .kind = K_SUFFIX | (n << 8)};
			if (HIT(m, key))
				return 1;
		}
		if (m->kind == KSYMLINK && (m->k->symsuf_mask & (1u << n))) {
			struct key key = {.h = h, .kind = K_SYMSUF | (n << 8)};
			if (HIT(m, key))
				return 1;
		}
	}
	return 0;
}

/* match returns the id of the rule that refuses the name whose chain is c
 * coming into being as kind, or 0. */
static __always_inline __u32 match(struct chain *c, struct config *k, __u32 kind, __u32 dev)
{
	int creating = kind != KEXISTED;
	__u32 leaf = c->flags[0];
	if (k->git) {
		if (kind != KDIR && (leaf & F_GIT))
			return R_GITFILE;
		if (leaf & F_COMMONDIR)
			return R_COMMONDIR;
		/* A git directory not named .git (HEAD, objects and refs in
		 * one directory) needs a look at the directory, which the
		 * kernel path cannot take: none of the three is made outside a
		 * .git tree (stricter than the supervisor; doc.go). */
		if (creating && (leaf & F_BARE) && !c->gitanc && !(c->flags[1] & F_GIT))
			return R_BARE;
	}
	struct matchctx m = {.c = c, .k = k, .kind = kind, .dev = dev, .excepted = hooks_ok(c, kind)};
	if (k->full && !c->rooted)
		return R_DEEP;
	/* First the paths from the root: they also say which K_UNDER
	 * directories the name is below, which the rules after need. */
	if (k->anchors) {
		m.prefix = FNV_BASIS;
		bpf_loop(MAXD, anchor_one, &m, 0);
		if (m.rule)
			return m.rule;
	}
	if (k->ext_mask) {
		bpf_loop(MAXEXT, ext_one, &m, 0);
		if (m.rule)
			return m.rule;
	}
	if (suffixes(&m))
		return m.rule;
	if (k->win_mask) {
		bpf_loop(MAXD, win_one, &m, 0);
		if (m.rule)
			return m.rule;
	}
	return 0;
}
