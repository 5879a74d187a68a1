/*
 * t_metrics.c -- unit tests for metrics.c.
 *
 * Each test builds a small fake /proc and /sys/fs/cgroup under a fresh
 * temporary directory (in $TMPDIR, else /tmp), points a metrics_src at it,
 * checks every field of the sample against exact numbers and removes the
 * tree.  Covered: cgroup v2 with limits on a parent, with "max" everywhere,
 * at the root, partly missing and under a cgroup namespace; cgroup v1 with
 * separate and combined cpu/cpuacct mounts on a hybrid host; no cgroup at
 * all; failure without host files; metrics_cpu_pct(); and one sample of the
 * real system.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../execd/core/xmalloc.h"
#include "../../execd/domain/metrics.h"
#include "../t.h"
#include "../t_tmp.h"

/* Compare doubles exactly; the fixtures use values binary fractions hold. */
#define T_EQ_DBL(a, b) do { double a_ = (a), b_ = (b); if (a_ != b_) { \
	t_fail_ = 1; fprintf(stderr, "  %s:%d: %s == %.17g, expected %.17g\n", \
	__FILE__, __LINE__, #a, a_, b_); } } while (0)

/* The fixture host: 8 GiB, 4 CPUs. */
#define HOST_MEMINFO \
	"MemTotal:        8388608 kB\n" \
	"MemFree:         4194304 kB\n" \
	"MemAvailable:    6000000 kB\n" \
	"Buffers:          102400 kB\n" \
	"Cached:          1048576 kB\n" \
	"SwapCached:            0 kB\n" \
	"SReclaimable:      51200 kB\n"
#define HOST_TOTAL_MIB	8192.0
/* (MemTotal - MemFree - Buffers - Cached - SReclaimable) / 1024 */
#define HOST_USED_MIB	2922.0
#define HOST_STAT \
	"cpu  1000 200 300 5000 100 10 20 30 40 50\n" \
	"cpu0 250 50 75 1250 25 3 5 8 10 13\n" \
	"cpu1 250 50 75 1250 25 3 5 8 10 13\n" \
	"cpu2 250 50 75 1250 25 2 5 7 10 12\n" \
	"cpu3 250 50 75 1250 25 2 5 7 10 12\n" \
	"intr 123456 0 1 2 3 4 5 6 7 8 9\n" \
	"ctxt 987654\n" \
	"btime 1767225600\n"
#define HOST_NCPU	4
#define HOST_BUSY_TICKS	1660	/* all of the cpu line but idle (5000) */
#define GIB		1073741824.0

static void	 fx_put(const char *, const char *, const char *);
static void	 fx_host(const char *);
static int	 fx_read(const char *, struct metrics_sample *);
static uint64_t	 host_busy_usec(void);

/* Write text to dir/rel, creating the directories on the way. */
static void
fx_put(const char *dir, const char *rel, const char *text)
{
	char *path = xasprintf("%s/%s", dir, rel);
	FILE *fp;

	for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')) != NULL;
	    s++) {
		*s = '\0';
		if (mkdir(path, 0755) == -1 && errno != EEXIST) {
			perror(path);
			exit(1);
		}
		*s = '/';
	}
	if ((fp = fopen(path, "w")) == NULL) {
		perror(path);
		exit(1);
	}
	fputs(text, fp);
	fclose(fp);
	free(path);
}

/* Give the fixture the host's meminfo and stat. */
static void
fx_host(const char *dir)
{
	fx_put(dir, "proc/meminfo", HOST_MEMINFO);
	fx_put(dir, "proc/stat", HOST_STAT);
}

/* metrics_read() on dir/proc and dir/cgroup, printing any error. */
static int
fx_read(const char *dir, struct metrics_sample *s)
{
	char *proc = xasprintf("%s/proc", dir);
	char *cg = xasprintf("%s/cgroup", dir);
	struct metrics_src src = { proc, cg };
	char err[256] = "";
	int rc;

	rc = metrics_read(&src, s, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "  metrics_read: %d %s\n", rc, err);
	free(proc);
	free(cg);
	return rc;
}

/* The fixture's host busy time in usec, at this system's clock tick. */
static uint64_t
host_busy_usec(void)
{
	return (uint64_t)HOST_BUSY_TICKS * 1000000 /
	    (uint64_t)sysconf(_SC_CLK_TCK);
}

/* v2, nested: limits on parent and child, the smaller of each wins. */
static void
test_v2_nested(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/sandbox/job\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
	fx_put(d, "cgroup/cpu.stat", "usage_usec 999999999\n");
	fx_put(d, "cgroup/sandbox/cpu.max", "400000 100000\n");
	fx_put(d, "cgroup/sandbox/memory.max", "536870912\n");
	fx_put(d, "cgroup/sandbox/memory.current", "999999999\n");
	fx_put(d, "cgroup/sandbox/job/cpu.max", "250000 100000\n");
	fx_put(d, "cgroup/sandbox/job/memory.max", "1073741824\n");
	fx_put(d, "cgroup/sandbox/job/cpu.stat",
	    "usage_usec 123456789\nuser_usec 100000000\n"
	    "system_usec 23456789\n");
	fx_put(d, "cgroup/sandbox/job/memory.current", "268435456\n");
	fx_put(d, "cgroup/sandbox/job/memory.stat",
	    "anon 1000\nfile 2000\ninactive_anon 5555\n"
	    "active_file 999\ninactive_file 67108864\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 2);
	T_EQ_INT(s.cpu_usec, 123456789);
	T_EQ_DBL(s.host_cpus, 2);
	T_EQ_DBL(s.mem_total_mib, 512);
	T_EQ_DBL(s.mem_used_mib, 192);
	T_OK(s.wall_usec > 0);
	T_OK(s.timestamp_ms > INT64_C(1600000000000));
	t_tmpdir_free(d);
}

/* v2, "max" everywhere: host limits, but the cgroup's usage. */
static void
test_v2_unlimited(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/a/b\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpu memory\n");
	fx_put(d, "cgroup/a/cpu.max", "max 100000\n");
	fx_put(d, "cgroup/a/memory.max", "max\n");
	fx_put(d, "cgroup/a/b/cpu.max", "max 100000\n");
	fx_put(d, "cgroup/a/b/memory.max", "max\n");
	fx_put(d, "cgroup/a/b/cpu.stat", "usage_usec 5000000\n");
	fx_put(d, "cgroup/a/b/memory.current", "104857600\n");
	fx_put(d, "cgroup/a/b/memory.stat", "inactive_file 20971520\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, HOST_NCPU);
	T_EQ_INT(s.cpu_usec, 5000000);
	T_EQ_DBL(s.host_cpus, HOST_NCPU);
	T_EQ_DBL(s.mem_total_mib, HOST_TOTAL_MIB);
	T_EQ_DBL(s.mem_used_mib, 80);
	t_tmpdir_free(d);
}

/* v2: a quota under one CPU still counts as 1; a limit above RAM is RAM. */
static void
test_v2_small_quota(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/box\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpu memory\n");
	fx_put(d, "cgroup/box/cpu.max", "50000 100000\n");
	fx_put(d, "cgroup/box/memory.max", "17179869184\n");
	fx_put(d, "cgroup/box/cpu.stat", "usage_usec 1\n");
	fx_put(d, "cgroup/box/memory.current", "1048576\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 1);
	T_EQ_INT(s.cpu_usec, 1);
	T_EQ_DBL(s.host_cpus, 1);
	T_EQ_DBL(s.mem_total_mib, HOST_TOTAL_MIB);
	T_EQ_DBL(s.mem_used_mib, 1);	/* no memory.stat: nothing to take */
	t_tmpdir_free(d);
}

/* v2 root cgroup without memory.current: host memory, cgroup CPU time. */
static void
test_v2_root(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpu memory\n");
	fx_put(d, "cgroup/cpu.stat", "usage_usec 999\n");
	fx_put(d, "cgroup/memory.stat", "inactive_file 4096\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, HOST_NCPU);
	T_EQ_INT(s.cpu_usec, 999);
	T_EQ_DBL(s.host_cpus, HOST_NCPU);
	T_EQ_DBL(s.mem_total_mib, HOST_TOTAL_MIB);
	T_EQ_DBL(s.mem_used_mib, HOST_USED_MIB);
	t_tmpdir_free(d);
}

/* v2 without cpu.stat and with a bad memory.max: host fills those in. */
static void
test_v2_partial(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/box\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpu memory\n");
	fx_put(d, "cgroup/box/cpu.max", "200000 100000\n");
	fx_put(d, "cgroup/box/memory.max", "lots\n");
	fx_put(d, "cgroup/box/memory.current", "3145728\n");
	fx_put(d, "cgroup/box/memory.stat", "inactive_file 1048576\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 2);
	T_EQ_INT(s.cpu_usec, host_busy_usec());
	T_EQ_DBL(s.host_cpus, HOST_NCPU);
	T_EQ_DBL(s.mem_total_mib, HOST_TOTAL_MIB);
	T_EQ_DBL(s.mem_used_mib, 2);
	t_tmpdir_free(d);
}

/* v2 under a cgroup namespace: our path is not there, the root is ours. */
static void
test_v2_namespace(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpu memory\n");
	fx_put(d, "cgroup/cpu.max", "200000 100000\n");
	fx_put(d, "cgroup/memory.max", "268435456\n");
	fx_put(d, "cgroup/cpu.stat", "usage_usec 42\n");
	fx_put(d, "cgroup/memory.current", "134217728\n");
	fx_put(d, "cgroup/memory.stat", "inactive_file 0\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 2);
	T_EQ_INT(s.cpu_usec, 42);
	T_EQ_DBL(s.host_cpus, 2);
	T_EQ_DBL(s.mem_total_mib, 256);
	T_EQ_DBL(s.mem_used_mib, 128);

	/* A path that climbs out of the mount is not followed either. */
	fx_put(d, "proc/self/cgroup", "0::/../outside\n");
	fx_put(d, "outside/memory.current", "1073741824\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.mem_used_mib, 128);
	t_tmpdir_free(d);
}

/* v1 on a hybrid host, separate cpu and cpuacct mounts. */
static void
test_v1_separate(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup",
	    "9:name=systemd:/\n"
	    "4:memory:/x/y\n"
	    "3:cpuset:/\n"
	    "2:cpuacct:/\n"
	    "1:cpu:/c\n"
	    "0::/\n");
	/* The v2 part of a hybrid host: mounted, but not at the root. */
	fx_put(d, "cgroup/unified/cgroup.controllers", "\n");
	fx_put(d, "cgroup/unified/cpu.stat", "usage_usec 1\n");
	fx_put(d, "cgroup/memory/memory.limit_in_bytes",
	    "9223372036854771712\n");
	fx_put(d, "cgroup/memory/memory.usage_in_bytes", "999999999\n");
	fx_put(d, "cgroup/memory/x/memory.limit_in_bytes", "1073741824\n");
	fx_put(d, "cgroup/memory/x/y/memory.limit_in_bytes", "2147483648\n");
	fx_put(d, "cgroup/memory/x/y/memory.usage_in_bytes", "314572800\n");
	fx_put(d, "cgroup/memory/x/y/memory.stat",
	    "cache 1\ninactive_file 999999\ntotal_inactive_file 52428800\n");
	fx_put(d, "cgroup/cpu/cpu.cfs_quota_us", "-1\n");
	fx_put(d, "cgroup/cpu/cpu.cfs_period_us", "100000\n");
	fx_put(d, "cgroup/cpu/c/cpu.cfs_quota_us", "300000\n");
	fx_put(d, "cgroup/cpu/c/cpu.cfs_period_us", "100000\n");
	fx_put(d, "cgroup/cpuacct/cpuacct.usage", "5000000000\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 3);
	T_EQ_INT(s.cpu_usec, 5000000);
	T_EQ_DBL(s.host_cpus, 3);
	T_EQ_DBL(s.mem_total_mib, 1024);
	T_EQ_DBL(s.mem_used_mib, 250);
	t_tmpdir_free(d);
}

/*
 * v1 with a combined cpu,cpuacct mount, and a memory path that is not
 * under its mount (a container's view): the mount itself is used.
 */
static void
test_v1_combined(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	fx_put(d, "proc/self/cgroup",
	    "5:memory:/docker/abc\n"
	    "3:cpu,cpuacct:/z\n");
	fx_put(d, "cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	fx_put(d, "cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	fx_put(d, "cgroup/cpu,cpuacct/cpuacct.usage", "1\n");
	fx_put(d, "cgroup/cpu,cpuacct/z/cpu.cfs_quota_us", "50000\n");
	fx_put(d, "cgroup/cpu,cpuacct/z/cpu.cfs_period_us", "100000\n");
	fx_put(d, "cgroup/cpu,cpuacct/z/cpuacct.usage", "7000\n");
	/* Above MemTotal: no limit.  More inactive than usage: 0. */
	fx_put(d, "cgroup/memory/memory.limit_in_bytes", "17179869184\n");
	fx_put(d, "cgroup/memory/memory.usage_in_bytes", "10485760\n");
	fx_put(d, "cgroup/memory/memory.stat",
	    "total_inactive_file 20971520\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 1);
	T_EQ_INT(s.cpu_usec, 7);
	T_EQ_DBL(s.host_cpus, 1);
	T_EQ_DBL(s.mem_total_mib, HOST_TOTAL_MIB);
	T_EQ_DBL(s.mem_used_mib, 0);
	t_tmpdir_free(d);
}

/* No cgroup at all: every value is the host's. */
static void
test_no_cgroup(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_host(d);
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, HOST_NCPU);
	T_EQ_INT(s.cpu_usec, host_busy_usec());
	T_EQ_DBL(s.host_cpus, HOST_NCPU);
	T_EQ_DBL(s.mem_total_mib, HOST_TOTAL_MIB);
	T_EQ_DBL(s.mem_used_mib, HOST_USED_MIB);

	/* A cgroup file that names nothing present changes nothing. */
	fx_put(d, "proc/self/cgroup", "4:memory:/m\n1:cpu,cpuacct:/c\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_INT(s.cpu_usec, host_busy_usec());
	T_EQ_DBL(s.mem_used_mib, HOST_USED_MIB);
	t_tmpdir_free(d);
}

/* A cgroup that provides every value needs no host files. */
static void
test_cgroup_only(void)
{
	char *d = t_tmpdir();
	struct metrics_sample s;

	fx_put(d, "proc/self/cgroup", "0::/box\n");
	fx_put(d, "cgroup/cgroup.controllers", "cpu memory\n");
	fx_put(d, "cgroup/box/cpu.max", "100000 100000\n");
	fx_put(d, "cgroup/box/memory.max", "2147483648\n");
	fx_put(d, "cgroup/box/cpu.stat", "usage_usec 77\n");
	fx_put(d, "cgroup/box/memory.current", "1610612736\n");
	T_EQ_INT(fx_read(d, &s), 0);
	T_EQ_DBL(s.cpu_count, 1);
	T_EQ_INT(s.cpu_usec, 77);
	T_EQ_DBL(s.host_cpus, 1);
	T_EQ_DBL(s.mem_total_mib, 2048);
	T_EQ_DBL(s.mem_used_mib, 1536);
	t_tmpdir_free(d);
}

/* Without cgroup or host files the read fails and leaves *out alone. */
static void
test_no_host(void)
{
	char *d = t_tmpdir();
	char *proc = xasprintf("%s/proc", d), *cg = xasprintf("%s/cgroup", d);
	struct metrics_src src = { proc, cg };
	struct metrics_sample s;
	char err[256] = "";

	memset(&s, 0xa5, sizeof(s));
	T_EQ_INT(metrics_read(&src, &s, err, sizeof(err)), -ENOENT);
	T_OK(strstr(err, "No such file") != NULL);
	T_EQ_INT(s.cpu_usec, UINT64_C(0xa5a5a5a5a5a5a5a5));
	T_EQ_INT(metrics_read(&src, &s, NULL, 0), -ENOENT);

	/* CPU from the host but no meminfo: still a failure, about memory. */
	fx_put(d, "proc/stat", HOST_STAT);
	T_EQ_INT(metrics_read(&src, &s, err, sizeof(err)), -ENOENT);
	T_OK(strstr(err, "meminfo") != NULL);
	T_EQ_INT(s.cpu_usec, UINT64_C(0xa5a5a5a5a5a5a5a5));
	free(proc);
	free(cg);
	t_tmpdir_free(d);
}

/* metrics_cpu_pct: half of two CPUs is 50. */
static void
test_pct_normal(void)
{
	struct metrics_sample a = { 0 }, b;

	a.cpu_usec = 1000000;
	a.wall_usec = 5000000;
	a.host_cpus = 2;
	b = a;
	b.cpu_usec += 1000000;
	b.wall_usec += 1000000;
	T_EQ_DBL(metrics_cpu_pct(&a, &b), 50);
	b.host_cpus = 4;
	T_EQ_DBL(metrics_cpu_pct(&a, &b), 25);
}

/* metrics_cpu_pct: more than the limit reads 100, backwards reads 0. */
static void
test_pct_clamp(void)
{
	struct metrics_sample a = { 0 }, b;

	a.cpu_usec = 1000000;
	a.wall_usec = 5000000;
	a.host_cpus = 1;
	b = a;
	b.cpu_usec += 3000000;
	b.wall_usec += 1000000;
	T_EQ_DBL(metrics_cpu_pct(&a, &b), 100);
	T_EQ_DBL(metrics_cpu_pct(&b, &a), 0);
	b.cpu_usec = a.cpu_usec;
	T_EQ_DBL(metrics_cpu_pct(&a, &b), 0);
}

/* metrics_cpu_pct: no time passed, no percentage. */
static void
test_pct_zero_interval(void)
{
	struct metrics_sample a = { 0 }, b;

	a.host_cpus = 2;
	b = a;
	b.cpu_usec = 1000;
	T_EQ_DBL(metrics_cpu_pct(&a, &b), 0);
}

/* The real system: sane values, and two samples a rate can come from. */
static void
test_system(void)
{
	struct metrics_sample a, b;
	char err[256] = "";
	double pct;

	T_EQ_INT(metrics_read(&metrics_src_system, &a, err, sizeof(err)), 0);
	if (*err != '\0')
		fprintf(stderr, "  metrics_read: %s\n", err);
	T_OK(a.cpu_count >= 1);
	T_OK(a.host_cpus >= 1);
	T_OK(a.mem_total_mib > 0);
	T_OK(a.mem_used_mib >= 0);
	T_OK(a.mem_used_mib <= a.mem_total_mib);
	T_OK(a.timestamp_ms > INT64_C(1600000000000));
	T_EQ_INT(metrics_read(&metrics_src_system, &b, err, sizeof(err)), 0);
	T_OK(b.wall_usec >= a.wall_usec);
	T_OK(b.cpu_usec >= a.cpu_usec);
	pct = metrics_cpu_pct(&a, &b);
	T_OK(pct >= 0 && pct <= 100);
}

/* OOM kill counts: v2 memory.events, v1 memory.oom_control, or none. */
static void
test_oom_kills(void)
{
	char *d = t_tmpdir();
	char *proc = xasprintf("%s/proc", d), *cg = xasprintf("%s/cgroup", d);
	struct metrics_src src = { proc, cg };
	uint64_t n = 77;

	fx_host(d);
	fx_put(d, "proc/self/cgroup", "0::/box\n");
	fx_put(d, "cgroup/cgroup.controllers", "memory\n");
	T_EQ_INT(metrics_oom_kills(&src, &n), -ENOENT);
	T_EQ_INT(n, 77);
	fx_put(d, "cgroup/box/memory.events",
	    "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 0\n");
	T_EQ_INT(metrics_oom_kills(&src, &n), 0);
	T_EQ_INT(n, 2);
	t_tmpdir_free(d);

	d = t_tmpdir();
	free(proc);
	free(cg);
	proc = xasprintf("%s/proc", d);
	cg = xasprintf("%s/cgroup", d);
	src = (struct metrics_src){ proc, cg };
	fx_host(d);
	fx_put(d, "proc/self/cgroup", "4:memory:/x\n");
	fx_put(d, "cgroup/memory/x/memory.usage_in_bytes", "1048576\n");
	fx_put(d, "cgroup/memory/x/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
	T_EQ_INT(metrics_oom_kills(&src, &n), 0);
	T_EQ_INT(n, 5);
	t_tmpdir_free(d);
	free(proc);
	free(cg);
}

static const struct t_case cases[] = {
	{ "oom kills", test_oom_kills },
	{ "v2 nested limits", test_v2_nested },
	{ "v2 unlimited", test_v2_unlimited },
	{ "v2 small quota", test_v2_small_quota },
	{ "v2 root cgroup", test_v2_root },
	{ "v2 partial", test_v2_partial },
	{ "v2 namespace", test_v2_namespace },
	{ "v1 separate mounts", test_v1_separate },
	{ "v1 combined mount", test_v1_combined },
	{ "no cgroup", test_no_cgroup },
	{ "cgroup only", test_cgroup_only },
	{ "no host", test_no_host },
	{ "cpu pct normal", test_pct_normal },
	{ "cpu pct clamp", test_pct_clamp },
	{ "cpu pct zero interval", test_pct_zero_interval },
	{ "system", test_system },
};

int
main(void)
{
	return T_RUN(cases);
}
