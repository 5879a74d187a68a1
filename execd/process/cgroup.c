/*
 * cgroup.c -- a cgroup per job where execd may make one, and the record
 * of each job's limits by its leader's pid (see cgroup.h).
 *
 * cgroup v2: execd's own cgroup (from /proc/self/cgroup) must offer the
 * memory and pids controllers and be writable, as when a container is
 * given its own cgroup namespace.  A cgroup with processes in it cannot
 * hand controllers to children ("no internal processes"), so execd first
 * moves itself into a leaf, execd.self, then enables the controllers and
 * makes execd-PID beside it, whose children are the jobs.  cgroup v1:
 * execd-PID under execd's cgroup in both the memory and the pids
 * hierarchy (mounted at /sys/fs/cgroup/memory and /sys/fs/cgroup/pids),
 * and each job one directory in each.
 *
 * A job's cgroup outlives its leader as long as something the job left
 * running (a server started in the background) is in it; it is removed
 * when it is empty, tried again whenever a cgroup is made or released,
 * and every job still running is killed at shutdown.  Directories of an
 * execd that died (execd-PID with no such process) are removed at start.
 *
 * With v1, a job's child is forked by a resident, a thread of execd that
 * already waits in the job's cgroup (see struct resident), so that no
 * move into it is on the request's path.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "cgroup.h"

#define ROOT		"/sys/fs/cgroup"
#define MAXDIRS		2		/* v1: memory and pids */
#define KILL_ROUNDS	16		/* a forking job is killed in rounds */
#define READY		4		/* empty cgroups kept made */
/*
 * How long after a job starts (or ends) the cgroups are tidied: making
 * and removing them is kernel work on the loop (and in the kernel's
 * workers) that would delay the answer of a short job still running.
 */
#define TIDY_MS		10

struct resident;

struct cgroup {
	char		 dir[MAXDIRS][PATH_MAX];
	int		 ndirs;
	int		 procs[MAXDIRS];	/* cgroup.procs, for a child */
	char		 pids[32];	/* the job's pids.max */
	struct resident	*held;		/* the resident in it, for the fork */
	char		 wmem[32];	/* the limits written ("": unknown) */
	char		 wpids[32];
};

/*
 * The residents (v1): threads of execd that wait inside the cgroups the
 * next jobs will get, so that a child one of them forks is born there.
 * Moving a task into a cgroup makes the kernel wait for an RCU grace
 * period when the system has been quiet (5 to 7 ms on a small virtual
 * machine; tens of microseconds when another move came just before),
 * and holds the cgroup lock meanwhile.  A child that joins pays that
 * while execd waits for it; a resident pays it instead, after the job
 * has started, when it moves on into the next cgroup.  There are two, so
 * that a second job that comes while the first resident moves finds the
 * other one waiting.
 *
 * While a resident is in a job's cgroup it is one of the cgroup's
 * tasks: the job's pids.max is one higher until it has left, and
 * kill_all passes over execd's own pid.  Its memory is not the job's (a
 * process's pages are charged to the cgroup of its leader, the main
 * thread), and the job's OOM killer looks only at the leaders of the
 * cgroup's processes, so never at execd.
 *
 * A resident also loads the seccomp filter for itself before its first
 * fork (spawn.c), so that its children are born under it.  A filter
 * cannot be taken off again: when the policy is read again the residents
 * retire and spare ones take their place (cgroup_renew).  The spares are
 * made at start with the others, and no thread is made later, because
 * the filter protects execd's threads by their ids (sandbox.c): a thread
 * made after a child's filter was built could be signalled by that
 * child, and a signal to a thread's id reaches the whole process.  Once
 * the spares are used up, children join their cgroups themselves and
 * load the filter (which knows every thread) on their own.  A retired
 * resident ends only once every job it forked is over, because a child's
 * PR_SET_PDEATHSIG is tied to the thread that forked it.  States change
 * under res_mu; the loop hands over work (R_MOVE, R_RUN) and waits for a
 * fork on the resident's own condition variable, so that a job wakes its
 * resident and no other, and a resident tells the loop it has moved
 * through res_efd.
 */
#define NRES		2		/* residents at work */
#define NSLOTS		4		/* with spares for one renewal (each
					   thread costs ~32 KiB of RSS); a
					   retired one holds its slot */

enum rstate {
	R_OFF,		/* no thread, or a move failed: children join */
	R_HOME,		/* in execd's own cgroup, idle */
	R_MOVE,		/* moving into cg */
	R_IN,		/* in cg, waiting for a job */
	R_RUN,		/* running fn in cg for the loop, which waits */
	R_LEAVE,	/* fn done: moving on into cg (NULL: home) */
};

struct resident {
	pthread_t	 t;
	bool		 started;
	bool		 spare;		/* made at start, not at work yet */
	bool		 retired;	/* never used again; ends when live is 0 */
	bool		 quit;		/* told to end */
	int		 live;		/* jobs it forked that are tracked */
	enum rstate	 state;
	struct cgroup	*cg;		/* where it is (R_IN) or goes */
	struct cgroup	 left;		/* R_LEAVE: the job's, to settle */
	int		 moverr;	/* R_OFF: why the move failed */
	pid_t		(*fn)(void *);
	void		*arg;
	pid_t		 ret;
	int		 err;
	pthread_cond_t	 cv;		/* its state changed; under res_mu */
};

static struct resident	 res[NSLOTS];
static pthread_mutex_t	 res_mu = PTHREAD_MUTEX_INITIALIZER;
static int		 res_efd = -1;
static bool		 res_quit;

/* A job by its leader's pid. */
struct rec {
	pid_t		 pid;
	struct limits	 l;
	struct cgroup	*cg;		/* NULL: rlimits only */
	struct rec	*next;
};

static enum cgroup_mode	 mode;
static char		 base[MAXDIRS][PATH_MAX];	/* execd-PID dirs */
static int		 nbase;
static char		 home[MAXDIRS][PATH_MAX];	/* execd's own */
static unsigned long	 seq;
static struct rec	*recs;
static struct cgroup	*pending;	/* left running by a job: to remove */
static size_t		 npending, cappending;
static struct cgroup	*ready[READY];	/* made, empty, never used */
static int		 nready;
static struct loop	*L;
static char		 last_mem[32], last_pids[32];	/* the last job's */
static uint64_t		 t_tidy;		/* refill and remove, soon */

static int	put(const char *, const char *, const char *);
static int	get(const char *, const char *, char *, size_t);
static uint64_t	event(const char *, const char *, const char *);
static int	own_path(const char *, char *, size_t);
static void	sweep(const char *);
static int	kill_all(const struct cgroup *);
static bool	remove_cg(const struct cgroup *);
static void	retry_pending(void);
static void	keep(const struct cgroup *);
static int	try_v2(char *, size_t);
static int	try_v1(char *, size_t);
static struct cgroup *make(void);
static void	tidy(struct loop *, uint64_t, void *);
static void	tidy_soon(void);
static int	enter(const struct cgroup *);
static void	*resident(void *);
static void	resident_start(void);
static void	resident_end(struct resident *);
static void	resident_arm(void);
static bool	resident_moving(void);
static int	write_limits(struct cgroup *, const char *, const char *,
		    bool);
static void	prewrite(void);
static void	resident_done(struct loop *, int, void *, int, void *);
static void	resident_stop(void);

/* Write text to dir/file.  0 or -errno. */
static int
put(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, e;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	e = n < 0 ? errno : 0;
	close(fd);
	return n < 0 ? -e : 0;
}

/* Read dir/file (a small one) into buf.  Bytes read, or -errno. */
static int
get(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, e;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	e = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return (int)n;
}

/* The number after "name " on a line of dir/file; 0 when absent. */
static uint64_t
event(const char *dir, const char *file, const char *name)
{
	char buf[1024], *p = buf;
	size_t n = strlen(name);

	if (get(dir, file, buf, sizeof(buf)) < 0)
		return 0;
	while (p != NULL && *p != '\0') {
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return 0;
}

/*
 * execd's path in the hierarchy holding ctrl ("" for v2's "0::" line),
 * from /proc/self/cgroup.  0 or -ENOENT.
 */
static int
own_path(const char *ctrl, char *out, size_t len)
{
	char line[1024], *c, *p, *tok, *save;
	FILE *f;
	int rc = -ENOENT;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return -ENOENT;
	while (rc < 0 && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((c = strchr(line, ':')) == NULL ||
		    (p = strchr(c + 1, ':')) == NULL)
			continue;
		*p++ = '\0';
		c++;
		if (ctrl[0] == '\0') {
			if (strcmp(line, "0") == 0 && c[0] == '\0')
				rc = 0;
		} else {
			for (tok = strtok_r(c, ",", &save); tok != NULL;
			    tok = strtok_r(NULL, ",", &save))
				if (strcmp(tok, ctrl) == 0)
					rc = 0;
		}
		if (rc == 0 && (size_t)snprintf(out, len, "%s",
		    strcmp(p, "/") == 0 ? "" : p) >= len)
			rc = -ENAMETOOLONG;
	}
	fclose(f);
	return rc;
}

/* Remove the execd-PID directories under parent whose execd is gone. */
static void
sweep(const char *parent)
{
	char path[PATH_MAX], sub[PATH_MAX], proc[64];
	struct dirent *d, *j;
	DIR *dp, *jp;
	long pid;

	if ((dp = opendir(parent)) == NULL)
		return;
	while ((d = readdir(dp)) != NULL) {
		if (sscanf(d->d_name, "execd-%ld", &pid) != 1 || pid <= 0)
			continue;
		snprintf(proc, sizeof(proc), "/proc/%ld", pid);
		if (access(proc, F_OK) == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", parent,
		    d->d_name) >= sizeof(path))
			continue;
		if ((jp = opendir(path)) != NULL) {
			while ((j = readdir(jp)) != NULL)
				if (strncmp(j->d_name, "job-", 4) == 0 &&
				    (size_t)snprintf(sub, sizeof(sub), "%s/%s",
				    path, j->d_name) < sizeof(sub))
					(void)rmdir(sub);
			closedir(jp);
		}
		if (rmdir(path) == 0)
			log_debug("cgroup: removed %s, left by an execd that "
			    "is gone", path);
	}
	closedir(dp);
}

/* v2, delegated: see the file's comment.  0, or -errno with why. */
static int
try_v2(char *why, size_t whylen)
{
	char own[PATH_MAX], dir[PATH_MAX], leaf[PATH_MAX], buf[256];
	int rc;

	if (own_path("", own, sizeof(own)) < 0 ||
	    access(ROOT "/cgroup.controllers", R_OK) < 0)
		return -ENOENT;
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", ROOT, own) >=
	    sizeof(dir))
		return -ENAMETOOLONG;
	if (get(dir, "cgroup.controllers", buf, sizeof(buf)) < 0 ||
	    strstr(buf, "memory") == NULL || strstr(buf, "pids") == NULL) {
		snprintf(why, whylen, "cgroup v2 at %.160s lacks the memory or "
		    "pids controller", dir);
		return -ENOENT;
	}
	if (access(dir, W_OK) < 0) {
		snprintf(why, whylen, "cgroup v2 at %.160s is not writable",
		    dir);
		return -EACCES;
	}
	sweep(dir);
	if (put(dir, "cgroup.subtree_control", "+memory +pids") < 0) {
		/* Processes in dir: execd moves into a leaf first. */
		if ((size_t)snprintf(leaf, sizeof(leaf), "%s/execd.self",
		    dir) >= sizeof(leaf) ||
		    (mkdir(leaf, 0755) < 0 && errno != EEXIST) ||
		    put(leaf, "cgroup.procs", "0") < 0 ||
		    put(dir, "cgroup.subtree_control", "+memory +pids") < 0) {
			snprintf(why, whylen, "cgroup v2 at %.160s: cannot "
			    "enable memory and pids for children", dir);
			return -EACCES;
		}
	}
	if ((size_t)snprintf(base[0], sizeof(base[0]), "%s/execd-%ld", dir,
	    (long)getpid()) >= sizeof(base[0]))
		return -ENAMETOOLONG;
	if ((mkdir(base[0], 0755) < 0 && errno != EEXIST) ||
	    put(base[0], "cgroup.subtree_control", "+memory +pids") < 0) {
		rc = -errno;
		snprintf(why, whylen, "cgroup v2: %.160s: %s", base[0],
		    strerror(errno));
		(void)rmdir(base[0]);
		return rc;
	}
	nbase = 1;
	snprintf(why, whylen, "cgroup v2, jobs under %.160s", base[0]);
	return 0;
}

/* v1 memory and pids: see the file's comment.  0, or -errno with why. */
static int
try_v1(char *why, size_t whylen)
{
	static const char *const ctrl[MAXDIRS] = { "memory", "pids" };
	char own[PATH_MAX], dir[PATH_MAX];
	int e;

	for (int i = 0; i < MAXDIRS; i++) {
		if (own_path(ctrl[i], own, sizeof(own)) < 0) {
			snprintf(why, whylen, "no cgroup v1 %s hierarchy",
			    ctrl[i]);
			goto fail;
		}
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s%s", ROOT,
		    ctrl[i], own) >= sizeof(dir) ||
		    (size_t)snprintf(base[i], sizeof(base[i]), "%s/execd-%ld",
		    dir, (long)getpid()) >= sizeof(base[i]))
			goto fail;
		memcpy(home[i], dir, sizeof(home[i]));
		sweep(dir);
		if (mkdir(base[i], 0755) < 0 && errno != EEXIST) {
			e = errno;
			snprintf(why, whylen, "cgroup v1 %.160s: %s", base[i],
			    strerror(e));
			goto fail;
		}
		nbase = i + 1;
	}
	snprintf(why, whylen, "cgroup v1 (memory, pids), jobs under %.100s and "
	    "%.100s", base[0], base[1]);
	return 0;
fail:
	for (int i = 0; i < nbase; i++)
		(void)rmdir(base[i]);
	nbase = 0;
	return -ENOENT;
}

/* Decide how limits are enforced; see cgroup.h. */
enum cgroup_mode
cgroup_init(struct loop *loop, bool off, char *why, size_t whylen)
{
	char v2why[256] = "";

	L = loop;
	mode = CGROUP_NONE;
	nbase = 0;
	if (off) {
		snprintf(why, whylen, "rlimits (cgroups off)");
		return mode;
	}
	if (try_v2(v2why, sizeof(v2why)) == 0) {
		snprintf(why, whylen, "%s", v2why);
		return mode = CGROUP_V2;
	}
	if (try_v1(why, whylen) == 0) {
		mode = CGROUP_V1;
		resident_start();
		return mode;
	}
	snprintf(why + strlen(why), whylen - strlen(why), "%s%s: rlimits "
	    "only (processes: per user, and not for root)",
	    v2why[0] ? "; " : "", v2why);
	return mode;
}

enum cgroup_mode
cgroup_mode(void)
{
	return mode;
}

/* The mechanism's name; see cgroup.h. */
const char *
cgroup_mode_name(enum cgroup_mode m)
{
	return m == CGROUP_V2 ? "cgroup v2" : m == CGROUP_V1 ? "cgroup v1" :
	    "rlimits";
}

/* Memory or processes: a cgroup's; see cgroup.h. */
bool
cgroup_wanted(const struct limits *l)
{
	return mode != CGROUP_NONE && l != NULL &&
	    (l->set & (LIMITS_F_MEMORY | LIMITS_F_PROCESSES)) != 0;
}

/*
 * A new empty cgroup, open for a child to join (its limits not yet
 * written), or NULL with errno set.
 */
static struct cgroup *
make(void)
{
	struct cgroup *cg = xcalloc(1, sizeof(*cg));
	char path[PATH_MAX];
	int i, e;

	cg->procs[0] = cg->procs[1] = -1;
	snprintf(cg->wmem, sizeof(cg->wmem), "max");
	snprintf(cg->wpids, sizeof(cg->wpids), "max");
	seq++;
	for (i = 0; i < nbase; i++) {
		if ((size_t)snprintf(cg->dir[i], sizeof(cg->dir[i]),
		    "%s/job-%lu", base[i], seq) >= sizeof(cg->dir[i]) ||
		    (size_t)snprintf(path, sizeof(path), "%s/cgroup.procs",
		    cg->dir[i]) >= sizeof(path)) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		if (mkdir(cg->dir[i], 0755) < 0)
			goto fail;
		cg->ndirs = i + 1;
		if ((cg->procs[i] = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			goto fail;
	}
	return cg;
fail:
	e = errno;
	cgroup_free(cg);
	errno = e;
	return NULL;
}

/* Soon, with the loop idle: remove what jobs left, make spare cgroups. */
static void
tidy_soon(void)
{
	if (L != NULL && t_tidy == 0)
		t_tidy = loop_timer_add(L, TIDY_MS, tidy, NULL);
}

static void
tidy(struct loop *l, uint64_t id, void *arg)
{
	struct cgroup *cg;

	t_tidy = 0;
	/*
	 * A move holds the kernel's cgroup lock through its grace period,
	 * which mkdir and rmdir wait for: not now, then, but when the
	 * resident is done (resident_done).
	 */
	if (resident_moving())
		return;
	retry_pending();
	for (int round = 0; round < 2; round++) {
		while (nready < READY && mode != CGROUP_NONE &&
		    (cg = make()) != NULL)
			ready[nready++] = cg;
		if (round == 0)
			resident_arm();		/* takes some */
	}
	prewrite();
}

/*
 * On any thread: move the calling thread into cg (v1 only), or back into
 * execd's own cgroups when cg is NULL.  0 or -errno.
 */
static int
enter(const struct cgroup *cg)
{
	char tid[24];
	int rc;

	snprintf(tid, sizeof(tid), "%ld", (long)syscall(SYS_gettid));
	for (int i = 0; i < nbase; i++)
		if ((rc = put(cg != NULL ? cg->dir[i] : home[i], "tasks",
		    tid)) < 0)
			return rc;
	return 0;
}

/* A resident thread; see the comment at struct resident. */
static void *
resident(void *arg)
{
	struct resident *r = arg;
	struct cgroup *to;
	bool leaving;
	pid_t ret;
	int rc, err;

	pthread_mutex_lock(&res_mu);
	for (;;) {
		while (r->state != R_MOVE && r->state != R_RUN && !res_quit &&
		    !r->quit)
			pthread_cond_wait(&r->cv, &res_mu);
		if (res_quit || r->quit)
			break;
		if ((leaving = r->state == R_RUN)) {
			pthread_mutex_unlock(&res_mu);
			ret = r->fn(r->arg);
			err = errno;
			pthread_mutex_lock(&res_mu);
			r->ret = ret;
			r->err = err;
			r->state = R_LEAVE;
			pthread_cond_signal(&r->cv);	/* the loop */
		}
		to = r->cg;
		pthread_mutex_unlock(&res_mu);
		if ((rc = enter(to)) < 0 && to != NULL)
			(void)enter(NULL);
		/* Out of the job's cgroup: its own pids.max now. */
		if (leaving && strcmp(r->left.pids, "max") != 0)
			(void)put(r->left.dir[r->left.ndirs - 1], "pids.max",
			    r->left.pids);
		pthread_mutex_lock(&res_mu);
		r->moverr = -rc;
		r->state = rc < 0 ? R_OFF : to != NULL ? R_IN : R_HOME;
		/* Fails only with the counter full: the loop knows. */
		(void)eventfd_write(res_efd, 1);
	}
	pthread_mutex_unlock(&res_mu);
	return NULL;
}

/*
 * With cgroup v1, at start: NRES residents, at home, and spares for
 * renewals (see struct resident).
 */
static void
resident_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int n = 0;

	if (res_efd < 0) {
		if ((res_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
			return;
		loop_add_fd(L, res_efd, LOOP_READ, resident_done, NULL);
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < NSLOTS; i++) {
		res[i] = (struct resident){ .state = R_HOME,
		    .spare = n >= NRES };
		pthread_cond_init(&res[i].cv, NULL);
		if (pthread_create(&res[i].t, &attr, resident, &res[i]) != 0) {
			pthread_cond_destroy(&res[i].cv);
			break;
		}
		res[i].started = true;
		n++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (n < NRES)
		log_warnx("cgroup: %d of %d threads to fork jobs in their "
		    "cgroups started", n, NRES);
}

/*
 * End a retired resident whose jobs are all over, once it is idle (a
 * move holds it; resident_done comes back).  Loop thread.
 */
static void
resident_end(struct resident *r)
{
	struct cgroup *cg;

	pthread_mutex_lock(&res_mu);
	if (!r->started || !r->retired || r->live > 0 ||
	    r->state == R_MOVE || r->state == R_LEAVE || r->state == R_RUN) {
		pthread_mutex_unlock(&res_mu);
		return;
	}
	r->quit = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&res_mu);
	pthread_join(r->t, NULL);
	pthread_cond_destroy(&r->cv);
	cg = r->cg;
	*r = (struct resident){ .state = R_OFF };
	if (cg != NULL)
		cgroup_free(cg);	/* once the thread is out of it */
}

/* Retire the residents and put spares to work; see cgroup.h. */
void
cgroup_renew(void)
{
	int n = 0;

	if (mode != CGROUP_V1 || res_efd < 0)
		return;
	pthread_mutex_lock(&res_mu);
	for (int i = 0; i < NSLOTS; i++)
		if (res[i].started && !res[i].spare)
			res[i].retired = true;
	for (int i = 0; i < NSLOTS && n < NRES; i++)
		if (res[i].started && res[i].spare) {
			res[i].spare = false;	/* at work from now on */
			n++;
		}
	pthread_mutex_unlock(&res_mu);
	for (int i = 0; i < NSLOTS; i++)
		resident_end(&res[i]);
	if (n < NRES)
		log_warnx("cgroup: %d spare threads left to fork jobs in "
		    "their cgroups; %s", n, n > 0 ? "fewer jobs are born in "
		    "theirs" : "jobs with limits join theirs themselves");
}

/* With the loop idle: send idle residents into ready cgroups. */
static void
resident_arm(void)
{
	pthread_mutex_lock(&res_mu);
	for (int i = 0; i < NSLOTS && nready > 0; i++)
		if (res[i].state == R_HOME && res[i].cg == NULL &&
		    !res[i].retired && !res[i].spare) {
			res[i].cg = ready[--nready];
			res[i].state = R_MOVE;
			pthread_cond_signal(&res[i].cv);
		}
	pthread_mutex_unlock(&res_mu);
}

/* True while a resident moves (and holds the kernel's cgroup lock). */
static bool
resident_moving(void)
{
	bool moving = false;

	pthread_mutex_lock(&res_mu);
	for (int i = 0; i < NSLOTS; i++)
		if (res[i].state == R_MOVE || res[i].state == R_LEAVE)
			moving = true;
	pthread_mutex_unlock(&res_mu);
	return moving;
}

/* A resident has moved: one whose move failed is off for good. */
static void
resident_done(struct loop *l, int fd, void *z, int revents, void *arg)
{
	struct cgroup *lost[NSLOTS];
	int err[NSLOTS] = { 0 }, nlost = 0;
	eventfd_t v;

	(void)eventfd_read(fd, &v);
	pthread_mutex_lock(&res_mu);
	for (int i = 0; i < NSLOTS; i++) {
		if (res[i].state == R_OFF && res[i].cg != NULL) {
			err[nlost] = res[i].moverr;
			lost[nlost++] = res[i].cg;
			res[i].cg = NULL;
		}
	}
	pthread_mutex_unlock(&res_mu);
	for (int i = 0; i < nlost; i++) {
		log_warnx("cgroup: a thread of execd cannot move into %s: %s; "
		    "children join their cgroups themselves", lost[i]->dir[0],
		    strerror(err[i]));
		cgroup_free(lost[i]);
	}
	for (int i = 0; i < NSLOTS; i++)
		resident_end(&res[i]);	/* retired, idle now, its jobs over */
	tidy_soon();		/* what the job left; the next cgroup */
}

/* At shutdown, every job gone: the residents end, their cgroups go. */
static void
resident_stop(void)
{
	if (res_efd < 0)
		return;
	pthread_mutex_lock(&res_mu);
	res_quit = true;
	for (int i = 0; i < NSLOTS; i++)
		if (res[i].started)
			pthread_cond_signal(&res[i].cv);
	pthread_mutex_unlock(&res_mu);
	for (int i = 0; i < NSLOTS; i++) {
		if (res[i].started) {
			pthread_join(res[i].t, NULL);
			pthread_cond_destroy(&res[i].cv);
		}
		res[i].started = false;
		res[i].state = R_OFF;
		/* The thread takes a moment to leave: kept, then removed. */
		if (res[i].cg != NULL)
			cgroup_free(res[i].cg);
		res[i].cg = NULL;
	}
	close(res_efd);
	res_efd = -1;
	res_quit = false;
}

/* fn where its child is born in cg; see cgroup.h. */
pid_t
cgroup_fork(struct cgroup *cg, pid_t (*fn)(void *), pid_t (*wait)(void *),
    void *arg)
{
	struct resident *r = cg != NULL ? cg->held : NULL;
	pid_t ret;

	if (r == NULL)
		return fn(arg);
	pthread_mutex_lock(&res_mu);
	r->fn = fn;
	r->arg = arg;
	memcpy(&r->left, cg, sizeof(r->left));
	r->cg = nready > 0 ? ready[--nready] : NULL;	/* where next */
	r->state = R_RUN;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&res_mu);
	if ((ret = wait(arg)) >= 0)
		return ret;
	/* No child: fn's errno, once it has returned. */
	pthread_mutex_lock(&res_mu);
	while (r->state == R_RUN)
		pthread_cond_wait(&r->cv, &res_mu);
	ret = r->ret;
	errno = r->err;
	pthread_mutex_unlock(&res_mu);
	return ret;
}

/* The child is born in cg; see cgroup.h. */
bool
cgroup_born_in(const struct cgroup *cg)
{
	return cg != NULL && cg->held != NULL;
}

/*
 * Give cg the memory and process limits mem and pids ("max": none), one
 * more process when a resident is in it (it counts until it has left),
 * writing only what differs from what cg has.  With v1, memsw must stay
 * at least the memory limit: it is raised first, then set to it.  0 or
 * -errno.
 */
static int
write_limits(struct cgroup *cg, const char *mem, const char *pids,
    bool resident)
{
	char p[32];
	bool none = strcmp(mem, "max") == 0;
	uint64_t n;
	int rc;

	snprintf(p, sizeof(p), "%s", pids);
	if (resident && strcmp(pids, "max") != 0 &&
	    (n = strtoull(pids, NULL, 10)) < UINT64_MAX)
		snprintf(p, sizeof(p), "%" PRIu64, n + 1);
	if (strcmp(cg->wmem, mem) != 0) {
		cg->wmem[0] = '\0';
		if (mode == CGROUP_V2) {
			if ((rc = put(cg->dir[0], "memory.max", mem)) < 0)
				return rc;
			/* Without swap the limit is the memory's, if allowed. */
			(void)put(cg->dir[0], "memory.swap.max",
			    none ? "max" : "0");
		} else {
			(void)put(cg->dir[0], "memory.memsw.limit_in_bytes",
			    "-1");
			if ((rc = put(cg->dir[0], "memory.limit_in_bytes",
			    none ? "-1" : mem)) < 0)
				return rc;
			if (!none)
				(void)put(cg->dir[0],
				    "memory.memsw.limit_in_bytes", mem);
		}
		snprintf(cg->wmem, sizeof(cg->wmem), "%s", mem);
	}
	if (strcmp(cg->wpids, p) != 0) {
		cg->wpids[0] = '\0';
		if ((rc = put(cg->dir[cg->ndirs - 1], "pids.max", p)) < 0)
			return rc;
		snprintf(cg->wpids, sizeof(cg->wpids), "%s", p);
	}
	return 0;
}

/*
 * With the loop idle: the last job's limits into the cgroups made ahead
 * and those residents wait in, so that the next job with the same ones
 * (the policy's defaults, most often) writes nothing.
 */
static void
prewrite(void)
{
	if (last_mem[0] == '\0')
		return;
	for (int i = 0; i < nready; i++)
		(void)write_limits(ready[i], last_mem, last_pids, false);
	pthread_mutex_lock(&res_mu);
	for (int i = 0; i < NSLOTS; i++)
		if (res[i].state == R_IN && !res[i].retired)
			(void)write_limits(res[i].cg, last_mem, last_pids,
			    true);
	pthread_mutex_unlock(&res_mu);
}

static int	new_cg(const struct limits *, bool, struct cgroup **, char *,
		    size_t);

/* A job's cgroup; see cgroup.h. */
int
cgroup_new(const struct limits *l, struct cgroup **out, char *err,
    size_t errlen)
{
	return new_cg(l, true, out, err, errlen);
}

/* A cgroup for a process moved in by pid; see cgroup.h. */
int
cgroup_new_empty(const struct limits *l, struct cgroup **out, char *err,
    size_t errlen)
{
	return new_cg(l, false, out, err, errlen);
}

/* A job's cgroup: a resident's when resident and there is one. */
static int
new_cg(const struct limits *l, bool resident, struct cgroup **out,
    char *err, size_t errlen)
{
	struct cgroup *cg = NULL;
	char mem[32] = "max", pids[32] = "max";
	int rc = 0;

	/* Best the one the resident is in, then one made ahead. */
	pthread_mutex_lock(&res_mu);
	for (int i = 0; i < NSLOTS && cg == NULL && resident; i++)
		if (res[i].state == R_IN && !res[i].retired) {
			cg = res[i].cg;
			cg->held = &res[i];
		}
	pthread_mutex_unlock(&res_mu);
	if (cg == NULL && nready > 0)
		cg = ready[--nready];
	if (cg == NULL && (cg = make()) == NULL) {
		rc = -errno;
		snprintf(err, errlen, "cgroup under %s: %s", base[0],
		    strerror(-rc));
		return rc;
	}
	tidy_soon();
	if ((l->set & LIMITS_F_MEMORY) && l->memory != UINT64_MAX)
		snprintf(mem, sizeof(mem), "%" PRIu64, l->memory);
	if ((l->set & LIMITS_F_PROCESSES) && l->processes != UINT64_MAX)
		snprintf(pids, sizeof(pids), "%" PRIu64, l->processes);
	memcpy(cg->pids, pids, sizeof(cg->pids));
	memcpy(last_mem, mem, sizeof(last_mem));
	memcpy(last_pids, pids, sizeof(last_pids));
	if ((rc = write_limits(cg, mem, pids, cg->held != NULL)) < 0) {
		snprintf(err, errlen, "cgroup %s: %s", cg->dir[0],
		    strerror(-rc));
		cgroup_free(cg);
		return rc;
	}
	*out = cg;
	return 0;
}

/* In the child: join; see cgroup.h. */
int
cgroup_join(const struct cgroup *cg)
{
	for (int i = 0; i < cg->ndirs; i++)
		if (write(cg->procs[i], "0", 1) != 1)
			return -1;
	return 0;
}

/* Move process pid into cg, from execd; see cgroup.h. */
int
cgroup_move(const struct cgroup *cg, pid_t pid)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%ld", (long)pid);

	for (int i = 0; i < cg->ndirs; i++)
		if (write(cg->procs[i], buf, (size_t)n) != n)
			return -errno;
	return 0;
}

/* SIGKILL to every process in cg, in rounds while it forks.  Sent. */
static int
kill_all(const struct cgroup *cg)
{
	char buf[8192], *p, *end;
	const char *dir = cg->dir[cg->ndirs - 1];	/* v1: pids */
	int sent = 0, n;
	long pid, self = (long)getpid();

	if (mode == CGROUP_V2 && put(dir, "cgroup.kill", "1") == 0)
		return 1;
	for (int round = 0; round < KILL_ROUNDS; round++) {
		if ((n = get(dir, "cgroup.procs", buf, sizeof(buf))) <= 0)
			break;
		for (p = buf; *p != '\0'; p = end) {
			pid = strtol(p, &end, 10);
			if (end == p)
				break;
			/* execd itself, while the resident is there */
			if (pid > 0 && pid != self &&
			    kill((pid_t)pid, SIGKILL) == 0)
				sent++;
		}
	}
	return sent;
}

/* Remove cg's directories; true when none is left. */
static bool
remove_cg(const struct cgroup *cg)
{
	bool all = true;

	for (int i = 0; i < cg->ndirs; i++)
		if (cg->dir[i][0] != '\0' && rmdir(cg->dir[i]) < 0 &&
		    errno != ENOENT)
			all = false;
	return all;
}

/* Remove cg later: something is still in it. */
static void
keep(const struct cgroup *cg)
{
	if (npending == cappending) {
		cappending = cappending ? cappending * 2 : 8;
		pending = xreallocarray(pending, cappending, sizeof(*pending));
	}
	pending[npending++] = *cg;
}

/* Remove the cgroups that were still busy, where now empty. */
static void
retry_pending(void)
{
	for (size_t i = 0; i < npending; )
		if (remove_cg(&pending[i]))
			pending[i] = pending[--npending];
		else
			i++;
}

/* A cgroup no job took; see cgroup.h. */
void
cgroup_free(struct cgroup *cg)
{
	bool back;

	if (cg == NULL)
		return;
	/* Taken from a resident, and no child forked: it stays there. */
	pthread_mutex_lock(&res_mu);
	if ((back = cg->held != NULL && cg->held->cg == cg &&
	    cg->held->state == R_IN))
		cg->held = NULL;
	pthread_mutex_unlock(&res_mu);
	if (back)
		return;
	for (int i = 0; i < MAXDIRS; i++)
		if (cg->procs[i] >= 0) {
			close(cg->procs[i]);
			cg->procs[i] = -1;
		}
	if (cg->ndirs > 0)
		(void)kill_all(cg);
	if (!remove_cg(cg))
		keep(cg);		/* the resident is leaving it */
	free(cg);
}

/* Track a job; see cgroup.h. */
void
cgroup_track(pid_t pid, const struct limits *l, struct cgroup *cg)
{
	struct rec *r = xcalloc(1, sizeof(*r));

	r->pid = pid;
	r->l = *l;
	r->cg = cg;
	if (cg != NULL && cg->held != NULL) {
		pthread_mutex_lock(&res_mu);
		cg->held->live++;	/* it must outlive the job's leader */
		pthread_mutex_unlock(&res_mu);
	}
	if (cg != NULL)
		for (int i = 0; i < MAXDIRS; i++) {
			if (cg->procs[i] >= 0)
				close(cg->procs[i]);
			cg->procs[i] = -1;
		}
	r->next = recs;
	recs = r;
}

static struct rec *
find(pid_t pid)
{
	for (struct rec *r = recs; r != NULL; r = r->next)
		if (r->pid == pid)
			return r;
	return NULL;
}

/* Why a job ended; see cgroup.h. */
bool
cgroup_why(pid_t pid, int st, char *buf, size_t len)
{
	struct rec *r = find(pid);
	char v[32];
	int sig = 0;

	buf[0] = '\0';
	if (r == NULL || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
		return false;
	if (WIFSIGNALED(st))
		sig = WTERMSIG(st);
	else if (WEXITSTATUS(st) > 128)
		sig = WEXITSTATUS(st) - 128;	/* a shell's child */
	if (r->cg != NULL && (r->l.set & LIMITS_F_MEMORY) &&
	    event(r->cg->dir[0], mode == CGROUP_V2 ? "memory.events" :
	    "memory.oom_control", "oom_kill") > 0) {
		limits_format(&r->l, LIMITS_F_MEMORY, v, sizeof(v));
		snprintf(buf, len, "memory limit of %s reached: killed by the "
		    "kernel", v);
	} else if (r->cg == NULL && (r->l.set & LIMITS_F_MEMORY) &&
	    (sig == SIGKILL || sig == SIGSEGV || sig == SIGABRT)) {
		limits_format(&r->l, LIMITS_F_MEMORY, v, sizeof(v));
		snprintf(buf, len, "memory limit of %s reached (probably): "
		    "died of signal %d after memory was refused", v, sig);
	} else if (r->cg != NULL && (r->l.set & LIMITS_F_PROCESSES) &&
	    event(r->cg->dir[r->cg->ndirs - 1], "pids.events", "max") > 0) {
		limits_format(&r->l, LIMITS_F_PROCESSES, v, sizeof(v));
		snprintf(buf, len, "process limit of %s reached", v);
	} else if (sig == SIGXCPU && (r->l.set & LIMITS_F_CPU)) {
		limits_format(&r->l, LIMITS_F_CPU, v, sizeof(v));
		snprintf(buf, len, "CPU time limit of %s reached", v);
	} else if (sig == SIGXFSZ && (r->l.set & LIMITS_F_FILE_SIZE)) {
		limits_format(&r->l, LIMITS_F_FILE_SIZE, v, sizeof(v));
		snprintf(buf, len, "file size limit of %s reached", v);
	}
	return buf[0] != '\0';
}

/* Kill a job's cgroup; see cgroup.h. */
int
cgroup_kill(pid_t pid)
{
	struct rec *r = find(pid);

	return r != NULL && r->cg != NULL ? kill_all(r->cg) : 0;
}

/* The job is over; see cgroup.h. */
void
cgroup_release(pid_t pid)
{
	struct resident *forker;
	struct rec **pp, *r;

	for (pp = &recs; (r = *pp) != NULL; pp = &r->next)
		if (r->pid == pid)
			break;
	if (r == NULL)
		return;
	*pp = r->next;
	if (r->cg != NULL && (forker = r->cg->held) != NULL) {
		pthread_mutex_lock(&res_mu);
		forker->live--;
		pthread_mutex_unlock(&res_mu);
		resident_end(forker);	/* when retired and idle */
	}
	if (r->cg != NULL) {
		keep(r->cg);		/* removed by tidy, once empty */
		tidy_soon();
	}
	free(r->cg);
	free(r);
}

/* Jobs tracked; see cgroup.h. */
size_t
cgroup_count(void)
{
	size_t n = 0;

	for (struct rec *r = recs; r != NULL; r = r->next)
		n++;
	return n;
}

/* Kill and remove everything; see cgroup.h. */
void
cgroup_shutdown(void)
{
	struct rec *r;

	resident_stop();
	while ((r = recs) != NULL) {
		recs = r->next;
		if (r->cg != NULL && (kill_all(r->cg), !remove_cg(r->cg)))
			keep(r->cg);
		free(r->cg);
		free(r);
	}
	while (nready > 0)
		cgroup_free(ready[--nready]);
	/* The loop may be gone already: its timers went with it. */
	L = NULL;
	t_tidy = 0;
	for (size_t i = 0; i < npending; i++)
		(void)kill_all(&pending[i]);
	/* Killed processes take a moment to leave; a second at most. */
	for (int t = 0; t < 100; t++) {
		retry_pending();
		if (npending == 0)
			break;
		usleep(10000);
	}
	free(pending);
	pending = NULL;
	npending = cappending = 0;
	for (int i = 0; i < nbase; i++)
		(void)rmdir(base[i]);
	nbase = 0;
}
