/*
 * t_ptree.c -- unit tests for ptree.c, on real processes.
 *
 * The test process makes itself a child subreaper, as execd is, then
 * starts `bash -c SCRIPT` as a session leader (posix_spawn with
 * POSIX_SPAWN_SETSID) with a mark in its environment.  The script starts
 * sleepers every way a process can leave its parent's group or session,
 * and writes their pids to a file before it says it is ready.  Checks are
 * on those pids (alive or not, zombies counting as gone: we reap what we
 * adopt), with generous deadlines.  Covered: ptree_kill() reaches the
 * group, set -m groups, setsid children, setsid orphans adopted by us and
 * a child of a process whose name holds ") (" (the stat parser); another
 * tree and an unmarked orphan are spared; ptree_stop() sends SIGTERM,
 * then SIGKILL after the grace period to what ignores it, with the loop
 * running and the leader already gone.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../execd/core/loop.h"
#include "../../execd/process/ptree.h"
#include "../t.h"
#include "../t_tmp.h"

#define MAXPIDS		64
#define DEADLINE_MS	8000

extern char	**environ;

struct tree {
	struct ptree_id	 id;
	char		 pidfile[PATH_MAX];
	pid_t		 pids[MAXPIDS];
	int		 npids;
};

static void	 reap_some(void);
static bool	 alive(pid_t);
static int	 count_alive(const struct tree *);
static int	 start(struct tree *, const char *, const char *, bool);
static void	 sleep_ms(long);
static int	 wait_gone(const struct tree *, long);
static bool	 wait_dead(pid_t, long);
static void	 on_stop(struct loop *, uint64_t, void *);

static const char *tree_script =
    "sleep 300 & echo $! >> \"$PIDS\"; "
    "set -m; sleep 300 & echo $! >> \"$PIDS\"; set +m; "
    "setsid sleep 300 & echo $! >> \"$PIDS\"; "
    "(setsid sleep 300 & echo $! >> \"$PIDS\"); "
    "(trap '' TERM; setsid sleep 300 & echo $! >> \"$PIDS\"); "
    /* A process named ") (x" in a session of its own, and its child. */
    "setsid bash -c 'printf \") (x\" > /proc/self/comm; "
    "setsid sleep 300 & echo $! >> \"$PIDS\"; wait' & "
    "echo $! >> \"$PIDS\"; "
    "while [ $(wc -l < \"$PIDS\") -lt 7 ]; do sleep 0.01; done; "
    "echo ready >> \"$PIDS.ready\"; wait";

/* Reap whatever has exited (we adopt orphans, like execd). */
static void
reap_some(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* Running (not a zombie, not gone). */
static bool
alive(pid_t pid)
{
	char path[64], buf[512], *s;
	FILE *f;
	bool r = false;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) != NULL &&
	    (s = strrchr(buf, ')')) != NULL)
		r = s[1] == ' ' && s[2] != 'Z' && s[2] != 'X';
	fclose(f);
	return r;
}

/* How many of the tree's recorded pids still run. */
static int
count_alive(const struct tree *t)
{
	int n = 0;

	for (int i = 0; i < t->npids; i++)
		n += alive(t->pids[i]);
	return n;
}

/* Sleep ms milliseconds. */
static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Start script under bash as a session leader, with mark (or none) in
 * its environment and $PIDS naming t->pidfile; wait until it is ready and
 * read the pids.  0 or -1.
 */
static int
start(struct tree *t, const char *dir, const char *script, bool mark)
{
	posix_spawnattr_t at;
	char *argv[] = { (char *)(uintptr_t)"bash", (char *)(uintptr_t)"-c",
	    (char *)(uintptr_t)script, NULL };
	char **env, pidsvar[PATH_MAX + 8], ready[PATH_MAX + 8];
	size_t n = 0, k = 0;
	pid_t pid;
	FILE *f;
	int rc;

	memset(t, 0, sizeof(*t));
	ptree_mark_new(&t->id);
	snprintf(t->pidfile, sizeof(t->pidfile), "%s/pids-%s", dir,
	    t->id.mark + strlen(PTREE_MARK_VAR) + 1);
	snprintf(pidsvar, sizeof(pidsvar), "PIDS=%s", t->pidfile);
	snprintf(ready, sizeof(ready), "%s.ready", t->pidfile);
	while (environ[n] != NULL)
		n++;
	env = calloc(n + 3, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], PTREE_MARK_VAR "=",
		    strlen(PTREE_MARK_VAR) + 1) != 0)
			env[k++] = environ[i];
	env[k++] = pidsvar;
	if (mark)
		env[k++] = t->id.mark;
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
	rc = posix_spawn(&pid, "/bin/bash", NULL, &at, argv, env);
	posix_spawnattr_destroy(&at);
	free(env);
	if (rc != 0)
		return -1;
	ptree_id_set(&t->id, pid);
	for (int i = 0; i < DEADLINE_MS / 10 && access(ready, F_OK) < 0; i++)
		sleep_ms(10);
	if ((f = fopen(t->pidfile, "re")) == NULL)
		return -1;
	while (t->npids < MAXPIDS && fscanf(f, "%d", &t->pids[t->npids]) == 1)
		t->npids++;
	fclose(f);
	return access(ready, F_OK) == 0 ? 0 : -1;
}

/* Wait (reaping) until no pid of t runs, or the deadline; count left. */
static int
wait_gone(const struct tree *t, long ms)
{
	for (long w = 0; w < ms && count_alive(t) > 0; w += 10) {
		reap_some();
		sleep_ms(10);
	}
	reap_some();
	return count_alive(t);
}

/*
 * Wait (reaping) until pid is dead, or the deadline.  The leader may end
 * a moment after the rest of its tree on a loaded machine.
 */
static bool
wait_dead(pid_t pid, long ms)
{
	for (long w = 0; w < ms && alive(pid); w += 10) {
		reap_some();
		sleep_ms(10);
	}
	reap_some();
	return !alive(pid);
}

/* Everything of a marked tree dies; another tree, an unmarked one, not. */
static void
test_kill(void)
{
	char *d = t_tmpdir();
	struct tree a, b, c;

	T_EQ_INT(start(&a, d, tree_script, true), 0);
	T_EQ_INT(start(&b, d, tree_script, true), 0);
	/* Unmarked: its session members are found, its orphans are not. */
	T_EQ_INT(start(&c, d, tree_script, false), 0);
	T_EQ_INT(a.npids, 7);
	T_EQ_INT(count_alive(&a), 7);
	T_OK(ptree_kill(&a.id) >= 7);
	T_EQ_INT(wait_gone(&a, DEADLINE_MS), 0);
	T_OK(wait_dead(a.id.leader, DEADLINE_MS));
	T_EQ_INT(count_alive(&b), 7);
	T_OK(alive(b.id.leader));
	T_OK(ptree_kill(&b.id) >= 7);
	T_EQ_INT(wait_gone(&b, DEADLINE_MS), 0);
	/* c: the orphans that left the session (2 of them) are not found. */
	T_OK(ptree_kill(&c.id) >= 5);
	sleep_ms(300);
	reap_some();
	T_EQ_INT(count_alive(&c), 2);
	for (int i = 0; i < c.npids; i++)
		if (alive(c.pids[i]))
			kill(c.pids[i], SIGKILL);
	T_EQ_INT(wait_gone(&c, DEADLINE_MS), 0);
	t_tmpdir_free(d);
}

/* Timer: end loop_run(). */
static void
on_stop(struct loop *l, uint64_t id, void *arg)
{
	loop_stop(l);
}

/*
 * ptree_stop: SIGTERM at once (the leader and most die), SIGKILL after
 * the grace period to the one that ignores it, although the leader has
 * been reaped by then.
 */
static void
test_stop(void)
{
	char *d = t_tmpdir();
	struct loop *l = loop_new();
	struct tree a;
	int left;

	T_EQ_INT(start(&a, d, tree_script, true), 0);
	T_OK(ptree_stop(l, &a.id, 300) >= 7);
	/* Stopping it again while the grace runs does nothing more. */
	T_EQ_INT(ptree_stop(l, &a.id, 300), 0);
	left = 0;
	for (int w = 0; w < 2000 && (left = count_alive(&a)) > 1; w += 10) {
		reap_some();
		sleep_ms(10);
	}
	T_EQ_INT(left, 1);		/* the one that traps TERM */
	reap_some();
	T_OK(wait_dead(a.id.leader, DEADLINE_MS));
	loop_timer_add(l, 1000, on_stop, NULL);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(wait_gone(&a, DEADLINE_MS), 0);
	ptree_shutdown();
	loop_free(l);
	t_tmpdir_free(d);
}

/* ptree_shutdown() SIGKILLs a tree whose grace period is still running. */
static void
test_shutdown(void)
{
	char *d = t_tmpdir();
	struct loop *l = loop_new();
	struct tree a;

	T_EQ_INT(start(&a, d, tree_script, true), 0);
	T_OK(ptree_stop(l, &a.id, 60000) >= 7);
	ptree_shutdown();
	T_EQ_INT(wait_gone(&a, DEADLINE_MS), 0);
	loop_free(l);
	t_tmpdir_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "ptree_kill", test_kill },
		{ "ptree_stop", test_stop },
		{ "ptree_shutdown", test_shutdown },
	};

	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	return T_RUN(cases);
}
