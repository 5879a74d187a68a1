/*
 * metrics.c -- sample the CPU and memory of the cgroup execd runs in.
 *
 * The sandbox is a container, so the numbers that matter are its cgroup's:
 * the CPU quota and memory limit (the smallest found walking up from our
 * cgroup, since a runtime often sets them on a parent) and the usage
 * counters of our own cgroup.  Both cgroup v2 and v1 are read; a hybrid host
 * (v1 controllers plus a controller-less v2 mount) counts as v1.  Whatever
 * the cgroup does not provide comes from <proc_root>/meminfo and
 * <proc_root>/stat, and a read fails only when that fallback fails too.
 *
 * This file only reads files and clocks.  It does not sleep, keep state
 * between calls, allocate beyond a small CPU mask, or log; turning two
 * samples into a rate is metrics_cpu_pct()'s job, and choosing when to
 * sample is the caller's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/xmalloc.h"
#include "metrics.h"

#define MIB		1048576.0
#define V1_UNLIMITED	(UINT64_C(1) << 62)	/* v1 "no limit" is ~2^63 */

/* Host-wide values from <proc_root>; each group has its own status. */
struct host {
	int		 mem_rc;	/* 0 or -errno reading meminfo */
	uint64_t	 mem_total_kb;
	uint64_t	 mem_used_kb;
	int		 stat_rc;	/* 0 or -errno reading stat */
	uint64_t	 busy_usec;	/* sum of the "cpu" line, but idle */
	unsigned	 ncpu;		/* "cpuN" lines */
	char		 mem_path[PATH_MAX];
	char		 stat_path[PATH_MAX];
};

/* What the cgroup provided; each value counts only with its have_ flag. */
struct cg {
	int		 have_cpus;
	uint64_t	 cpus;		/* floor(quota / period), smallest */
	int		 have_usage;
	uint64_t	 usage_usec;
	int		 have_limit;
	uint64_t	 limit;		/* bytes, smallest */
	int		 have_used;
	uint64_t	 used;		/* bytes, inactive file excluded */
	int		 have_oom;
	uint64_t	 oom_kills;	/* processes the OOM killer ended */
};

/* One "key value" pair to find in a file such as memory.stat. */
struct kv {
	const char	*key;
	uint64_t	 val;
	int		 found;
};

/* Where a cgroup version keeps the memory figures (mem_read). */
struct memfiles {
	const char	*events;	/* holds "oom_kill N" */
	const char	*usage;
	const char	*inactive;	/* memory.stat key of reclaimable cache */
	const char	*limit;
	uint64_t	 unlimited;	/* a limit this large is none */
};

static const struct memfiles mem_v2 = { "memory.events", "memory.current",
	"inactive_file", "memory.max", UINT64_MAX };
static const struct memfiles mem_v1 = { "memory.oom_control",
	"memory.usage_in_bytes", "total_inactive_file",
	"memory.limit_in_bytes", V1_UNLIMITED };

static int	seterr(char *, size_t, int, const char *, ...)
		    __attribute__((format(printf, 4, 5)));
static int	join(char *, size_t, const char *, const char *,
		    const char *);
static int	is_dir(const char *);
static int	is_file(const char *);
static int	rel_up(char *);
static int	rel_ok(const char *);
static int	read_small(const char *, char *, size_t);
static int	next_line(FILE *, char *, size_t);
static int	parse_u64(const char *, uint64_t *, const char **);
static int	parse_i64(const char *, int64_t *);
static int	read_u64(const char *, uint64_t *);
static int	kv_scan(const char *, struct kv *, size_t);
static void	host_read(const struct metrics_src *, struct host *);
static int	host_meminfo(struct host *);
static int	host_stat(struct host *);
static int	usable_cpus(const struct metrics_src *, const struct host *,
		    unsigned *);
static int	affinity_count(unsigned *);
static int	has_ctrl(const char *, const char *);
static void	cg_read(const struct metrics_src *, struct cg *);
static void	v2_read(const char *, const char *, struct cg *);
static void	mem_read(const char *, char *, const struct memfiles *,
		    struct cg *);
static void	v2_cpu_max(const char *, struct cg *);
static void	pick_rel(const char *, const char *, char *, size_t);
static int	v1_mount(const char *, const char *, const char *, char *,
		    size_t);
static void	v1_memory(const char *, const char *, const char *,
		    struct cg *);
static void	v1_cpu(const char *, const char *, const char *,
		    struct cg *);
static void	v1_cpuacct(const char *, const char *, const char *,
		    struct cg *);

const struct metrics_src metrics_src_system = { "/proc", "/sys/fs/cgroup" };

/* Format a message into err (if any) and return rc. */
static int
seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* Write base + rel + "/" + file (file may be NULL) to p; 0 or -ENAMETOOLONG. */
static int
join(char *p, size_t len, const char *base, const char *rel,
    const char *file)
{
	int n;

	if (file == NULL)
		n = snprintf(p, len, "%s%s", base, rel);
	else
		n = snprintf(p, len, "%s%s/%s", base, rel, file);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Is p an existing directory (symlinks followed)? */
static int
is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Does p exist as something other than a directory? */
static int
is_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

/*
 * Cut the cgroup-relative path rel ("" or "/a/b") to its parent: 0, or -1
 * when rel is already the top ("").
 */
static int
rel_up(char *rel)
{
	char *slash;

	if (*rel == '\0')
		return -1;
	if ((slash = strrchr(rel, '/')) == NULL)
		*rel = '\0';
	else
		*slash = '\0';
	return 0;
}

/* Is rel a plain path below a mount (no "." or ".." components)? */
static int
rel_ok(const char *rel)
{
	const char *c = rel;
	size_t n;

	while (*c != '\0') {
		while (*c == '/')
			c++;
		n = strcspn(c, "/");
		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		c += n;
	}
	return 1;
}

/* Read up to len - 1 bytes of a small file into buf, NUL-terminated. */
static int
read_small(const char *path, char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;
	int fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -errno;
	while (off < len - 1) {
		n = read(fd, buf + off, len - 1 - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (rc == 0)
		buf[off] = '\0';
	return rc;
}

/*
 * Read one line into buf without its newline: 1, 0 at end of file, or
 * -EOVERFLOW for a line too long for buf (the rest of it is skipped).
 */
static int
next_line(FILE *fp, char *buf, size_t len)
{
	size_t n;
	int c;

	if (fgets(buf, (int)len, fp) == NULL)
		return 0;
	n = strlen(buf);
	if (n > 0 && buf[n - 1] == '\n') {
		buf[n - 1] = '\0';
		return 1;
	}
	if (feof(fp))
		return 1;
	while ((c = getc(fp)) != EOF && c != '\n')
		;
	return -EOVERFLOW;
}

/*
 * Parse a decimal unsigned number at s, after optional blanks; *end (if
 * not NULL) gets the first character after it.  0, -EINVAL or -ERANGE.
 */
static int
parse_u64(const char *s, uint64_t *out, const char **end)
{
	unsigned long long v;
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*out = (uint64_t)v;
	if (end != NULL)
		*end = e;
	return 0;
}

/* Parse a whole string as a signed decimal, trailing blanks allowed. */
static int
parse_i64(const char *s, int64_t *out)
{
	long long v;
	char *e;

	errno = 0;
	v = strtoll(s, &e, 10);
	if (e == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	while (isspace((unsigned char)*e))
		e++;
	if (*e != '\0')
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

/* Read a file that holds one unsigned decimal number. */
static int
read_u64(const char *path, uint64_t *out)
{
	char buf[64];
	const char *e;
	uint64_t v;
	int rc;

	if ((rc = read_small(path, buf, sizeof(buf))) < 0)
		return rc;
	if ((rc = parse_u64(buf, &v, &e)) < 0)
		return rc;
	while (isspace((unsigned char)*e))
		e++;
	if (*e != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * Fill the listed keys from a file of "key value" or "Key: value" lines
 * (memory.stat, cpu.stat, meminfo).  0 once the file was read, whether or
 * not every key was there; the caller checks found.
 */
static int
kv_scan(const char *path, struct kv *kv, size_t n)
{
	char line[256];
	FILE *fp;
	size_t klen;
	uint64_t v;
	int rc;

	if ((fp = fopen(path, "re")) == NULL)
		return -errno;
	for (size_t i = 0; i < n; i++)
		kv[i].found = 0;
	while ((rc = next_line(fp, line, sizeof(line))) != 0) {
		if (rc < 0)
			continue;
		klen = strcspn(line, " \t:");
		for (size_t i = 0; i < n; i++) {
			if (kv[i].found || strlen(kv[i].key) != klen ||
			    strncmp(line, kv[i].key, klen) != 0)
				continue;
			if (parse_u64(line + klen + (line[klen] == ':'), &v,
			    NULL) == 0) {
				kv[i].val = v;
				kv[i].found = 1;
			}
		}
	}
	rc = ferror(fp) ? -EIO : 0;
	fclose(fp);
	return rc;
}

/* Read meminfo and stat under proc_root, recording each one's status. */
static void
host_read(const struct metrics_src *src, struct host *h)
{
	memset(h, 0, sizeof(*h));
	if ((h->mem_rc = join(h->mem_path, sizeof(h->mem_path),
	    src->proc_root, "", "meminfo")) == 0)
		h->mem_rc = host_meminfo(h);
	if ((h->stat_rc = join(h->stat_path, sizeof(h->stat_path),
	    src->proc_root, "", "stat")) == 0)
		h->stat_rc = host_stat(h);
}

/*
 * Host memory from meminfo, in kB: total, and used as
 * MemTotal - MemFree - Buffers - Cached - SReclaimable (at least 0).
 */
static int
host_meminfo(struct host *h)
{
	struct kv kv[] = {
		{ "MemTotal", 0, 0 }, { "MemFree", 0, 0 },
		{ "Buffers", 0, 0 }, { "Cached", 0, 0 },
		{ "SReclaimable", 0, 0 },
	};
	uint64_t spare;
	int rc;

	if ((rc = kv_scan(h->mem_path, kv, sizeof(kv) / sizeof(kv[0]))) < 0)
		return rc;
	if (!kv[0].found || !kv[1].found || kv[0].val == 0)
		return -EINVAL;
	spare = kv[1].val + kv[2].val + kv[3].val + kv[4].val;
	h->mem_total_kb = kv[0].val;
	h->mem_used_kb = spare < kv[0].val ? kv[0].val - spare : 0;
	return 0;
}

/*
 * Host CPU from stat: the number of "cpuN" lines, and the busy time of the
 * aggregate "cpu" line in usec.  Busy is everything but idle, as upstream
 * counts it (user nice system iowait irq softirq steal; guest time is
 * already inside user and nice).
 */
static int
host_stat(struct host *h)
{
	char line[512];
	const char *p;
	uint64_t f[8], ticks = 0, hz;
	long tck;
	FILE *fp;
	unsigned ncpu = 0;
	int rc, nf = 0, seen = 0;

	if ((fp = fopen(h->stat_path, "re")) == NULL)
		return -errno;
	while ((rc = next_line(fp, line, sizeof(line))) != 0) {
		if (rc < 0 || strncmp(line, "cpu", 3) != 0) {
			/* The cpu lines come first; nothing else is needed. */
			if (seen)
				break;
			continue;
		}
		if (isdigit((unsigned char)line[3])) {
			ncpu++;
			continue;
		}
		if (line[3] != ' ' || seen)
			continue;
		seen = 1;
		p = line + 3;
		for (nf = 0; nf < 8 && parse_u64(p, &f[nf], &p) == 0; nf++)
			;
	}
	rc = ferror(fp) ? -EIO : 0;
	fclose(fp);
	if (rc < 0)
		return rc;
	if (!seen || nf < 4 || ncpu == 0)
		return -EINVAL;
	for (int i = 0; i < nf; i++)
		if (i != 3)	/* idle */
			ticks += f[i];
	if ((tck = sysconf(_SC_CLK_TCK)) <= 0)
		tck = 100;
	hz = (uint64_t)tck;
	h->busy_usec = ticks / hz * 1000000 + ticks % hz * 1000000 / hz;
	h->ncpu = ncpu;
	return 0;
}

/*
 * Usable CPUs: the affinity mask when reading the live /proc, else (or if
 * that fails) the host's "cpuN" count.
 */
static int
usable_cpus(const struct metrics_src *src, const struct host *h,
    unsigned *out)
{
	unsigned n;

	if (strcmp(src->proc_root, "/proc") == 0 && affinity_count(&n) == 0) {
		*out = n;
		return 0;
	}
	if (h->stat_rc < 0)
		return h->stat_rc;
	*out = h->ncpu;
	return 0;
}

/* Count the CPUs this thread may run on, growing the mask as needed. */
static int
affinity_count(unsigned *out)
{
	cpu_set_t *set;
	size_t sz;
	int n, rc;

	for (int ncpu = CPU_SETSIZE; ncpu <= (1 << 20); ncpu *= 2) {
		sz = CPU_ALLOC_SIZE(ncpu);
		set = xmalloc(sz);
		CPU_ZERO_S(sz, set);
		rc = sched_getaffinity(0, sz, set) == 0 ? 0 : -errno;
		n = rc == 0 ? CPU_COUNT_S(sz, set) : 0;
		free(set);
		if (rc == 0 && n > 0) {
			*out = (unsigned)n;
			return 0;
		}
		if (rc != -EINVAL)
			return rc < 0 ? rc : -EINVAL;
	}
	return -EINVAL;
}

/* Does the comma-separated controller list name ctrl? */
static int
has_ctrl(const char *list, const char *ctrl)
{
	size_t n, len = strlen(ctrl);

	for (;;) {
		n = strcspn(list, ",");
		if (n == len && strncmp(list, ctrl, len) == 0)
			return 1;
		if (list[n] == '\0')
			return 0;
		list += n + 1;
	}
}

/*
 * Fill *c from the cgroups listed in <proc_root>/self/cgroup.  Anything
 * missing or unreadable just stays unset; the host fills in.
 */
static void
cg_read(const struct metrics_src *src, struct cg *c)
{
	char path[PATH_MAX], line[PATH_MAX + 256];
	char *list, *rel;
	FILE *fp;
	int v2, rc;

	memset(c, 0, sizeof(*c));
	/* 1. Unified only when the v2 hierarchy is mounted at the root. */
	if (join(path, sizeof(path), src->cgroup_root, "",
	    "cgroup.controllers") < 0)
		return;
	v2 = is_file(path);
	if (join(path, sizeof(path), src->proc_root, "", "self/cgroup") < 0 ||
	    (fp = fopen(path, "re")) == NULL)
		return;
	/* 2. Lines are "id:controller,list:/path". */
	while ((rc = next_line(fp, line, sizeof(line))) != 0) {
		if (rc < 0 || (list = strchr(line, ':')) == NULL)
			continue;
		list++;
		if ((rel = strchr(list, ':')) == NULL)
			continue;
		*rel++ = '\0';
		if (*rel != '/')
			continue;
		/* 3. The cgroup-relative path loses its trailing slashes. */
		for (size_t n = strlen(rel); n > 0 && rel[n - 1] == '/'; n--)
			rel[n - 1] = '\0';
		if (v2) {
			if (strncmp(line, "0:", 2) == 0 && *list == '\0') {
				v2_read(src->cgroup_root, rel, c);
				break;
			}
			continue;
		}
		if (has_ctrl(list, "memory"))
			v1_memory(src->cgroup_root, list, rel, c);
		if (has_ctrl(list, "cpu"))
			v1_cpu(src->cgroup_root, list, rel, c);
		if (has_ctrl(list, "cpuacct"))
			v1_cpuacct(src->cgroup_root, list, rel, c);
	}
	fclose(fp);
}

/*
 * cgroup v2: usage from our cgroup (or the mount root when our path is not
 * visible, as under a cgroup namespace), limits as the minimum from there
 * up to the root.
 */
static void
v2_read(const char *root, const char *path, struct cg *c)
{
	char rel[PATH_MAX], p[PATH_MAX];
	struct kv usage[] = { { "usage_usec", 0, 0 } };
	char buf[64];

	pick_rel(root, path, rel, sizeof(rel));
	if (join(p, sizeof(p), root, rel, "cpu.stat") == 0 &&
	    kv_scan(p, usage, 1) == 0 && usage[0].found) {
		c->have_usage = 1;
		c->usage_usec = usage[0].val;
	}
	mem_read(root, rel, &mem_v2, c);
	pick_rel(root, path, rel, sizeof(rel));
	do {
		if (join(p, sizeof(p), root, rel, "cpu.max") == 0 &&
		    read_small(p, buf, sizeof(buf)) == 0)
			v2_cpu_max(buf, c);
	} while (rel_up(rel) == 0);
}

/* Apply one cpu.max ("max 100000" or "quota period") to the minimum. */
static void
v2_cpu_max(const char *s, struct cg *c)
{
	uint64_t quota, period, n;
	const char *e;

	if (parse_u64(s, &quota, &e) < 0 || parse_u64(e, &period, NULL) < 0 ||
	    quota == 0 || period == 0)
		return;	/* "max ...", or nonsense */
	n = quota / period;
	if (!c->have_cpus || n < c->cpus) {
		c->have_cpus = 1;
		c->cpus = n;
	}
}

/*
 * Set rel to path, our cgroup's path below mnt, if that is a directory
 * there; else to "" (the mount itself), as under a cgroup namespace or a
 * container runtime that mounts only its own subtree.
 */
static void
pick_rel(const char *mnt, const char *path, char *rel, size_t len)
{
	size_t n = strlen(path);

	if (n >= len || !rel_ok(path) || join(rel, len, mnt, path, NULL) < 0 ||
	    !is_dir(rel))
		n = 0;
	memcpy(rel, path, n);
	rel[n] = '\0';
}

/*
 * Find the v1 mount of controller ctrl, whose hierarchy carries the
 * controllers in list: <root>/<ctrl>, <root>/<list>, or for cpu and
 * cpuacct <root>/cpu,cpuacct.  0, or -ENOENT when none is a directory.
 */
static int
v1_mount(const char *root, const char *ctrl, const char *list, char *mnt,
    size_t len)
{
	const char *names[3] = { ctrl, list, NULL };

	if (strcmp(ctrl, "cpu") == 0 || strcmp(ctrl, "cpuacct") == 0)
		names[2] = "cpu,cpuacct";
	for (size_t i = 0; i < 3; i++) {
		if (names[i] != NULL &&
		    join(mnt, len, root, "", names[i]) == 0 && is_dir(mnt))
			return 0;
	}
	return -ENOENT;
}

/*
 * Memory of the group at rel below mnt, as files f name them: OOM kills,
 * usage less reclaimable page cache, and the smallest limit up the tree
 * (rel is walked up to the mount).
 */
static void
mem_read(const char *mnt, char *rel, const struct memfiles *f,
    struct cg *c)
{
	char p[PATH_MAX];
	struct kv inact[] = { { f->inactive, 0, 0 } };
	struct kv oom[] = { { "oom_kill", 0, 0 } };
	uint64_t v;

	if (join(p, sizeof(p), mnt, rel, f->events) == 0 &&
	    kv_scan(p, oom, 1) == 0 && oom[0].found) {
		c->have_oom = 1;
		c->oom_kills = oom[0].val;
	}
	if (join(p, sizeof(p), mnt, rel, f->usage) == 0 &&
	    read_u64(p, &v) == 0) {
		if (join(p, sizeof(p), mnt, rel, "memory.stat") == 0 &&
		    kv_scan(p, inact, 1) == 0 && inact[0].found)
			v = v > inact[0].val ? v - inact[0].val : 0;
		c->have_used = 1;
		c->used = v;
	}
	do {
		if (join(p, sizeof(p), mnt, rel, f->limit) == 0 &&
		    read_u64(p, &v) == 0 && v < f->unlimited &&
		    (!c->have_limit || v < c->limit)) {
			c->have_limit = 1;
			c->limit = v;
		}
	} while (rel_up(rel) == 0);
}

/* cgroup v1 memory: usage from our group, limit as the minimum up the tree. */
static void
v1_memory(const char *root, const char *list, const char *path,
    struct cg *c)
{
	char mnt[PATH_MAX], rel[PATH_MAX];

	if (c->have_used || c->have_limit ||
	    v1_mount(root, "memory", list, mnt, sizeof(mnt)) < 0)
		return;
	pick_rel(mnt, path, rel, sizeof(rel));
	mem_read(mnt, rel, &mem_v1, c);
}

/* cgroup v1 cpu: the smallest cfs_quota_us / cfs_period_us up the tree. */
static void
v1_cpu(const char *root, const char *list, const char *path, struct cg *c)
{
	char mnt[PATH_MAX], rel[PATH_MAX], p[PATH_MAX], buf[64];
	int64_t quota;
	uint64_t period, n;

	if (c->have_cpus ||
	    v1_mount(root, "cpu", list, mnt, sizeof(mnt)) < 0)
		return;
	pick_rel(mnt, path, rel, sizeof(rel));

	do {
		if (join(p, sizeof(p), mnt, rel, "cpu.cfs_quota_us") < 0 ||
		    read_small(p, buf, sizeof(buf)) < 0 ||
		    parse_i64(buf, &quota) < 0 || quota <= 0)
			continue;	/* -1: no quota at this level */
		if (join(p, sizeof(p), mnt, rel, "cpu.cfs_period_us") < 0 ||
		    read_u64(p, &period) < 0 || period == 0)
			continue;
		n = (uint64_t)quota / period;
		if (!c->have_cpus || n < c->cpus) {
			c->have_cpus = 1;
			c->cpus = n;
		}
	} while (rel_up(rel) == 0);
}

/* cgroup v1 cpuacct: our group's cpuacct.usage, ns to usec. */
static void
v1_cpuacct(const char *root, const char *list, const char *path,
    struct cg *c)
{
	char mnt[PATH_MAX], rel[PATH_MAX], p[PATH_MAX];
	uint64_t v;

	if (c->have_usage ||
	    v1_mount(root, "cpuacct", list, mnt, sizeof(mnt)) < 0)
		return;
	pick_rel(mnt, path, rel, sizeof(rel));
	if (join(p, sizeof(p), mnt, rel, "cpuacct.usage") == 0 &&
	    read_u64(p, &v) == 0) {
		c->have_usage = 1;
		c->usage_usec = v / 1000;
	}
}

/*
 * Take one sample: cgroup values where there are any, host values for the
 * rest.  *out is written only on success.
 */
int
metrics_read(const struct metrics_src *src, struct metrics_sample *out,
    char *err, size_t errlen)
{
	struct metrics_sample s;
	struct timespec mono, real;
	struct host h;
	struct cg c;
	uint64_t limit;
	unsigned n;
	int rc;

	/* 1. Clocks first, next to the usage counters read below. */
	if (clock_gettime(CLOCK_MONOTONIC, &mono) == -1 ||
	    clock_gettime(CLOCK_REALTIME, &real) == -1) {
		rc = -errno;
		return seterr(err, errlen, rc, "clock_gettime: %s",
		    strerror(-rc));
	}
	memset(&s, 0, sizeof(s));
	s.wall_usec = (uint64_t)mono.tv_sec * 1000000 +
	    (uint64_t)mono.tv_nsec / 1000;
	s.timestamp_ms = (int64_t)real.tv_sec * 1000 + real.tv_nsec / 1000000;

	/* 2. Read both sources; which values are needed is decided below. */
	cg_read(src, &c);
	host_read(src, &h);

	/* 3. CPU. */
	if (c.have_cpus)
		s.cpu_count = c.cpus > 0 ? (double)c.cpus : 1;
	else if ((rc = usable_cpus(src, &h, &n)) == 0)
		s.cpu_count = n;
	else
		return seterr(err, errlen, rc,
		    "no cgroup CPU quota, and %s: %s", h.stat_path,
		    strerror(-rc));
	if (c.have_usage) {
		s.cpu_usec = c.usage_usec;
		s.host_cpus = s.cpu_count;
	} else if (h.stat_rc == 0) {
		s.cpu_usec = h.busy_usec;
		s.host_cpus = h.ncpu;
	} else
		return seterr(err, errlen, h.stat_rc,
		    "no cgroup CPU accounting, and %s: %s", h.stat_path,
		    strerror(-h.stat_rc));

	/* 4. Memory. */
	if (h.mem_rc < 0 && (!c.have_limit || !c.have_used))
		return seterr(err, errlen, h.mem_rc,
		    "no cgroup memory %s, and %s: %s",
		    c.have_limit ? "usage" : "limit", h.mem_path,
		    strerror(-h.mem_rc));
	limit = UINT64_MAX;
	if (c.have_limit)
		limit = c.limit;
	if (h.mem_rc == 0 && h.mem_total_kb < limit / 1024)
		limit = h.mem_total_kb * 1024;
	s.mem_total_mib = (double)limit / MIB;
	if (c.have_used)
		s.mem_used_mib = (double)(c.used < limit ? c.used : limit) /
		    MIB;
	else {
		s.mem_used_mib = (double)h.mem_used_kb / 1024;
		if (s.mem_used_mib > s.mem_total_mib)
			s.mem_used_mib = s.mem_total_mib;
	}

	*out = s;
	return 0;
}

/* Percent of the CPU limit used between two samples, within [0, 100]. */
double
metrics_cpu_pct(const struct metrics_sample *prev,
    const struct metrics_sample *cur)
{
	double cpus, pct;

	if (cur->wall_usec <= prev->wall_usec ||
	    cur->cpu_usec <= prev->cpu_usec)
		return 0;
	cpus = cur->host_cpus > 0 ? cur->host_cpus : 1;
	pct = 100.0 * (double)(cur->cpu_usec - prev->cpu_usec) /
	    ((double)(cur->wall_usec - prev->wall_usec) * cpus);
	return pct > 100 ? 100 : pct;
}

/* The cgroup's count of OOM kills; see metrics.h. */
int
metrics_oom_kills(const struct metrics_src *src, uint64_t *out)
{
	struct cg c;

	cg_read(src, &c);
	if (!c.have_oom)
		return -ENOENT;
	*out = c.oom_kills;
	return 0;
}
