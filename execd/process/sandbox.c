/*
 * sandbox.c -- the seccomp filter, capabilities and no_new_privs of every
 * child (see sandbox.h).
 *
 * The filter is a denylist, as systemd and the container runtimes write
 * theirs: everything is allowed but the groups below, each a few calls
 * with one reason, so a profile is a list of groups and the docs print
 * the table.  Refused calls fail with EPERM, never a SIGSYS kill, so a
 * program sees an error it can handle; clone3 fails with ENOSYS instead,
 * which makes libc fall back to clone, whose flags the filter can see.
 * libseccomp's default bad-architecture action (kill) stays, so the
 * 32-bit system call tables cannot go around the list.
 *
 * The filter is built once, at start, and exported as BPF; a child loads
 * it with one system call, or is born under it, forked by a thread of
 * execd that loaded it for itself (sandbox_load; loading costs the kernel
 * a few hundred microseconds, paid once per thread that way).  This file
 * does not know which children there are: spawn.c calls sandbox_enter()
 * in each.
 */
#include <errno.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include "../core/xmalloc.h"
#include "sandbox.h"

struct sandbox {
	struct sock_fprog	 prog;		/* len 0: no filter */
	bool			 no_new_privs;
	uint64_t		 caps;
};

/* A group of calls refused together, for one reason. */
struct group {
	const char		*name;
	enum sandbox_profile	 from;		/* refused from this profile up */
	const char		*why;
	const char *const	*calls;
};

#define CALLS(...) (const char *const[]){ __VA_ARGS__, NULL }

static const struct group groups[] = {
	{ "module", SANDBOX_DEFAULT, "load or remove kernel modules",
	    CALLS("init_module", "finit_module", "delete_module",
	    "create_module", "query_module", "get_kernel_syms") },
	{ "kexec", SANDBOX_DEFAULT, "replace the running kernel",
	    CALLS("kexec_load", "kexec_file_load") },
	{ "reboot", SANDBOX_DEFAULT, "reboot or halt the machine",
	    CALLS("reboot") },
	{ "swap", SANDBOX_DEFAULT, "change the machine's swap",
	    CALLS("swapon", "swapoff") },
	{ "clock", SANDBOX_DEFAULT, "set the machine's clock",
	    CALLS("settimeofday", "clock_settime", "clock_adjtime",
	    "stime") },
	{ "mount", SANDBOX_DEFAULT, "change what is mounted where",
	    CALLS("mount", "umount", "umount2", "pivot_root", "fsopen",
	    "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
	    "mount_setattr") },
	{ "bpf", SANDBOX_DEFAULT, "load programs into the kernel",
	    CALLS("bpf") },
	{ "perf", SANDBOX_DEFAULT, "observe other processes and the kernel",
	    CALLS("perf_event_open") },
	{ "userfaultfd", SANDBOX_DEFAULT,
	    "a favourite of kernel exploits; no agent needs it",
	    CALLS("userfaultfd") },
	{ "keyring", SANDBOX_DEFAULT, "the kernel keyrings are not "
	    "namespaced: keys of other containers",
	    CALLS("add_key", "request_key", "keyctl") },
	{ "handles", SANDBOX_DEFAULT, "open files by handle, around the "
	    "mount namespace", CALLS("open_by_handle_at",
	    "name_to_handle_at") },
	{ "io_uring", SANDBOX_DEFAULT, "a large kernel surface that "
	    "seccomp cannot see into", CALLS("io_uring_setup",
	    "io_uring_enter", "io_uring_register") },
	{ "namespaces", SANDBOX_DEFAULT, "new namespaces (clone with "
	    "CLONE_NEW* flags too)", CALLS("unshare", "setns") },
	{ "obsolete", SANDBOX_DEFAULT, "old or machine-wide calls the "
	    "container runtimes refuse", CALLS("acct", "quotactl",
	    "lookup_dcookie", "nfsservctl", "uselib", "ustat", "sysfs",
	    "_sysctl", "vm86", "vm86old", "ioperm", "iopl") },
	{ "debug", SANDBOX_STRICT, "trace or read other processes",
	    CALLS("ptrace", "process_vm_readv", "process_vm_writev",
	    "kcmp") },
};

/* CLONE_NEW* flags that clone(2) can carry (CLONE_NEWTIME cannot). */
static const uint64_t clone_new[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
};

const uint64_t sandbox_default_caps =
    1ULL << CAP_CHOWN | 1ULL << CAP_DAC_OVERRIDE | 1ULL << CAP_FSETID |
    1ULL << CAP_FOWNER | 1ULL << CAP_NET_RAW | 1ULL << CAP_SETGID |
    1ULL << CAP_SETUID | 1ULL << CAP_SETFCAP | 1ULL << CAP_SETPCAP |
    1ULL << CAP_NET_BIND_SERVICE | 1ULL << CAP_SYS_CHROOT |
    1ULL << CAP_KILL | 1ULL << CAP_AUDIT_WRITE;

static const char *const cap_names[] = {
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid",
	"kill", "setgid", "setuid", "setpcap", "linux_immutable",
	"net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot",
	"sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
	"sys_resource", "sys_time", "sys_tty_config", "mknod", "lease",
	"audit_write", "audit_control", "setfcap", "mac_override",
	"mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read",
	"perfmon", "bpf", "checkpoint_restore",
};
#define NCAPS	(sizeof(cap_names) / sizeof(cap_names[0]))

static int	deny(scmp_filter_ctx, uint32_t, const char *, unsigned,
		    const struct scmp_arg_cmp *);
static int	add_personality(scmp_filter_ctx, uint32_t);
static int	add_groups(scmp_filter_ctx, const struct sandbox_conf *);
static int	add_protect(scmp_filter_ctx, const pid_t *, size_t);
static size_t	threads(pid_t *, size_t);
static int	export(scmp_filter_ctx, struct sock_fprog *);

/* Refuse call (by name) with action when the conditions hold. */
static int
deny(scmp_filter_ctx ctx, uint32_t action, const char *call, unsigned n,
    const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(call);

	if (nr == __NR_SCMP_ERROR)
		return 0;	/* not on this architecture */
	return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

/*
 * personality(2): only the personas the container runtimes allow (0,
 * UNAME26, PER_LINUX32 and both, and 0xffffffff, which asks for the
 * current one), as the kernel reads it, a 32-bit value.  libseccomp
 * allows one comparison per argument and rule, but a masked compare
 * tests two bits at once, "bit b set and bit c clear".  A persona is
 * refused when it has a bit outside the harmless ones (b, in X) and is
 * not 0xffffffff (some bit c is clear).  With two fixed bits b0 != c0 of
 * X, three families of such pairs cover every refused persona:
 *   c0 clear: (b, c0) for each b of X;
 *   c0 set, b0 set: (b0, c) for each other bit c, one of which is clear;
 *   c0 set, b0 clear: (c0, b0).
 */
static int
add_personality(scmp_filter_ctx ctx, uint32_t act)
{
	const uint32_t harmless = 0x0008 | 0x20000;
	const unsigned b0 = 0, c0 = 1;	/* both outside harmless */
	struct scmp_arg_cmp cmp;
	int rc;

	for (unsigned bit = 0; bit < 32; bit++) {
		if (!(harmless & 1U << bit) && bit != c0) {
			cmp = SCMP_A0(SCMP_CMP_MASKED_EQ,
			    1ULL << bit | 1ULL << c0, 1ULL << bit);
			if ((rc = deny(ctx, act, "personality", 1, &cmp)) < 0)
				return rc;
		}
		if (bit != b0) {
			cmp = SCMP_A0(SCMP_CMP_MASKED_EQ,
			    1ULL << b0 | 1ULL << bit, 1ULL << b0);
			if ((rc = deny(ctx, act, "personality", 1, &cmp)) < 0)
				return rc;
		}
	}
	cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, 1ULL << c0 | 1ULL << b0, 1ULL << c0);
	return deny(ctx, act, "personality", 1, &cmp);
}

/* The profile's groups, clone's namespace flags, clone3, personality. */
static int
add_groups(scmp_filter_ctx ctx, const struct sandbox_conf *c)
{
	uint32_t act = c->log_only ? SCMP_ACT_LOG : SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp cmp;
	int rc;

	if (c->profile == SANDBOX_OFF)
		return 0;
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		if (groups[i].from > c->profile)
			continue;
		for (const char *const *p = groups[i].calls; *p != NULL; p++)
			if ((rc = deny(ctx, act, *p, 0, NULL)) < 0)
				return rc;
	}
	for (size_t i = 0; i < sizeof(clone_new) / sizeof(clone_new[0]);
	    i++) {
		cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, clone_new[i], clone_new[i]);
		if ((rc = deny(ctx, act, "clone", 1, &cmp)) < 0)
			return rc;
	}
	if ((rc = deny(ctx, c->log_only ? SCMP_ACT_LOG :
	    SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL)) < 0)
		return rc;
	return add_personality(ctx, act);
}

/*
 * Calls aimed at execd itself, refused in every profile and mode: at its
 * pid and at each of its threads (a signal sent to a thread's id reaches
 * the whole process), at its process group, and at every process.  A pid
 * is an int: compare its low 32 bits, whatever the caller put above.
 */
static int
add_protect(scmp_filter_ctx ctx, const pid_t *ids, size_t nids)
{
	static const struct { const char *call; unsigned arg; } by_pid[] = {
		{ "kill", 0 }, { "tgkill", 0 }, { "rt_sigqueueinfo", 0 },
		{ "rt_tgsigqueueinfo", 0 }, { "pidfd_open", 0 },
		{ "ptrace", 1 }, { "process_vm_readv", 0 },
		{ "process_vm_writev", 0 }, { "prlimit64", 0 },
		{ "kcmp", 0 }, { "kcmp", 1 }, { "sched_setaffinity", 0 },
		{ "sched_setscheduler", 0 }, { "sched_setparam", 0 },
	};
	/* A thread id for tkill, a pidfd: nothing the filter can check. */
	static const char *const always[] = { "tkill", "pidfd_send_signal" };
	const uint32_t act = SCMP_ACT_ERRNO(EPERM), m = 0xffffffff;
	const pid_t group[] = { -getpgrp(), -getpid(), -1 };
	struct scmp_arg_cmp cmp;
	int rc;

	for (size_t t = 0; t < nids; t++) {
		for (size_t i = 0; i < sizeof(by_pid) / sizeof(by_pid[0]);
		    i++) {
			cmp = (struct scmp_arg_cmp){ by_pid[i].arg,
			    SCMP_CMP_MASKED_EQ, m, (uint32_t)ids[t] };
			if ((rc = deny(ctx, act, by_pid[i].call, 1, &cmp)) < 0)
				return rc;
		}
	}
	for (size_t i = 0; i < sizeof(group) / sizeof(group[0]); i++) {
		cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, m, (uint32_t)group[i]);
		if ((rc = deny(ctx, act, "kill", 1, &cmp)) < 0)
			return rc;
	}
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		if ((rc = deny(ctx, act, always[i], 0, NULL)) < 0)
			return rc;
	return 0;
}

/* The ids of this process's threads, the process's own first. */
static size_t
threads(pid_t *ids, size_t max)
{
	struct dirent *e;
	size_t n = 0;
	DIR *d;
	long t;

	ids[n++] = getpid();
	if ((d = opendir("/proc/self/task")) == NULL)
		return n;
	while (n < max && (e = readdir(d)) != NULL) {
		t = strtol(e->d_name, NULL, 10);
		if (t > 0 && t != ids[0])
			ids[n++] = (pid_t)t;
	}
	closedir(d);
	return n;
}

/* The filter as BPF in memory (libseccomp 2.5 exports to an fd only). */
static int
export(scmp_filter_ctx ctx, struct sock_fprog *prog)
{
	struct stat st;
	void *p = NULL;
	int fd, rc;

	if ((fd = memfd_create("execd-seccomp", MFD_CLOEXEC)) < 0)
		return -errno;
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0) {
		rc = -EINVAL;
		goto out;
	}
	p = xmalloc((size_t)st.st_size);
	if (pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
		rc = -EIO;
		goto out;
	}
	prog->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	prog->filter = p;
	p = NULL;
	rc = 0;
out:
	free(p);
	close(fd);
	return rc;
}

/* Build the filter for the children of this process; see sandbox.h. */
int
sandbox_new(const struct sandbox_conf *c, struct sandbox **out, char *err,
    size_t errlen)
{
	struct sandbox *sb;
	scmp_filter_ctx ctx;
	pid_t ids[64];
	size_t nids = threads(ids, sizeof(ids) / sizeof(ids[0]));
	int rc;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		snprintf(err, errlen, "seccomp_init failed");
		return -ENOMEM;
	}
	/* The child sets no_new_privs itself, or not, as configured. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0 || (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0 ||
	    (rc = add_groups(ctx, c)) < 0 || (rc = add_protect(ctx, ids, nids)) < 0) {
		snprintf(err, errlen, "cannot build the seccomp filter: %s",
		    strerror(-rc));
		seccomp_release(ctx);
		return rc;
	}
	sb = xcalloc(1, sizeof(*sb));
	if ((rc = export(ctx, &sb->prog)) < 0) {
		snprintf(err, errlen, "cannot export the seccomp filter: %s",
		    strerror(-rc));
		seccomp_release(ctx);
		free(sb);
		return rc;
	}
	seccomp_release(ctx);
	sb->no_new_privs = c->no_new_privs;
	sb->caps = c->caps;
	*out = sb;
	return 0;
}

void
sandbox_free(struct sandbox *sb)
{
	if (sb == NULL)
		return;
	free(sb->prog.filter);
	free(sb);
}

/* no_new_privs where configured, then the filter, on this thread. */
static int
load(const struct sandbox *sb)
{
	if (sb->no_new_privs &&
	    syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &sb->prog) < 0)
		return -errno;
	return 0;
}

/* The filter on a thread that forks children; see sandbox.h. */
int
sandbox_load(const struct sandbox *sb)
{
	return load(sb);
}

/*
 * In the child: the bounding set first (it needs CAP_SETPCAP, which it
 * may be about to lose), the inheritable set with it (ambient goes too),
 * then no_new_privs, then the filter unless it has it.  A process without
 * CAP_SETPCAP cannot drop from the bounding set; it has no capabilities
 * to pass on, and no_new_privs keeps exec from granting file
 * capabilities.
 */
int
sandbox_enter(const struct sandbox *sb, bool filtered)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	for (unsigned cap = 0; cap < 64; cap++) {
		if (sb->caps & 1ULL << cap)
			continue;
		if (syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;		/* past the kernel's last */
			if (errno != EPERM)
				return -errno;
		}
	}
	if (syscall(SYS_capget, &h, d) == 0) {
		d[0].inheritable &= (uint32_t)sb->caps;
		d[1].inheritable &= (uint32_t)(sb->caps >> 32);
		if (syscall(SYS_capset, &h, d) < 0)
			return -errno;
	}
	if (filtered)		/* born under it: no_new_privs came too */
		return 0;
	return load(sb);
}

static const char *const profile_names[] = {
	[SANDBOX_OFF] = "off", [SANDBOX_DEFAULT] = "default",
	[SANDBOX_STRICT] = "strict",
};

int
sandbox_profile_parse(const char *s, enum sandbox_profile *out)
{
	for (size_t i = 0; i < sizeof(profile_names) / sizeof(*profile_names);
	    i++) {
		if (strcmp(s, profile_names[i]) == 0) {
			*out = (enum sandbox_profile)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *
sandbox_profile_name(enum sandbox_profile p)
{
	return profile_names[p];
}

/* A capability list into a mask; see sandbox.h. */
int
sandbox_caps_parse(const char *s, uint64_t *out, char *err, size_t errlen)
{
	uint64_t mask = 0;
	const char *p = s, *end;
	char name[32];
	size_t n, i;

	if (strcasecmp(s, "all") == 0) {
		*out = (1ULL << NCAPS) - 1;
		return 0;
	}
	if (strcasecmp(s, "none") == 0 || *s == '\0') {
		*out = 0;
		return 0;
	}
	while (*p != '\0') {
		end = p + strcspn(p, ",");
		n = (size_t)(end - p);
		if (n > 4 && strncasecmp(p, "cap_", 4) == 0) {
			p += 4;
			n -= 4;
		}
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		for (i = 0; i < n; i++)
			name[i] = (char)tolower((unsigned char)p[i]);
		name[n] = '\0';
		for (i = 0; i < NCAPS; i++)
			if (strcmp(name, cap_names[i]) == 0)
				break;
		if (i == NCAPS) {
			snprintf(err, errlen, "unknown capability '%s'", name);
			return -EINVAL;
		}
		mask |= 1ULL << i;
		p = *end == ',' ? end + 1 : end;
	}
	*out = mask;
	return 0;
}

void
sandbox_caps_format(uint64_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NCAPS && n < len; i++) {
		if (!(mask & 1ULL << i))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
		    cap_names[i]);
	}
	if (n == 0)
		snprintf(buf, len, "none");
}
