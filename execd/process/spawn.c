/*
 * spawn.c -- fork, prepare, exec (tmux's job_run, libuv's uv_spawn).
 *
 * The child is made the way posix_spawn makes it: clone() with CLONE_VM
 * and CLONE_VFORK, on a stack of its own, so that nothing of execd's
 * memory is copied (a fork() costs more than running `true`).  execd
 * waits, suspended, until the child has exec'd or failed.  The child
 * shares execd's memory until then, so it only makes system calls: no
 * allocation, no locks, and the identity changes as raw syscalls (glibc's
 * setuid() would try to change every thread of execd).  Where such a
 * clone is refused (valgrind), and in AddressSanitizer builds, a plain
 * fork() does the same.  A job with a cgroup is forked by one of
 * cgroup.c's residents, a thread already inside it (cgroup_fork), which
 * loads the seccomp filter for itself first, so that the child is born in
 * its cgroup and under the filter; the loop thread waits meanwhile, as it
 * waits for its own clone.
 * Signals are blocked around it so that no handler of ours runs in the
 * child; the child resets every disposition and its mask before exec.  The
 * child reports a failed step as {step, errno} on a CLOEXEC pipe and
 * _exit(127)s; EOF on that pipe means the exec worked.  Nothing here
 * waits for children: child.c reaps.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <stdint.h>
#include <unistd.h>

#include "../core/xmalloc.h"
#include "cgroup.h"
#include "isoplan.h"
#include "limits.h"
#include "sandbox.h"
#include "spawn.h"

extern char **environ;

/* What every child enters before exec; NULL: nothing (tests, tools). */
static const struct sandbox *sandbox;
static unsigned sandbox_gen;		/* bumped by each spawn_init */

/*
 * The sandbox generation whose filter this thread has loaded (0: none).
 * The loop thread never loads one; a resident of cgroup.c, which forks
 * children from inside their cgroups, loads it before its first fork so
 * that its children are born under it.  A resident outlives no policy:
 * cgroup_renew() retires them when the policy is read again.
 */
static __thread unsigned filter_gen;

/* Who children run as by default; NULL: execd's identity. */
static const struct spawn_user *defuser;

/* Written to each child's oom_score_adj; "" until spawn_oom_init. */
static char oom_adj[16];
static int oom_lowered;		/* execd's is below the default */

enum step {
	S_DEVNULL, S_DUP, S_CLOSE, S_SETSID, S_CTTY, S_SANDBOX, S_IDS, S_CHDIR,
	S_EXEC, S_CGROUP, S_RLIMIT, S_OOM, S_ISOLATE
};

static const char *const step_names[] = {
	[S_DEVNULL] = "open /dev/null", [S_DUP] = "dup2",
	[S_CLOSE] = "close inherited fds",
	[S_SETSID] = "setsid", [S_CTTY] = "set the controlling terminal",
	[S_SANDBOX] = "enter the sandbox", [S_IDS] = "set user and groups",
	[S_CHDIR] = "chdir", [S_EXEC] = "exec",
	[S_CGROUP] = "join the job's cgroup", [S_RLIMIT] = "set the limits",
	[S_OOM] = "set oom_score_adj",
	[S_ISOLATE] = "enter the isolated session's namespaces",
};

struct report {
	int	step;
	int	err;
};

/* What the child needs, on the parent's stack (the child shares it). */
struct start {
	const struct spawn_opts	*o;
	const struct cgroup	*cg;
	bool			 join;	/* the child moves into cg */
	bool			 resident; /* forked by a thread in cg */
	bool			 filtered; /* born under the sandbox */
	pid_t			 parent;
	int			 errfd;
	pid_t			 pid;	/* the child's, set by clone */
	uint32_t		 alive;	/* 1; 0 (and a wake) at its exec,
					   at its end, or when no clone */
};

/* The child's stack; one at a time: execd waits for the child. */
static void *stack;

#define CHILD_STACK	(256 << 10)

/*
 * AddressSanitizer's interceptors and stack bookkeeping cannot run on a
 * stack it did not make, in memory it shares: its builds fork.
 */
#if defined(__SANITIZE_ADDRESS__)
#define USE_CLONE	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define USE_CLONE	0
#endif
#endif
#ifndef USE_CLONE
#define USE_CLONE	1
#endif

static int	start_child(void *);
static pid_t	clone_child(void *);
static pid_t	wait_child(void *);
static void	no_child(struct start *, pid_t);
static int	start_one(const struct spawn_opts *, pid_t *, char *,
		    size_t);
static char	**user_env(char *const *, const struct spawn_user *);
static void	user_env_free(char **);
static int	close_from(int, int);
static int	set_limits(const struct limits *, const struct cgroup *);
static int	set_oom(void);
static void	child(const struct start *) __attribute__((noreturn));
static void	fail(int, enum step) __attribute__((noreturn));

static void
fail(int fd, enum step s)
{
	struct report r = { s, errno };

	if (write(fd, &r, sizeof(r)) < 0)
		_exit(126);
	_exit(127);
}

/*
 * In the child: close every fd from first up but keep, which stays open
 * until exec (it is close-on-exec, and above first).  close_range(2)
 * where the kernel has it (5.9); before that, one close per possible fd
 * up to the fd limit.  Raw system calls only: this runs in execd's memory.
 */
static int
close_from(int first, int keep)
{
	struct rlimit rl;

	if (syscall(SYS_close_range, (unsigned)first, (unsigned)keep - 1,
	    0) == 0 && syscall(SYS_close_range, (unsigned)keep + 1, ~0U,
	    0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
	if (syscall(SYS_getrlimit, RLIMIT_NOFILE, &rl) < 0)
		return -1;
	for (rlim_t fd = (rlim_t)first; fd < rl.rlim_cur; fd++)
		if (fd != (rlim_t)keep)
			syscall(SYS_close, (int)fd);
	return 0;
}

/* Which rlimit holds each limit, and where the limit is kept. */
static const struct {
	unsigned	flag;
	int		res;
	size_t		off;
} rlmap[] = {
	{ LIMITS_F_MEMORY, RLIMIT_DATA, offsetof(struct limits, memory) },
	{ LIMITS_F_PROCESSES, RLIMIT_NPROC, offsetof(struct limits,
	    processes) },
	{ LIMITS_F_CPU, RLIMIT_CPU, offsetof(struct limits, cpu_seconds) },
	{ LIMITS_F_FILE_SIZE, RLIMIT_FSIZE, offsetof(struct limits,
	    file_size) },
	{ LIMITS_F_OPEN_FILES, RLIMIT_NOFILE, offsetof(struct limits,
	    open_files) },
	{ LIMITS_F_CORE, RLIMIT_CORE, offsetof(struct limits, core) },
};

/*
 * The i-th rlimit a child under l takes (in_cgroup: memory and processes
 * are the cgroup's): 1 with res, cur and max set, 0 for none at i, -1
 * past the last.  The values are UINT64_MAX for no limit.
 */
int
spawn_rlimit(const struct limits *l, int in_cgroup, size_t i, int *res,
    uint64_t *cur, uint64_t *max)
{
	uint64_t v;

	if (i >= sizeof(rlmap) / sizeof(rlmap[0]))
		return -1;
	if (!(l->set & rlmap[i].flag) || (in_cgroup &&
	    (rlmap[i].flag & (LIMITS_F_MEMORY | LIMITS_F_PROCESSES))))
		return 0;
	memcpy(&v, (const char *)l + rlmap[i].off, sizeof(v));
	*res = rlmap[i].res;
	*cur = *max = v;
	if (rlmap[i].res == RLIMIT_CPU && v != UINT64_MAX)
		*max = v + 1;
	return 1;
}

/*
 * In the child: rlimits for the limits no cgroup holds (all of them
 * without a cgroup).  Memory is RLIMIT_DATA, not RLIMIT_AS: runtimes that
 * reserve address space they never touch (JavaScript, Java) still start.
 * CPU: SIGXCPU at the limit, SIGKILL a second later.  Raw calls only.
 */
static int
set_limits(const struct limits *l, const struct cgroup *cg)
{
	struct rlimit rl;
	uint64_t v, max;
	int res;

	for (size_t i = 0; ; i++) {
		int r = spawn_rlimit(l, cg != NULL, i, &res, &v, &max);

		if (r < 0)
			break;
		if (r == 0)
			continue;
		rl.rlim_cur = v == UINT64_MAX ? RLIM_INFINITY : (rlim_t)v;
		rl.rlim_max = max == UINT64_MAX ? RLIM_INFINITY : (rlim_t)max;
		/* Lowering is always allowed; raising past execd's hard
		 * limit (unprivileged) keeps that limit. */
		if (syscall(SYS_prlimit64, 0, res, &rl, NULL) < 0) {
			if (syscall(SYS_prlimit64, 0, res, NULL, &rl) < 0)
				return -1;
			if (v < (uint64_t)rl.rlim_max)
				return -1;
		}
	}
	return 0;
}

/* In the child: its oom_score_adj.  -1 only when it matters. */
static int
set_oom(void)
{
	int fd;
	ssize_t n;

	if (oom_adj[0] == '\0')
		return 0;
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	n = fd >= 0 ? write(fd, oom_adj, strlen(oom_adj)) : -1;
	if (fd >= 0)
		close(fd);
	/* A child as protected as execd would be a way around it. */
	return n < 0 && oom_lowered ? -1 : 0;
}

/* In the child: set up and exec, or report and exit. */
static void
child(const struct start *st)
{
	const struct spawn_opts *o = st->o;
	int errfd = st->errfd;
	int fds[3] = { o->stdin_fd, o->stdout_fd, o->stderr_fd }, null;
	int fd3 = -1, step;
	sigset_t none;

	/* 0. Keep the error pipe clear of the fds about to be set up. */
	if (errfd < 10 && (errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 10)) < 0)
		_exit(127);
	/* 1. Signals: defaults, nothing blocked, die with execd. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		fail(errfd, S_SETSID);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != st->parent)
		_exit(127);	/* execd died between fork and prctl */
	/* 1b. The job's cgroup, limits, OOM score: before anything else. */
	if (st->join && cgroup_join(st->cg) < 0)
		fail(errfd, S_CGROUP);
	if (o->limits != NULL && set_limits(o->limits, st->cg) < 0)
		fail(errfd, S_RLIMIT);
	if (set_oom() < 0)
		fail(errfd, S_OOM);
	/* 2. Standard fds; everything else is close-on-exec or closed. */
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		fail(errfd, S_DEVNULL);
	if (o->has_fd3 && (fd3 = fcntl(o->fd3, F_DUPFD_CLOEXEC, 10)) < 0)
		fail(errfd, S_DUP);
	for (int i = 0; i < 3; i++) {
		if (fds[i] < 0)
			fds[i] = null;
		/* Move fds out of 0..2 first so no dup2 clobbers another. */
		if (fds[i] < 3 && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC,
		    3)) < 0)
			fail(errfd, S_DUP);
	}
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			fail(errfd, S_DUP);
	if (fd3 >= 0 && dup2(fd3, 3) < 0)	/* dup2 clears CLOEXEC */
		fail(errfd, S_DUP);
	/*
	 * Everything else goes, the error pipe at exec: our own fds are
	 * close-on-exec, but those execd inherited from whoever started it
	 * are not, and they must not reach code run as another user.
	 */
	if (close_from(fd3 >= 0 ? 4 : 3, errfd) < 0)
		fail(errfd, S_CLOSE);
	/* A new session leader takes a terminal as its own (forkpty). */
	if (o->ctty && ioctl(0, TIOCSCTTY, 0) < 0)
		fail(errfd, S_CTTY);
	/* 2b. Namespaces and mounts, while the child may still mount. */
	if (o->plan != NULL && isoplan_apply(o->plan, &step) < 0)
		fail(errfd, S_ISOLATE);
	/* 3. The sandbox, while the child may still drop capabilities. */
	if (sandbox != NULL &&
	    (errno = -sandbox_enter(sandbox, st->filtered)) != 0)
		fail(errfd, S_SANDBOX);
	/*
	 * 4. Identity: groups first, while we may still change them.  Raw
	 * calls: this process alone changes, not the threads of execd.
	 */
	if (o->set_ids && (syscall(SYS_setgroups, o->ngroups, o->groups) < 0 ||
	    syscall(SYS_setgid, o->gid) < 0 || syscall(SYS_setuid, o->uid) < 0))
		fail(errfd, S_IDS);
	/* 5. Working directory, then exec with a PATH search. */
	if (o->cwd != NULL && chdir(o->cwd) < 0)
		fail(errfd, S_CHDIR);
	if (o->path != NULL)
		execve(o->path, o->argv, o->envp ? o->envp : environ);
	else
		execvpe(o->argv[0], o->argv, o->envp ? o->envp : environ);
	fail(errfd, S_EXEC);
}

/* The program for argv[0]; see spawn.h. */
int
spawn_lookup(const char *name, const char *cwd, char *const *envp,
    char *out, size_t outlen)
{
	char *const *e = envp != NULL ? envp : environ;
	char here[PATH_MAX];
	const char *path = "", *dir, *end;
	struct stat st;
	size_t dl;
	int n;

	if (name[0] == '\0')
		return -ENOENT;
	if (name[0] == '/')
		return snprintf(out, outlen, "%s", name) < (int)outlen ? 0 :
		    -ENAMETOOLONG;
	if (strchr(name, '/') != NULL) {
		if (cwd == NULL && (cwd = getcwd(here, sizeof(here))) == NULL)
			return -errno;
		return snprintf(out, outlen, "%s%s%s", cwd,
		    cwd[strlen(cwd) - 1] == '/' ? "" : "/", name) <
		    (int)outlen ? 0 : -ENAMETOOLONG;
	}
	/* The last PATH in the environment, as Go reads it. */
	for (; *e != NULL; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	for (dir = path; ; dir = end + 1) {
		end = strchr(dir, ':');
		dl = end != NULL ? (size_t)(end - dir) : strlen(dir);
		if (dl > 0 && dir[0] == '/') {
			n = snprintf(out, outlen, "%.*s/%s", (int)dl, dir, name);
			if (n > 0 && (size_t)n < outlen && stat(out, &st) == 0 &&
			    !S_ISDIR(st.st_mode) && (st.st_mode & 0111) != 0)
				return 0;
		}
		if (end == NULL)
			break;
	}
	return -ENOENT;
}

/* execd's own OOM score and its children's; see spawn.h. */
int
spawn_oom_init(int child_adj, int *self)
{
	static const int tries[] = { -1000, -999, -500 };
	char buf[16];
	ssize_t n;
	int fd, e = 0;

	*self = 0;
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		if ((fd = open("/proc/self/oom_score_adj", O_WRONLY |
		    O_CLOEXEC)) < 0)
			return -errno;
		snprintf(buf, sizeof(buf), "%d", tries[i]);
		n = write(fd, buf, strlen(buf));
		e = n < 0 ? errno : 0;
		close(fd);
		if (n >= 0) {
			*self = tries[i];
			oom_lowered = 1;
			break;
		}
	}
	snprintf(oom_adj, sizeof(oom_adj), "%d", child_adj);
	return oom_lowered ? 0 : -e;
}

/* The default identity of children; see spawn.h. */
void
spawn_default_user(const struct spawn_user *u)
{
	defuser = u;
}

/*
 * envp (NULL: execd's) with HOME, USER and LOGNAME those of u: an array
 * the caller frees (with its three new strings, the last three entries
 * before the NULL); the others are borrowed.
 */
static char **
user_env(char *const *envp, const struct spawn_user *u)
{
	static const char *const names[] = { "HOME=", "USER=", "LOGNAME=" };
	char *const *e = envp != NULL ? envp : environ;
	size_t n = 0, k = 0;
	char **out;
	bool drop;

	while (e[n] != NULL)
		n++;
	out = xreallocarray(NULL, n + 4, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		drop = false;
		for (size_t j = 0; j < 3; j++)
			if (strncmp(e[i], names[j], strlen(names[j])) == 0)
				drop = true;
		if (!drop)
			out[k++] = e[i];
	}
	out[k++] = xasprintf("HOME=%s", u->home);
	out[k++] = xasprintf("USER=%s", u->name);
	out[k++] = xasprintf("LOGNAME=%s", u->name);
	out[k] = NULL;
	return out;
}

static void
user_env_free(char **env)
{
	size_t n = 0;

	if (env == NULL)
		return;
	while (env[n] != NULL)
		n++;
	for (size_t i = n - 3; i < n; i++)
		free(env[i]);
	free(env);
}

/* Bumped by each spawn_init; see spawn.h. */
unsigned
spawn_generation(void)
{
	return sandbox_gen;
}

/* Children from now on enter sb (NULL: none); see spawn.h. */
void
spawn_init(const struct sandbox *sb)
{
	sandbox = sb;
	if (++sandbox_gen == 0)	/* never 0, which is "no filter" */
		sandbox_gen = 1;
}

/* A pipe for a child; see spawn.h. */
int
spawn_pipe(int fds[2], int ours)
{
	int e;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (fcntl(fds[ours], F_SETFL, O_NONBLOCK) < 0) {
		e = errno;
		spawn_pipe_close(fds);
		return -e;
	}
	return 0;
}

/* Close what is open of a pipe; see spawn.h. */
void
spawn_pipe_close(int fds[2])
{
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* The child's entry on its own stack: its end of the pipe stays open. */
static int
start_child(void *arg)
{
	child(arg);
}

/*
 * Fork the child of st (the struct start), on whichever thread
 * cgroup_fork calls this: a clone that shares execd's memory where it
 * can, a fork() where it cannot.  The child's pid, or -1 with errno.
 */
static pid_t
clone_child(void *arg)
{
	struct start *st = arg;
	pid_t c = -1;

	/* A resident's first fork under this sandbox: its filter first. */
	if (st->resident && sandbox != NULL && filter_gen == 0 &&
	    sandbox_load(sandbox) == 0)
		filter_gen = sandbox_gen;
	st->filtered = st->resident && sandbox != NULL &&
	    filter_gen == sandbox_gen;
	if (st->resident && filter_gen != 0 && !st->filtered) {
		no_child(st, -1);
		errno = ESTALE;		/* a resident of an older policy */
		return -1;
	}
	/*
	 * The kernel sets pid before the child runs, and clears alive (with
	 * a futex wake) when the child execs or ends: wait_child.
	 */
	errno = EINVAL;
	/* A user namespace's child makes itself dumpable a moment (see
	 * isoplan.c): not with execd's memory. */
	if (stack != NULL && !(st->o->plan != NULL && st->o->plan->userns.on))
		c = clone(start_child, (char *)stack + CHILD_STACK,
		    CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID |
		    CLONE_CHILD_CLEARTID | SIGCHLD, arg, &st->pid, NULL,
		    &st->alive);
	if (c < 0 && (errno == EINVAL || errno == ENOSYS)) {
		/* No such clone here: an ordinary fork, which returns at once;
		 * the child's exec then ends the wait on the error pipe. */
		c = fork();
		if (c == 0)
			child(arg);
		no_child(st, c);
	} else if (c < 0)
		no_child(st, c);
	return c;
}

/* Tell wait_child there is nothing (more) to wait for: pid c. */
static void
no_child(struct start *st, pid_t c)
{
	int e = errno;

	st->pid = c;
	__atomic_store_n(&st->alive, 0, __ATOMIC_RELEASE);
	/* Not private: the kernel's wake at exec is a shared one. */
	syscall(SYS_futex, &st->alive, FUTEX_WAKE, 1, NULL, NULL, 0);
	errno = e;
}

/*
 * On the loop, while a resident forks st's child: until the child has
 * exec'd or ended (or there is none).  Its pid, or -1.
 */
static pid_t
wait_child(void *arg)
{
	struct start *st = arg;

	while (__atomic_load_n(&st->alive, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &st->alive, FUTEX_WAIT, 1, NULL, NULL, 0);
	return st->pid > 0 ? st->pid : -1;
}

/* Fork and exec, as the default user where it applies; see spawn.h. */
int
spawn_start(const struct spawn_opts *o, pid_t *pid, char *err, size_t errlen)
{
	struct spawn_opts uo;
	char **env;
	int rc;

	if (defuser == NULL || o->set_ids || o->keep_ids)
		return start_one(o, pid, err, errlen);
	uo = *o;
	uo.set_ids = 1;
	uo.uid = defuser->uid;
	uo.gid = defuser->gid;
	uo.groups = defuser->groups;
	uo.ngroups = defuser->ngroups;
	uo.envp = env = user_env(o->envp, defuser);
	rc = start_one(&uo, pid, err, errlen);
	user_env_free(env);
	return rc;
}

/* Fork and exec o as it is. */
static int
start_one(const struct spawn_opts *o, pid_t *pid, char *err, size_t errlen)
{
	struct cgroup *cg = NULL;
	sigset_t all, old;
	struct report r;
	struct start st;
	int p[2], e;
	pid_t c, self = getpid();
	ssize_t n;

	if (o->argv == NULL || o->argv[0] == NULL)
		return -EINVAL;
	/* A child born under the filter could not mount: an isolated
	 * shell joins a cgroup of its own, never a resident's. */
	if (cgroup_wanted(o->limits) && (e = o->plan != NULL ?
	    cgroup_new_empty(o->limits, &cg, err, errlen) :
	    cgroup_new(o->limits, &cg, err, errlen)) < 0)
		return e;
	if (o->plan != NULL && cgroup_born_in(cg)) {
		snprintf(err, errlen, "an isolated shell cannot start in a "
		    "cgroup's resident");
		cgroup_free(cg);
		return -ENOTSUP;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		e = errno;
		snprintf(err, errlen, "pipe: %s", strerror(e));
		cgroup_free(cg);
		return -e;
	}
	if (USE_CLONE && stack == NULL) {
		stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED)
			stack = NULL;
	}
	st = (struct start){ .o = o, .cg = cg,
	    .join = cg != NULL && !cgroup_born_in(cg),
	    .resident = cgroup_born_in(cg), .parent = self, .errfd = p[1],
	    .alive = 1 };
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	c = cgroup_fork(cg, clone_child, wait_child, &st);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	if (c < 0) {
		close(p[0]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		cgroup_free(cg);
		return -e;
	}
	do
		n = read(p[0], &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == (ssize_t)sizeof(r)) {
		/* The child is gone (127); child.c reaps it silently. */
		snprintf(err, errlen, "%s %s: %s", step_names[r.step],
		    r.step == S_CHDIR ? o->cwd : r.step == S_IDS ||
		    r.step == S_CTTY || r.step == S_SANDBOX ||
		    r.step >= S_CGROUP ? "" : o->argv[0], strerror(r.err));
		cgroup_free(cg);
		return -r.err;
	}
	*pid = c;
	if (o->limits != NULL)
		cgroup_track(c, o->limits, cg);
	return 0;
}
