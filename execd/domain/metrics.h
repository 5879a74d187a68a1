/*
 * metrics.h -- CPU and memory of the sandbox's own cgroup, for GET /metrics.
 *
 * metrics_read() takes one cheap sample: a handful of small file reads from
 * /proc and the cgroup filesystem (v2, or v1 including hybrid hosts), no
 * sleeping.  CPU load is a rate, so the caller keeps two samples and asks
 * metrics_cpu_pct() for the percentage between them.  Host-wide values stand
 * in only where the cgroup sets no limit or does no accounting.
 *
 * Any thread may call these functions: they keep no state and do not log.
 */
#ifndef EXECD_METRICS_H
#define EXECD_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Where to read; tests point these at fixture trees. */
struct metrics_src {
	const char	*proc_root;	/* "/proc" */
	const char	*cgroup_root;	/* "/sys/fs/cgroup" */
};

/* One sample.  Sizes are in MiB (bytes / 1048576.0, may be fractional). */
struct metrics_sample {
	/*
	 * CPU limit: cgroup quota/period rounded DOWN, min 1; else usable
	 * CPUs (sched_getaffinity count when proc_root is "/proc", else the
	 * number of "cpuN" lines of <proc_root>/stat).
	 */
	double		cpu_count;
	/*
	 * CPU time used so far: the cgroup's (v2 cpu.stat usage_usec; v1
	 * cpuacct.usage ns/1000) or, without cgroup accounting, host busy
	 * time from <proc_root>/stat in usec.
	 */
	uint64_t	cpu_usec;
	uint64_t	wall_usec;	/* CLOCK_MONOTONIC at the read, usec */
	/*
	 * Denominator for cpu_usec: the number of host CPUs when cpu_usec
	 * is host-wide, else equal to cpu_count.
	 */
	double		host_cpus;
	/*
	 * Memory limit: the minimum of the cgroup limits up the hierarchy
	 * and host MemTotal; host MemTotal when unlimited.
	 */
	double		mem_total_mib;
	/*
	 * Cgroup usage minus inactive file pages (v2 memory.current -
	 * memory.stat inactive_file; v1 memory.usage_in_bytes - memory.stat
	 * total_inactive_file), clamped to [0, mem_total_mib]; without a
	 * memory cgroup, MemTotal-MemFree-Buffers-Cached-SReclaimable from
	 * <proc_root>/meminfo.
	 */
	double		mem_used_mib;
	int64_t		timestamp_ms;	/* CLOCK_REALTIME at read, Unix ms */
};

/* {"/proc", "/sys/fs/cgroup"}: the running system. */
extern const struct metrics_src metrics_src_system;

/*
 * Take one sample into *out: 0, or -errno with a message in err (when err
 * is not NULL) and *out untouched.  Fails only when a value has neither a
 * cgroup source nor a readable host source.
 */
int	metrics_read(const struct metrics_src *, struct metrics_sample *out,
	    char *err, size_t errlen);

/*
 * CPU use between two samples, in percent of the limit: 100 * dCPU /
 * (dWall * cur->host_cpus), clamped to [0, 100]; 0 when dWall is 0.
 */
double	metrics_cpu_pct(const struct metrics_sample *prev,
	    const struct metrics_sample *cur);

/*
 * How many processes the kernel's OOM killer has ended in the sandbox's
 * memory cgroup (v2 memory.events oom_kill, v1 memory.oom_control
 * oom_kill).  0, or -ENOENT when the cgroup does not count them.
 */
int	metrics_oom_kills(const struct metrics_src *, uint64_t *out);

#endif
