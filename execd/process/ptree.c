/*
 * ptree.c -- find a job's processes in /proc and signal them all.
 *
 * This file knows nothing of jobs' pipes or timers; it is given a leader
 * pid, its start time and a mark, and decides which processes belong to
 * that tree (the evidence is listed in ptree.h).  Every signal is one or
 * more rounds: read every /proc/PID/stat, work out the members, signal the
 * ones not yet given this signal, and scan again while a round found new
 * ones.  Members are remembered by pid and start time, so a process
 * adopted by execd after its parent died is still known, and a reused pid
 * is not.  The trees whose SIGKILL is pending live on a list here, so the
 * escalation outlives the job object that asked for it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "child.h"
#include "ptree.h"

#define STAT_MAX	1024		/* one /proc/PID/stat line */
#define ENV_CHUNK	65536
#define ENV_MAX		(4 << 20)	/* environ bytes read at most */

struct proc {				/* one line of /proc/PID/stat */
	pid_t			pid, ppid, pgid, sid;
	unsigned long long	start;
	char			state;
	bool			in;		/* a member, this round */
};

struct member {				/* a process seen in the tree */
	pid_t			pid;
	unsigned long long	start;
	int			sig;		/* the last signal it got */
};

struct tree {
	struct ptree_id	 id;
	struct member	*m;		/* sorted by pid */
	size_t		 n, cap;
	struct loop	*loop;
	uint64_t	 t_kill;
	struct tree	*next;
};

static struct tree	*pending;	/* SIGTERM sent, SIGKILL to come */

static int	stat_read(pid_t, struct proc *);
static size_t	scan(struct proc **);
static int	by_pid(const void *, const void *);
static struct member *seen(struct tree *, pid_t, unsigned long long);
static void	remember(struct tree *, const struct proc *, int);
static bool	marked(pid_t, const char *);
static void	members(struct tree *, struct proc *, size_t);
static int	signal_tree(struct tree *, int);
static void	on_grace(struct loop *, uint64_t, void *);
static struct tree *pending_find(const struct ptree_id *);
static void	pending_drop(struct tree *);

/* See ptree.h. */
void
ptree_mark_new(struct ptree_id *id)
{
	unsigned char r[8];
	struct timespec ts;

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* No entropy yet: unique enough with the time and pid. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(r); i++)
			r[i] = (unsigned char)((ts.tv_nsec >> (i * 4)) ^
			    (getpid() >> (i % 3 * 8)) ^ (ts.tv_sec >> i));
	}
	snprintf(id->mark, sizeof(id->mark), "%s=", PTREE_MARK_VAR);
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(id->mark + strlen(id->mark), 3, "%02x", r[i]);
}

/* See ptree.h. */
void
ptree_id_set(struct ptree_id *id, pid_t leader)
{
	struct proc p;

	id->leader = leader;
	id->start = stat_read(leader, &p) == 0 ? p.start : 0;
}

/* Parse /proc/PID/stat (fields after the command name). 0 or -errno. */
static int
stat_read(pid_t pid, struct proc *p)
{
	char path[64], buf[STAT_MAX], *s, *end;
	long v[20];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The name may hold spaces and parentheses: the last ')' ends it. */
	if ((s = strrchr(buf, ')')) == NULL || s[1] != ' ' || s[2] == '\0')
		return -EIO;
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->state = s[2];
	s += 3;
	/* ppid pgrp session ... starttime: fields 4 to 22 of proc(5). */
	for (int i = 1; i < 20; i++) {
		v[i] = 0;
		if (i == 19) {
			p->start = strtoull(s, &end, 10);
		} else
			v[i] = strtol(s, &end, 10);
		if (end == s)
			return -EIO;
		s = end;
	}
	p->ppid = (pid_t)v[1];
	p->pgid = (pid_t)v[2];
	p->sid = (pid_t)v[3];
	return 0;
}

/* qsort and bsearch order of struct proc: by pid. */
static int
by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct proc *)a)->pid, y = ((const struct
	    proc *)b)->pid;

	return x < y ? -1 : x > y;
}

/* Every process now, sorted by pid, into *out (caller frees); count. */
static size_t
scan(struct proc **out)
{
	struct proc *p = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	char *end;
	long pid;

	*out = NULL;
	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end != '\0' || pid <= 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			p = xreallocarray(p, cap, sizeof(*p));
		}
		if (stat_read((pid_t)pid, &p[n]) == 0)
			n++;
	}
	closedir(d);
	if (n > 1)
		qsort(p, n, sizeof(*p), by_pid);
	*out = p;
	return n;
}

/* The member record for pid with this start time, or NULL. */
static struct member *
seen(struct tree *t, pid_t pid, unsigned long long start)
{
	size_t lo = 0, hi = t->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->m[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Another start time: the pid was reused, the member is gone. */
	if (lo < t->n && t->m[lo].pid == pid && t->m[lo].start == start)
		return &t->m[lo];
	return NULL;
}

/* Record p as a member that got sig (up to PTREE_MAX members). */
static void
remember(struct tree *t, const struct proc *p, int sig)
{
	struct member *m;
	size_t i;

	if ((m = seen(t, p->pid, p->start)) != NULL) {
		m->sig = sig;
		return;
	}
	for (i = 0; i < t->n && t->m[i].pid < p->pid; i++)
		;
	if (i < t->n && t->m[i].pid == p->pid) {
		t->m[i] = (struct member){ p->pid, p->start, sig };
		return;
	}
	if (t->n >= PTREE_MAX)
		return;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->m = xreallocarray(t->m, t->cap, sizeof(*t->m));
	}
	memmove(t->m + i + 1, t->m + i, (t->n - i) * sizeof(*t->m));
	t->m[i] = (struct member){ p->pid, p->start, sig };
	t->n++;
}

/*
 * Whether pid's environment holds the entry mark ("NAME=value"), read in
 * chunks with the tail of each carried over, so the entry may straddle
 * two reads.
 */
static bool
marked(pid_t pid, const char *mark)
{
	char path[64], *buf, *hit;
	size_t mlen = strlen(mark), have = 1, total = 0;
	bool found = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	buf = xmalloc(ENV_CHUNK + mlen + 2);
	buf[0] = '\0';		/* the first entry starts after a "NUL" */
	while (!found && total < ENV_MAX) {
		n = read(fd, buf + have, ENV_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		total += (size_t)n;
		for (char *s = buf; (hit = memmem(s, have - (size_t)(s -
		    buf), mark, mlen)) != NULL; s = hit + 1) {
			if (hit > buf && hit[-1] == '\0' &&
			    (size_t)(hit - buf) + mlen < have &&
			    hit[mlen] == '\0') {
				found = true;
				break;
			}
		}
		/* Keep what could be the start of the entry. */
		if (have > mlen + 1) {
			memmove(buf, buf + have - (mlen + 1), mlen + 1);
			have = mlen + 1;
		}
	}
	free(buf);
	close(fd);
	return found;
}

/* Mark p[i].in for every member of the tree (evidence in ptree.h). */
static void
members(struct tree *t, struct proc *p, size_t n)
{
	pid_t self = getpid(), lead = t->id.leader;
	struct proc key, *par;
	bool ours = false, more;

	/* 1. Is the session id still the job's? */
	for (size_t i = 0; i < n && !ours; i++) {
		if (p[i].pid == lead && (t->id.start == 0 ||
		    p[i].start == t->id.start))
			ours = true;
		else if (p[i].sid == lead && p[i].pid != lead &&
		    seen(t, p[i].pid, p[i].start) != NULL)
			ours = true;
	}
	/* 2. Direct evidence: seen before, in the session, marked. */
	for (size_t i = 0; i < n; i++) {
		p[i].in = false;
		if (p[i].pid == self || p[i].pid == 1)
			continue;
		if (seen(t, p[i].pid, p[i].start) != NULL ||
		    (ours && p[i].sid == lead))
			p[i].in = true;
		else if (p[i].ppid == self && t->id.mark[0] != '\0' &&
		    p[i].state != 'Z' && !child_known(p[i].pid) &&
		    marked(p[i].pid, t->id.mark))
			p[i].in = true;
	}
	/* 3. Children of members, to any depth. */
	do {
		more = false;
		for (size_t i = 0; i < n; i++) {
			if (p[i].in || p[i].pid == self || p[i].ppid <= 1)
				continue;
			key.pid = p[i].ppid;
			par = bsearch(&key, p, n, sizeof(*p), by_pid);
			if (par != NULL && par->in) {
				p[i].in = true;
				more = true;
			}
		}
	} while (more);
}

/*
 * Send sig to every member not given it yet, in rounds until one finds
 * nothing new.  The first scan comes before any signal, so that every
 * parent link is seen before a death hands children over to execd.  The
 * group then gets the signal in one call (a process forking in a loop
 * cannot outrun it), and its members count as signalled.  SIGTERM is
 * followed by SIGCONT.  The number of processes or groups signalled.
 */
static int
signal_tree(struct tree *t, int sig)
{
	struct proc *p, lp;
	struct member *m;
	size_t n;
	int count = 0, fresh, round;
	bool group = false;

	for (round = 0; round < PTREE_ROUNDS; round++) {
		n = scan(&p);
		members(t, p, n);
		if (round == 0 && stat_read(t->id.leader, &lp) == 0 &&
		    (t->id.start == 0 || lp.start == t->id.start) &&
		    kill(-t->id.leader, sig) == 0) {
			group = true;
			count++;
			if (sig == SIGTERM)
				(void)kill(-t->id.leader, SIGCONT);
		}
		fresh = 0;
		for (size_t i = 0; i < n; i++) {
			if (!p[i].in)
				continue;
			m = seen(t, p[i].pid, p[i].start);
			if (m != NULL && m->sig == sig)
				continue;
			if (group && round == 0 && p[i].pgid == t->id.leader) {
				remember(t, &p[i], sig);
				continue;
			}
			remember(t, &p[i], sig);
			if (p[i].state == 'Z' || kill(p[i].pid, sig) < 0)
				continue;
			if (sig == SIGTERM)
				(void)kill(p[i].pid, SIGCONT);
			fresh++;
		}
		free(p);
		count += fresh;
		if (fresh == 0)
			break;
	}
	if (round == PTREE_ROUNDS)
		log_warnx("job=%ld: still finding new processes after %d "
		    "rounds", (long)t->id.leader, PTREE_ROUNDS);
	return count;
}

/* The tree of this leader (pid and start time) in its grace, or NULL. */
static struct tree *
pending_find(const struct ptree_id *id)
{
	for (struct tree *t = pending; t != NULL; t = t->next)
		if (t->id.leader == id->leader && t->id.start == id->start)
			return t;
	return NULL;
}

/* Unlink t from the pending list, cancel its timer, free it. */
static void
pending_drop(struct tree *t)
{
	for (struct tree **pp = &pending; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	if (t->t_kill != 0)
		loop_timer_cancel(t->loop, t->t_kill);
	free(t->m);
	free(t);
}

/* See ptree.h. */
int
ptree_stop(struct loop *loop, const struct ptree_id *id, unsigned grace_ms)
{
	struct tree *t;
	int n;

	if (pending_find(id) != NULL)
		return 0;
	t = xcalloc(1, sizeof(*t));
	t->id = *id;
	t->loop = loop;
	if ((n = signal_tree(t, SIGTERM)) == 0) {
		free(t->m);
		free(t);
		return 0;
	}
	log_debug("job=%ld: SIGTERM to %d processes or groups",
	    (long)id->leader, n);
	t->t_kill = loop_timer_add(loop, grace_ms, on_grace, t);
	t->next = pending;
	pending = t;
	return n;
}

/* The grace period is over: SIGKILL whatever is left. */
static void
on_grace(struct loop *l, uint64_t tid, void *arg)
{
	struct tree *t = arg;
	int n;

	t->t_kill = 0;
	if ((n = signal_tree(t, SIGKILL)) > 0)
		log_debug("job=%ld: SIGKILL to %d processes or groups after "
		    "the grace period", (long)t->id.leader, n);
	pending_drop(t);
}

/* See ptree.h. */
int
ptree_kill(const struct ptree_id *id)
{
	struct tree tmp, *t;
	int n;

	if ((t = pending_find(id)) != NULL) {
		n = signal_tree(t, SIGKILL);
		pending_drop(t);
		return n;
	}
	memset(&tmp, 0, sizeof(tmp));
	tmp.id = *id;
	n = signal_tree(&tmp, SIGKILL);
	free(tmp.m);
	return n;
}

/* See ptree.h. */
void
ptree_shutdown(void)
{
	while (pending != NULL) {
		(void)signal_tree(pending, SIGKILL);
		pending_drop(pending);
	}
}
