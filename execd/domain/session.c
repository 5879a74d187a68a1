/*
 * session.c -- one long-lived bash per session (see session.h for the
 * protocol).  This file owns the shell process, its pipes, the run
 * queue and the registry of the sessions clients opened; HTTP and events
 * are route_session.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../../util/id.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/cgroup.h"
#include "../process/child.h"
#include "../process/envfile.h"
#include "../process/limits.h"
#include "../process/spawn.h"
#include "runtime.h"
#include "session.h"

#define READ_CHUNK	65536

struct srun {
	char			*code;
	char			*cwd;
	unsigned		 timeout_ms;
	session_output_cb	*output;
	session_done_cb		*done;
	void			*arg;
	bool			 forgotten;
	struct srun		*next;
};

struct session {
	struct loop	*loop;
	char		 id[ID_UUID_LEN + 1];	/* as upstream's */
	char		*file;		/* the code of the current run */
	char		*cwd;
	unsigned	 grace_ms;
	struct limits	 limits;	/* of every shell it starts */
	pid_t		 pid;
	int		 in_fd, out_fd, err_fd, st_fd;
	struct buf	 st;		/* status pipe bytes */
	char		 nonce[ID_HEX_LEN + 1];
	struct srun	*runs;		/* head runs when active */
	bool		 active;
	bool		 timed_out;
	uint64_t	 t_timeout, t_kill;
	bool		 envfile;	/* gets EXECD_ENVS (registered) */
	json_t		*applied;	/* its variables the shell has */
	const struct session_how *how;	/* NULL: as every session */
	struct session	*next;		/* in the registry */
};

static struct loop	*reg_loop;
static char		*reg_dir;
static unsigned		 reg_grace_ms;
static struct session	*registry;

static struct session *make(struct loop *, const char *, const char *,
		    unsigned, const struct limits *, bool, char *, size_t,
		    const struct session_how *);
static int	start_shell(struct session *, char *, size_t);
static void	strip_reserved(char **);
static void	stop_shell(struct session *);
static void	next_run(struct session *);
static void	finish_run(struct session *, int, const char *);
static void	on_read(struct loop *, int, void *, int, void *);
static void	on_exit_shell(pid_t, int, void *);
static void	on_timeout(struct loop *, uint64_t, void *);
static void	on_kill(struct loop *, uint64_t, void *);
static int	signal_descendants(pid_t, int);

/* Remember what registered sessions are made with. */
void
session_init(struct loop *loop, const char *dir, unsigned grace_ms)
{
	reg_loop = loop;
	reg_dir = xstrdup(dir);
	reg_grace_ms = grace_ms;
}

/* Every registered session goes, its runs ended. */
void
session_shutdown(void)
{
	struct session *s;

	while ((s = registry) != NULL) {
		registry = s->next;
		session_free(s);
	}
	free(reg_dir);
	reg_dir = NULL;
}

/* A new session, registered. */
struct session *
session_open(const char *cwd, const struct limits *l, char *err,
    size_t errlen)
{
	struct session *s;

	if (reg_dir == NULL) {
		snprintf(err, errlen, "execd is shutting down");
		return NULL;
	}
	if ((s = make(reg_loop, reg_dir, cwd, reg_grace_ms, l, true, err,
	    errlen, NULL)) == NULL)
		return NULL;
	s->next = registry;
	registry = s;
	return s;
}

/* A registered session by id. */
struct session *
session_find(const char *id)
{
	for (struct session *s = registry; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

/* Unregister and free a session by id. */
int
session_close(const char *id)
{
	struct session *s, **pp;

	for (pp = &registry; (s = *pp) != NULL; pp = &s->next) {
		if (strcmp(s->id, id) == 0) {
			*pp = s->next;
			session_free(s);
			return 0;
		}
	}
	return -ENOENT;
}

/* Unregister and free every session; the module stays started. */
void
session_close_all(void)
{
	struct session *s;

	while ((s = registry) != NULL) {
		registry = s->next;
		session_free(s);
	}
}

/* A new session with its shell running; see session.h. */
struct session *
session_new(struct loop *loop, const char *dir, const char *cwd,
    unsigned grace_ms, const struct limits *l, char *err, size_t errlen)
{
	return make(loop, dir, cwd, grace_ms, l, false, err, errlen, NULL);
}

/* An isolated session's; see session.h. */
struct session *
session_new_how(struct loop *loop, const char *dir, const char *cwd,
    unsigned grace_ms, const struct session_how *how, char *err,
    size_t errlen)
{
	struct session *s = make(loop, dir, cwd, grace_ms, how->limits, false,
	    err, errlen, how);

	return s;
}

pid_t
session_pid(const struct session *s)
{
	return s->pid;
}

/* A session, with EXECD_ENVS's variables when envfile. */
static struct session *
make(struct loop *loop, const char *dir, const char *cwd, unsigned grace_ms,
    const struct limits *l, bool envfile, char *err, size_t errlen,
    const struct session_how *how)
{
	struct session *s = xcalloc(1, sizeof(*s));

	s->how = how;
	s->loop = loop;
	s->envfile = envfile;
	id_uuid(s->id);
	s->file = xasprintf("%s/session-%s.sh", dir, s->id);
	s->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	s->grace_ms = grace_ms;
	if (l != NULL)
		s->limits = *l;
	s->in_fd = s->out_fd = s->err_fd = s->st_fd = -1;
	buf_init_max(&s->st, 4096);	/* status lines are short */
	if (start_shell(s, err, errlen) < 0) {
		json_decref(s->applied);
		free(s->file);
		free(s->cwd);
		free(s);
		return NULL;
	}
	return s;
}

/*
 * Drop execd's configuration names (EXECD_ENVS, JUPYTER_TOKEN, ...:
 * runtime_env_reserved) from env, in place, as upstream 1.1 leaves them
 * out of a session's environment.
 */
static void
strip_reserved(char **env)
{
	size_t j = 0, m;
	char name[256];

	for (size_t i = 0; env[i] != NULL; i++) {
		m = strcspn(env[i], "=");
		if (m < sizeof(name)) {
			memcpy(name, env[i], m);
			name[m] = '\0';
			if (runtime_env_reserved(name)) {
				free(env[i]);
				continue;
			}
		}
		env[j++] = env[i];
	}
	env[j] = NULL;
}

/* Start bash: stdin from us, stdout, stderr and fd 3 to us. */
static int
start_shell(struct session *s, char *err, size_t errlen)
{
	/*
	 * SIGINT during a run ends the sourced code (status 130) and keeps
	 * the shell: that is how interrupts and timeouts stop a run, even
	 * one of the shell's own loops.  The INT trap returns from the
	 * innermost function or the sourced file; the DEBUG trap (inherited
	 * by functions through functrace) keeps returning, level by level,
	 * until the sourced file is left.  Between runs (a timeout's signal
	 * can come late) there is nothing to return from: the trap does
	 * nothing.
	 */
	static const char init[] = "shopt -s expand_aliases\n"
	    "set -o functrace\n"
	    "trap '[[ ${#BASH_SOURCE[@]} -gt 0 ]] && "
	    "{ __execd_int=1; return 130; }' INT\n"
	    "trap '[[ -n $__execd_int && ${#BASH_SOURCE[@]} -gt 0 ]] && "
	    "return 130' DEBUG\n";
	char *argv[] = { (char *)(uintptr_t)"/bin/bash",
	    (char *)(uintptr_t)"--noprofile", (char *)(uintptr_t)"--norc",
	    NULL };
	struct spawn_opts so = { .argv = argv, .cwd = s->cwd,
	    .has_fd3 = 1, .limits = &s->limits };
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	int st[2] = { -1, -1 }, rc;
	char **env = NULL;

	if (s->how != NULL) {
		so.plan = s->how->plan;
		so.set_ids = s->how->set_ids;
		so.keep_ids = s->how->keep_ids;
		so.uid = s->how->uid;
		so.gid = s->how->gid;
		so.envp = s->how->envp;
	}
	if (s->envfile) {
		/* The file as it is now; later changes come with runs. */
		json_decref(s->applied);
		s->applied = envfile_overlay(NULL);
		so.envp = env = envfile_env(s->applied, NULL);
		strip_reserved(env);
	}
	if ((rc = spawn_pipe(in, 1)) < 0 || (rc = spawn_pipe(out, 0)) < 0 ||
	    (rc = spawn_pipe(er, 0)) < 0 || (rc = spawn_pipe(st, 0)) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(-rc));
		goto fail;
	}
	so.stdin_fd = in[0];
	so.stdout_fd = out[1];
	so.stderr_fd = er[1];
	so.fd3 = st[1];
	rc = spawn_start(&so, &s->pid, err, errlen);
	envfile_env_free(env);
	if (rc < 0)
		goto fail;
	close(in[0]);
	close(out[1]);
	close(er[1]);
	close(st[1]);
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = er[0];
	s->st_fd = st[0];
	loop_add_fd(s->loop, s->out_fd, LOOP_READ, on_read, s);
	loop_add_fd(s->loop, s->err_fd, LOOP_READ, on_read, s);
	loop_add_fd(s->loop, s->st_fd, LOOP_READ, on_read, s);
	child_add(s->pid, s->pid, on_exit_shell, s);
	if (write(s->in_fd, init, sizeof(init) - 1) < 0)
		log_warn("session=%s init", s->id);
	log_info("session=%s pid=%ld shell started", s->id, (long)s->pid);
	return 0;
fail:
	spawn_pipe_close(in);
	spawn_pipe_close(out);
	spawn_pipe_close(er);
	spawn_pipe_close(st);
	return rc;
}

/*
 * Stop watching and close one of our pipe ends.  A pipe at EOF stays
 * readable, so it must not stay on the loop.
 */
static void
close_fd(struct session *s, int *fd)
{
	if (*fd < 0)
		return;
	loop_del(s->loop, *fd, NULL);
	close(*fd);
	*fd = -1;
}

/* Close our ends and forget the shell (it is dead or being killed). */
static void
stop_shell(struct session *s)
{
	if (s->in_fd >= 0)	/* never on the loop */
		close(s->in_fd);
	s->in_fd = -1;
	close_fd(s, &s->out_fd);
	close_fd(s, &s->err_fd);
	close_fd(s, &s->st_fd);
	buf_reset(&s->st);
	s->pid = 0;
}

const char *
session_id(const struct session *s)
{
	return s->id;
}

/*
 * Export to the shell, in the run file f, the variables of EXECD_ENVS
 * that changed (or came) since the shell last got them, so that a line
 * an SDK appends there (setEnv) is seen by the session's next run; the
 * variables the session set itself stay as they are unless the file
 * changes them.
 */
static void
export_changes(struct session *s, FILE *f)
{
	json_t *now = envfile_overlay(NULL), *was;
	const char *k;
	struct buf b;
	json_t *v;

	buf_init(&b);
	json_object_foreach(now, k, v) {
		if (runtime_env_reserved(k))
			continue;
		was = json_object_get(s->applied, k);
		if (was != NULL && json_string_length(was) ==
		    json_string_length(v) && memcmp(json_string_value(was),
		    json_string_value(v), json_string_length(v)) == 0)
			continue;
		buf_addf(&b, "export %s=", k);
		buf_add_shquoted(&b, json_string_value(v));
		buf_add(&b, "\n", 1);
	}
	if (b.len > 0)
		fwrite(b.p, 1, b.len, f);
	buf_reset(&b);
	json_decref(s->applied);
	s->applied = now;
}

/* Queue a run; see session.h. */
int
session_run(struct session *s, const char *code, const char *cwd,
    unsigned timeout_ms, session_output_cb *output, session_done_cb *done,
    void *arg)
{
	struct srun *r = xcalloc(1, sizeof(*r)), **pp;

	r->code = xstrdup(code);
	r->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	r->timeout_ms = timeout_ms;
	r->output = output;
	r->done = done;
	r->arg = arg;
	for (pp = &s->runs; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = r;
	next_run(s);
	return 0;
}

/* Stop reporting the run with this arg. */
void
session_run_forget(struct session *s, void *arg)
{
	for (struct srun *r = s->runs; r != NULL; r = r->next)
		if (r->arg == arg)
			r->forgotten = true;
}

/*
 * Start the run at the head of the queue: its code goes to a file, and
 * the shell sources it with stdin from /dev/null and fd 3 closed, then
 * writes "<nonce> <status>" on fd 3.
 */
static void
next_run(struct session *s)
{
	struct srun *r = s->runs;
	struct buf b;
	FILE *f;
	ssize_t n;

	if (s->active || r == NULL || s->pid == 0)
		return;
	s->active = true;
	s->timed_out = false;
	id_hex(s->nonce);
	if ((f = fopen(s->file, "we")) == NULL) {
		finish_run(s, 1, "cannot write the run's code");
		return;
	}
	if (s->how != NULL)	/* a shell of another uid reads it */
		(void)fchmod(fileno(f), 0644);
	if (s->envfile)
		export_changes(s, f);
	if (r->cwd != NULL) {
		buf_init(&b);
		buf_adds(&b, "cd -- ");
		buf_add_shquoted(&b, r->cwd);
		fprintf(f, "%s || return\n", b.p);
		buf_reset(&b);
	}
	fprintf(f, "%s\n", r->code);
	fclose(f);
	buf_init(&b);
	buf_adds(&b, "{ . ");
	buf_add_shquoted(&b, s->file);
	buf_addf(&b, "; } 3>&- </dev/null; __execd_s=$?; __execd_int=; "
	    "printf '%%s %%d\\n' %s \"$__execd_s\" >&3\n", s->nonce);
	n = write(s->in_fd, b.p, b.len);
	buf_reset(&b);
	if (n < 0) {
		finish_run(s, 1, "cannot talk to the session's shell");
		return;
	}
	if (r->timeout_ms > 0)
		s->t_timeout = loop_timer_add(s->loop, r->timeout_ms,
		    on_timeout, s);
}

/* Take what the output pipes hold now, for the current run. */
static void
drain(struct session *s)
{
	on_read(s->loop, s->out_fd, NULL, LOOP_READ, s);
	on_read(s->loop, s->err_fd, NULL, LOOP_READ, s);
}

/* The current run ended: report it, then start the next. */
static void
finish_run(struct session *s, int status, const char *reset)
{
	struct srun *r = s->runs;
	bool timed_out = s->timed_out;

	loop_timer_cancel(s->loop, s->t_timeout);
	loop_timer_cancel(s->loop, s->t_kill);
	s->t_timeout = s->t_kill = 0;
	s->active = false;
	if (r == NULL)
		return;
	s->runs = r->next;
	if (!r->forgotten)
		r->done(status, timed_out, reset != NULL ? reset : "", r->arg);
	free(r->code);
	free(r->cwd);
	free(r);
	next_run(s);
}

/* Output, or the status line that ends a run. */
static void
on_read(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct session *s = arg;
	char buf[READ_CHUNK], *nl, want[40];
	struct srun *r = s->active ? s->runs : NULL;
	ssize_t n;
	int which = fd == s->out_fd ? 1 : 2;

	if (fd < 0)
		return;
	if (fd != s->st_fd) {
		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			if (r != NULL && !r->forgotten)
				r->output(which, buf, (size_t)n, r->arg);
			if (n < (ssize_t)sizeof(buf))
				break;
		}
		if (n == 0)	/* the shell closed it (exec 1>&-) */
			close_fd(s, which == 1 ? &s->out_fd : &s->err_fd);
		return;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		buf_add(&s->st, buf, (size_t)n);
	if (n == 0)		/* only when the shell is gone */
		close_fd(s, &s->st_fd);
	snprintf(want, sizeof(want), "%s ", s->nonce);
	while ((nl = s->st.len > 0 ? memchr(s->st.p, '\n', s->st.len) :
	    NULL) != NULL) {
		*nl = '\0';
		if (s->active && strncmp(s->st.p, want, strlen(want)) == 0) {
			int status = atoi(s->st.p + strlen(want));

			buf_drain(&s->st, (size_t)(nl - s->st.p) + 1);
			drain(s);
			finish_run(s, status, NULL);
			continue;
		}
		buf_drain(&s->st, (size_t)(nl - s->st.p) + 1);
	}
}

/* The shell ended: end the run, start a fresh shell for the next. */
static void
on_exit_shell(pid_t pid, int st, void *arg)
{
	struct session *s = arg;
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	char err[256], note[256], why[160];

	drain(s);
	stop_shell(s);
	if (cgroup_why(pid, st, why, sizeof(why)))
		snprintf(note, sizeof(note), "the session's shell ended: %s; "
		    "it was restarted with fresh state", why);
	else
		snprintf(note, sizeof(note), "the session's shell %s %d; it "
		    "was restarted with fresh state", WIFEXITED(st) ?
		    "exited with" : "was killed by signal", WIFEXITED(st) ?
		    WEXITSTATUS(st) : WTERMSIG(st));
	log_info("session=%s %s", s->id, note);
	if (start_shell(s, err, sizeof(err)) < 0)
		log_warnx("session=%s: %s", s->id, err);
	if (s->active)
		finish_run(s, status, note);
}

/* Descendants of pid (not pid), signalled depth first; how many. */
static int
signal_descendants(pid_t pid, int sig)
{
	char path[64], buf[4096], *p, *end;
	FILE *f;
	size_t len;
	long c;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children",
	    (long)pid, (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (p = buf; (c = strtol(p, &end, 10)) > 0 && end != p; p = end) {
		n += signal_descendants((pid_t)c, sig);
		if (kill((pid_t)c, sig) == 0)
			n++;
	}
	return n;
}

/*
 * The run's time is up: interrupt it (what it started, and the shell,
 * whose INT trap ends the sourced code), and after the grace period kill
 * what is left; if the shell itself does not come back, the session is
 * reset.
 */
static void
on_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct session *s = arg;

	s->t_timeout = 0;
	s->timed_out = true;
	session_interrupt(s);
	s->t_kill = loop_timer_add(l, s->grace_ms, on_kill, s);
}

static void
on_kill(struct loop *l, uint64_t id, void *arg)
{
	struct session *s = arg;

	s->t_kill = 0;
	if (signal_descendants(s->pid, SIGKILL) == 0 && s->pid > 0)
		kill(-s->pid, SIGKILL);
}

/*
 * SIGINT to what the current run started; -ESRCH when nothing runs.  The
 * shell first: a child that died of our signal before the shell had its
 * own would let the shell reap it and go on to the run's next command.
 * Signalled while it waits, bash runs its INT trap once the child is gone.
 */
int
session_interrupt(struct session *s)
{
	if (!s->active || s->pid == 0)
		return -ESRCH;
	kill(s->pid, SIGINT);
	signal_descendants(s->pid, SIGINT);
	return 0;
}

/* Kill the shell's group; pending runs end with a note. */
void
session_free(struct session *s)
{
	struct srun *r;

	if (s == NULL)
		return;
	if (s->pid > 0) {
		kill(-s->pid, SIGKILL);
		(void)cgroup_kill(s->pid);	/* what left the group too */
		child_forget(s->pid);
	}
	stop_shell(s);
	loop_timer_cancel(s->loop, s->t_timeout);
	loop_timer_cancel(s->loop, s->t_kill);
	while ((r = s->runs) != NULL) {
		s->runs = r->next;
		if (!r->forgotten)
			r->done(137, false, "the session was deleted", r->arg);
		free(r->code);
		free(r->cwd);
		free(r);
	}
	unlink(s->file);
	free(s->file);
	free(s->cwd);
	json_decref(s->applied);
	free(s);
}
