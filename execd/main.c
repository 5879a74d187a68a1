/*
 * main.c -- start-up, the loop, and an orderly shutdown.
 *
 * Every module that keeps state keeps it in its own file and is started
 * here, by name, in the one order main() lists (tmux's server_start):
 * options, logging, signals into a signalfd, subreaper, the HTTP server,
 * the worker threads and ZeroMQ's, the sandbox, the runtime directories,
 * then the modules of the domain, lowest first, and the loop.  Shutdown
 * on SIGTERM or SIGINT (Taler's order): stop accepting and end every open
 * stream with a final event; end sessions, terminals and kernels; SIGTERM
 * to every child, SIGKILL after the grace period; keep looping until
 * streams are flushed and children reaped (or a deadline passes).  Then
 * everything stops in the reverse order: requests first, the domain, the
 * libraries' contexts, the loop; exit 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#ifdef EXECD_STATIC
#include <nss.h>
#endif
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "../fs/fs_atomic.h"
#include "../fs/fs_ops.h"
#include "../kernelproto/kp_kernelspec.h"
#include "api/idem.h"
#include "api/execd.h"
#include "api/jupyter/jupyter.h"
#include "api/mcp/mcp.h"
#include "api/opensandbox/route.h"
#include "config/conf.h"
#include "config/policy.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/work.h"
#include "core/xmalloc.h"
#include "domain/ckpt.h"
#include "domain/rungate.h"
#include "domain/computer.h"
#include "domain/service.h"
#include "domain/command.h"
#include "domain/context.h"
#include "domain/lifecycle.h"
#include "domain/pty.h"
#include "domain/run.h"
#include "domain/runtime.h"
#include "domain/isolated.h"
#include "domain/session.h"
#include "process/cgroup.h"
#include "process/child.h"
#include "process/envfile.h"
#include "process/sandbox.h"
#include "process/spawn.h"
#include "transport/evstream.h"
#include "transport/http.h"

/* After the grace period, how long to wait for the last flushes. */
#define FINAL_WAIT_MS	2000
#define WORKERS		2	/* threads for blocking file work */

static struct execd	 app;		/* what route handlers are handed */
static bool		 stopping;
static int		 sigfd = -1;
static struct sandbox	*sandbox;	/* every child enters it */
#define CHILD_OOM_ADJ	500	/* the OOM killer takes children first */
static struct spawn_user defuser;	/* --user, for spawn.c */
static void		*zctx;
static struct kernel_conf kconf;
static char		*cmd_dir;	/* output files, session code */
static char		*ckpt_dir;	/* the default checkpoint store */
static char		*kernel_dir;	/* the default user's kernels' files */
static struct conf	*live;		/* app.conf, which SIGHUP changes */
static struct limits	 hook_limits;	/* lifecycle hooks': commands' */
static int		 exit_status;	/* 1: preStart failed */

static void	on_signal(struct loop *, int, void *, int, void *);
static void	begin_shutdown(void);
static void	kill_late(struct loop *, uint64_t, void *);
static void	stuck_signal(int, void *);
static void	give_up(struct loop *, uint64_t, void *);
static void	check_done(struct loop *, void *);
static void	raise_fd_limit(void);
static int	setup_signals(void);
static void	print_routes(void);
static struct http_route *all_routes(size_t *);
static void	setup_jupyter(const struct conf *, struct http_conf *);
static int	print_kernels(void);
static void	announce(const struct conf *, unsigned);
static int	setup_dirs(struct conf *);
static void	setup_checkpoints(struct conf *);
static void	setup_contexts(const struct conf *);
static void	context_limits(const char *, struct limits *, void *);
static void	setup_sandbox(const struct conf *);
static int	setup_nss(void);
static void	reload_policy(void);
static void	start_hooks(const struct conf *);
static void	pre_start_done(int, const char *, void *);
static void	hooks_failed(const char *);

/*
 * --print-config: what the isolation configuration sets that is no
 * option (its upper_root, upper_max_bytes and keep_capabilities are in
 * the options printed above), as comments.
 */
/* s on one comment line: control characters as '?'. */
static void
put_flat(const char *s)
{
	for (; *s != '\0'; s++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void
print_iso_config(const struct conf *c)
{
	if (c->iso_config == NULL)
		return;
	printf("\n# From the isolation configuration ");
	put_flat(c->iso_config);
	printf(":\n");
	if (c->iso.has_allowed) {
		printf("#   allowed_writable = [");
		for (size_t i = 0; i < c->iso.nallowed; i++) {
			printf("%s\"", i > 0 ? ", " : "");
			put_flat(c->iso.allowed[i]);
			putchar('"');
		}
		printf("]\n");
	} else {
		printf("#   allowed_writable = [\"/workspace\", \"/mnt\", "
		    "\"/media\", \"/data\"] (the default)\n");
	}
	if (c->iso.has_diff_max)
		printf("#   diff_max_bytes = %llu\n", c->iso.diff_max);
	for (size_t i = 0; i < c->iso.nwarn; i++) {
		printf("#   not applied: ");
		put_flat(c->iso.warn[i]);
		putchar('\n');
	}
}

int
main(int argc, char **argv)
{
	struct conf conf;
	struct http_conf hc;
	struct http_route *routes;
	size_t nroutes;
	char err[256];
	unsigned nstale = 0;
	int rc;

	if (setup_nss() < 0)
		return 1;
	if ((rc = conf_parse(&conf, argc, argv, err, sizeof(err))) != 0) {
		conf_reset(&conf);	/* what it read before the error */
		if (rc > 0)
			return 0;
		fprintf(stderr, "execd: %s\n", err);
		return 2;
	}
	if (conf.print_routes) {
		print_routes();
		return 0;
	}
	if (conf.print_kernels)
		return print_kernels();
	if (conf.print_config) {
		policy_print(&conf, stdout);
		print_iso_config(&conf);
		conf_reset(&conf);
		return 0;
	}
	log_init(conf.log_level);
	for (size_t i = 0; i < conf.iso.nwarn; i++)
		log_warnx("isolation config: %s", conf.iso.warn[i]);
	if (conf.ignored_from > 0)
		log_warnx("ignoring %d argument%s after the options, from "
		    "'%s' on (as upstream execd does)", argc - conf.ignored_from,
		    argc - conf.ignored_from > 1 ? "s" : "",
		    argv[conf.ignored_from]);
	app.conf = live = &conf;
	computer_set_display(conf.display);	/* before any worker */
	/* Before any thread: it changes execd's environment. */
	if (lifecycle_load(err, sizeof(err)) < 0) {
		log_warnx("lifecycle hooks: %s", err);
		conf_reset(&conf);
		return 1;
	}
	raise_fd_limit();
	if (setup_signals() < 0)
		fatal("signals");
	/* Orphans of our children come to us, and we reap them. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_warn("cannot become a child subreaper");
	app.loop = loop_new();
	if (conf.busy_poll_us > 0 &&
	    loop_busy_poll(app.loop, conf.busy_poll_us) == 0)
		log_debug("one CPU: no busy polling");
	hc = (struct http_conf){ .addr = conf.addr, .port = conf.port,
	    .token = conf.token, .max_body = conf.max_body,
	    .conn_timeout = conf.conn_timeout, .max_conns = conf.max_conns,
	    .max_conns_per_ip = conf.max_conns_per_ip,
	    .stream_cap = conf.stream_cap, .max_upload = conf.max_upload,
	    .header_timeout = conf.header_timeout,
	    .body_timeout = conf.body_timeout,
	    .body_min_rate = conf.body_min_rate,
	    .max_half_open = conf.max_half_open,
	    .body_memory = conf.body_memory, .work_timeout = conf.fs_timeout };
	routes = all_routes(&nroutes);
	if ((rc = http_new(app.loop, &hc, routes, nroutes, &app,
	    &app.http, err, sizeof(err))) < 0)
		fatalx("%s", err);
	jupyter_start();
	announce(&conf, http_port(app.http));
	/* --runtime-init: nothing but probes until POST /internal/init. */
	runtime_start(conf.runtime_init);
	envfile_set_wrap(runtime_env_over);	/* the binding's variables */
	http_hold(app.http, conf.runtime_init);
	setup_jupyter(&conf, &hc);
	conf_forget_token(&conf);	/* http keeps a digest only */
	if ((rc = work_init(app.loop, WORKERS)) < 0)
		fatalx("cannot start the worker threads: %s", strerror(-rc));
	evstream_start(app.loop);	/* streams, before anything opens one */
	/* ZeroMQ starts its threads with the first socket: now. */
	if ((zctx = zmq_ctx_new()) == NULL)
		fatal("zmq_ctx_new");
	zmq_close(zmq_socket(zctx, ZMQ_PAIR));
	/* After every thread of execd, before any child. */
	setup_sandbox(&conf);
	if (setup_dirs(&conf) < 0)
		fatalx("cannot prepare the runtime directories");
	/* Upload temporaries are recorded there; a crash's are removed. */
	if (fs_atomic_journal(conf.runtime_dir, &nstale, err,
	    sizeof(err)) < 0)
		log_warnx("%s", err);
	else if (nstale > 0)
		log_info("removed %u upload temporaries left by a crash",
		    nstale);
	/* The base sample for the first CPU percentage of GET /metrics. */
	if (metrics_read(&metrics_src_system, &app.msample, err,
	    sizeof(err)) < 0)
		log_warnx("metrics: %s", err);
	/* The domain, each module over the ones before it. */
	command_init(app.loop, cmd_dir, conf.grace_ms);
	service_start(app.loop, &conf);
	command_retain(conf.keep_commands, conf.keep_commands_size);
	session_init(app.loop, cmd_dir, conf.grace_ms);
	isolated_init(app.loop, conf.iso_upper_root != NULL ?
	    conf.iso_upper_root : ISOLATED_UPPER_ROOT, cmd_dir, conf.grace_ms);
	isolated_set_upper_max(conf.iso_upper_max);
	isolated_set_limits(&conf.limits[LIMITS_SESSION]);
	isolated_set_allowed(conf.iso.has_allowed ?
	    (const char *const *)conf.iso.allowed : NULL, conf.iso.nallowed);
	if (conf.iso.has_diff_max)
		isolated_set_diff_max(conf.iso.diff_max);
	run_init(cmd_dir);
	idem_init(conf.idem_window_s, conf.idem_keys, conf.stream_cap);
	setup_checkpoints(&conf);
	pty_init(app.loop);
	setup_contexts(&conf);
	start_hooks(&conf);

	loop_add_fd(app.loop, sigfd, LOOP_READ, on_signal, NULL);
	{
		sigset_t stop;

		sigemptyset(&stop);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGINT);
		loop_watchdog_signals(app.loop, &stop, stuck_signal, NULL);
	}
	loop_on_before_poll(app.loop, check_done, NULL);
	if ((rc = loop_run(app.loop)) < 0)
		fatalx("event loop: %s", strerror(-rc));

	/*
	 * Requests first: a job on a worker answers one, and a stream reads
	 * from the domain.  Then the domain, in the reverse of its start.
	 */
	work_shutdown();
	http_free(app.http);
	http_free(app.jupyter_http);
	free(routes);
	jupyter_shutdown();
	mcp_shutdown();
	service_shutdown();
	context_shutdown();
	idem_shutdown();
	ckpt_shutdown();
	rungate_shutdown();
	lifecycle_shutdown();
	computer_close();
	run_init(NULL);
	pty_shutdown();
	isolated_shutdown();
	session_shutdown();
	command_shutdown();
	runtime_shutdown();
	if (kernel_dir != NULL)
		rmdir(kernel_dir);
	free(kernel_dir);
	if (ckpt_dir != NULL)
		rmdir(ckpt_dir);
	free(ckpt_dir);
	rmdir(cmd_dir);
	free(cmd_dir);
	zmq_ctx_term(zctx);
	loop_free(app.loop);
	close(sigfd);
	cgroup_shutdown();
	sandbox_free(sandbox);
	conf_reset(&conf);
	log_notice("stopped");
	return exit_status;
}

/*
 * The template's hooks, without --runtime-init (with it, an init runs
 * them): preStart first, execd ready only once it succeeds, and a
 * failing one ends execd with status 1, as upstream's does; then the
 * periodic hooks.  They run as commands do, with their limits.  The
 * status file, if any, hears "running N" before preStart and "done 0"
 * or "done 1" at the end; a line it cannot take ends execd too.
 */
static void
start_hooks(const struct conf *c)
{
	const struct lifecycle *l = lifecycle_template();
	char err[256];
	int rc;

	conf_limits(c, LIMITS_COMMAND, NULL, &hook_limits);
	lifecycle_init(app.loop, c->grace_ms, &hook_limits);
	lifecycle_status_file(c->lifecycle_status);
	if (c->runtime_init)
		return;
	runtime_set_ready(false);
	/* The bootstrap script learns preStart's timeout first. */
	if (l != NULL && l->pre_start != NULL && lifecycle_status(err,
	    sizeof(err), "running %" PRIu64, l->pre_start->timeout_s) < 0) {
		hooks_failed(err);
		return;
	}
	rc = lifecycle_pre_start(l, pre_start_done, NULL, err, sizeof(err));
	if (rc == 1)
		pre_start_done(0, NULL, NULL);
	else if (rc < 0)
		pre_start_done(rc, err, NULL);
}

/* preStart is over (or there is none): ready and the periodic hooks. */
static void
pre_start_done(int rc, const char *why, void *arg)
{
	char err[256];

	if (rc < 0) {
		if (lifecycle_status(err, sizeof(err), "done 1") < 0)
			log_warnx("lifecycle: %s", err);
		log_warnx("lifecycle preStart failed (%s)", why);
		hooks_failed(NULL);
		return;
	}
	lifecycle_periodic_start(lifecycle_template());
	if (lifecycle_status(err, sizeof(err), "done 0") < 0) {
		lifecycle_periodic_stop();
		hooks_failed(err);
		return;
	}
	runtime_set_ready(true);
}

/* Start-up cannot go on: execd stops with status 1, as upstream's. */
static void
hooks_failed(const char *why)
{
	if (why != NULL)
		log_warnx("lifecycle: %s", why);
	log_warnx("lifecycle hooks failed: execd stops");
	exit_status = 1;
	if (!stopping)
		begin_shutdown();
}

/*
 * What children run under, built once and said once.  execd itself is
 * made not dumpable, so that its /proc files (environ, mem, fd) are
 * closed to children of its own uid, and a child cannot trace it.
 */
static void
setup_sandbox(const struct conf *c)
{
	char err[256], why[256], caps[512];
	int adj;

	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		log_warn("cannot make execd not dumpable");
	/* First: it may start threads, which the filter protects. */
	(void)cgroup_init(app.loop, c->cgroups_off, why, sizeof(why));
	if (sandbox_new(&c->sandbox, &sandbox, err, sizeof(err)) < 0)
		fatalx("%s", err);
	spawn_init(sandbox);
	sandbox_caps_format(c->sandbox.caps, caps, sizeof(caps));
	log_info("children: seccomp %s%s, no_new_privs %s, capabilities %s",
	    sandbox_profile_name(c->sandbox.profile),
	    c->sandbox.log_only ? " (log only)" : "",
	    c->sandbox.no_new_privs ? "on" : "off", caps);
	if (c->user.set) {
		defuser = (struct spawn_user){ c->user.uid, c->user.gid,
		    c->user.groups, c->user.ngroups, c->user.name,
		    c->user.home };
		spawn_default_user(&defuser);
	}
	if (spawn_oom_init(CHILD_OOM_ADJ, &adj) < 0)
		log_warnx("cannot lower execd's oom_score_adj");
	log_info("limits: %s; oom_score_adj %d for execd, %d for children%s%s",
	    why, adj, CHILD_OOM_ADJ, c->user.set ? "; children run as " : "",
	    c->user.set ? c->user.name : "");
}

/*
 * The first log line: where execd listens and who may talk to it.  It is
 * printed whatever the log level.
 */
static void
announce(const struct conf *c, unsigned port)
{
	struct in6_addr a6;
	struct in_addr a4;
	bool v6 = strchr(c->addr, ':') != NULL, loopback;
	const char *how;

	if (v6)
		loopback = inet_pton(AF_INET6, c->addr, &a6) == 1 &&
		    IN6_IS_ADDR_LOOPBACK(&a6);
	else
		loopback = inet_pton(AF_INET, c->addr, &a4) == 1 &&
		    (ntohl(a4.s_addr) >> 24) == 127;
	if (c->token != NULL)
		how = "access token required";
	else if (loopback)
		how = "loopback only: no access token (set one, or --listen "
		    "to choose)";
	else
		how = "WITHOUT an access token: anyone who reaches it can "
		    "run code";
	log_notice("execd %s listening on %s%s%s:%u, %s", EXECD_VERSION,
	    v6 ? "[" : "", c->addr, v6 ? "]" : "", port, how);
}

/*
 * The checkpoint store: --checkpoint-dir, or checkpoints/ in this
 * daemon's private directory, never a directory another execd on the
 * machine may use (ckpt_init empties it).  Without one, checkpoint
 * requests fail (500).
 */
static void
setup_checkpoints(struct conf *c)
{
	char err[PATH_MAX + 256];

	if (c->checkpoint_dir == NULL) {
		ckpt_dir = xasprintf("%s/checkpoints", cmd_dir);
		c->checkpoint_dir = xstrdup(ckpt_dir);
	}
	if (ckpt_init(c->checkpoint_dir, err, sizeof(err)) < 0)
		log_warnx("checkpoints: %s", err);
}

/*
 * The runtime directory for kernels' connection files (created 0700 if
 * missing), and this daemon's private directory for background command
 * output and session code.
 */
static int
setup_dirs(struct conf *c)
{
	const char *e;
	char err[512];
	bool created;

	if (c->runtime_dir == NULL) {
		if ((e = getenv("JUPYTER_RUNTIME_DIR")) != NULL && e[0] == '/')
			c->runtime_dir = xstrdup(e);
		else if ((e = getenv("JUPYTER_DATA_DIR")) != NULL &&
		    e[0] == '/')
			c->runtime_dir = xasprintf("%s/runtime", e);
		else if ((e = getenv("XDG_DATA_HOME")) != NULL && e[0] == '/')
			c->runtime_dir = xasprintf("%s/jupyter/runtime", e);
		else if ((e = getenv("HOME")) != NULL && e[0] == '/')
			c->runtime_dir = xasprintf(
			    "%s/.local/share/jupyter/runtime", e);
		else
			c->runtime_dir = xasprintf("/tmp/execd-runtime-%ld",
			    (long)getuid());
	}
	if (fs_mkdirs(c->runtime_dir, 0700, (uid_t)-1, (gid_t)-1, &created,
	    err, sizeof(err)) < 0) {
		log_warnx("%s", err);
		return -1;
	}
	e = getenv("TMPDIR");
	cmd_dir = xasprintf("%s/execd-%ld", e != NULL && e[0] == '/' ? e :
	    "/tmp", (long)getpid());
	if (mkdir(cmd_dir, 0700) < 0 && errno != EEXIST) {
		log_warn("%s", cmd_dir);
		return -1;
	}
	/*
	 * The default user's shells read their session code here: they may
	 * pass through (the files are 0644), not list or write, so no one
	 * can put a link where execd writes.
	 */
	if (c->user.set && chmod(cmd_dir, 0711) < 0) {
		log_warn("%s", cmd_dir);
		return -1;
	}
	/*
	 * Its kernels find their connection files and socket directories
	 * here too: the runtime directory may be where the user cannot pass.
	 */
	if (c->user.set) {
		kernel_dir = xasprintf("%s/kernels", cmd_dir);
		if ((mkdir(kernel_dir, 0711) < 0 && errno != EEXIST) ||
		    chmod(kernel_dir, 0711) < 0) {
			log_warn("%s", kernel_dir);
			return -1;
		}
	}
	return 0;
}

/* The context registry: kernels and the shells of bash contexts. */
/* A new context's default limits: the live configuration's. */
static void
context_limits(const char *language, struct limits *out, void *arg)
{
	conf_limits(live, LIMITS_CONTEXT, language, out);
}

static void
setup_contexts(const struct conf *c)
{
	kconf = (struct kernel_conf){ .zctx = zctx,
	    .runtime_dir = kernel_dir != NULL ? kernel_dir : c->runtime_dir,
	    .transport = c->kernel_transport,
	    .ready_timeout_ms = c->kernel_ready_s * 1000,
	    .hb_interval_ms = 1000, .hb_misses = 3,
	    .grace_ms = c->grace_ms, .max_restarts = 3,
	    .max_frame = 64 << 20, .cgroup = &metrics_src_system,
	    .as_user = c->user.set, .uid = c->user.uid, .gid = c->user.gid,
	    .fork = !c->kernel_fork_off,
	    .no_kernel = !c->kernel_fork_off && !c->kernel_fork_kernels };
	context_init(app.loop, &kconf);
	context_set_shell_dir(cmd_dir);
	context_set_limits(context_limits, NULL);
	if (c->pool != NULL || c->idle_s > 0) {
		struct conf_pool cp[8];
		struct context_pool pool[8];
		int n = c->pool != NULL ? conf_pool_parse(c->pool, cp, 8) : 0;

		for (int i = 0; i < n && i < 8; i++)
			pool[i] = (struct context_pool){ cp[i].lang, cp[i].n };
		context_set_policy(pool, n < 8 ? (size_t)n : 8, c->idle_s);
	}
}

/* Print METHOD PATH lines, the served routes, for people and tests. */
static void
print_routes(void)
{
	size_t n;
	struct http_route *all = all_routes(&n);

	for (size_t i = 0; i < n; i++)
		if (all[i].fn != NULL)
			printf("%-7s %-24s %s\n", all[i].method,
			    all[i].path, all[i].summary);
	free(all);
}

/*
 * Every front end's routes in one table, OpenSandbox's first: the main
 * listener serves them all.  The caller frees it.
 */
static struct http_route *
all_routes(size_t *n)
{
	struct http_route *all;

	*n = route_count + jupyter_route_count + mcp_route_count;
	all = xreallocarray(NULL, *n, sizeof(*all));
	memcpy(all, route_table, route_count * sizeof(*all));
	memcpy(all + route_count, jupyter_routes,
	    jupyter_route_count * sizeof(*all));
	memcpy(all + route_count + jupyter_route_count, mcp_routes,
	    mcp_route_count * sizeof(*all));
	return all;
}

/*
 * The second listener, serving only the Jupyter Server API with the same
 * settings and token: where --jupyter-listen says, or for auto at
 * 127.0.0.1:44771 when a kernelspec is installed (the code-interpreter
 * SDKs wait for a Jupyter server there), and then a port already taken
 * is only a warning.
 */
static void
setup_jupyter(const struct conf *c, struct http_conf *hc)
{
	struct kp_kernelspec **ks = NULL;
	char **dirs, err[256];
	bool any;

	if (c->jupyter == CONF_JUPYTER_OFF)
		return;
	if (c->jupyter == CONF_JUPYTER_AUTO) {
		dirs = kp_kernelspec_dirs();
		any = kp_kernelspec_find_all(dirs, &ks, NULL) == 0 &&
		    ks[0] != NULL;
		kp_kernelspec_dirs_free(dirs);
		if (ks != NULL)
			kp_kernelspec_list_free(ks);
		if (!any) {
			log_info("no kernelspec installed: no Jupyter listener");
			return;
		}
	}
	hc->addr = c->jupyter_addr;
	hc->port = c->jupyter_port;
	if (http_new(app.loop, hc, jupyter_routes, jupyter_route_count, &app,
	    &app.jupyter_http, err, sizeof(err)) < 0) {
		if (c->jupyter == CONF_JUPYTER_ON)
			fatalx("--jupyter-listen: %s", err);
		log_warnx("no Jupyter listener on %s:%u: %s", c->jupyter_addr,
		    (unsigned)c->jupyter_port, err);
		return;
	}
	http_hold(app.jupyter_http, c->runtime_init);	/* as the main one */
	log_notice("Jupyter Server API listening on %s%s%s:%u",
	    strchr(c->jupyter_addr, ':') != NULL ? "[" : "", c->jupyter_addr,
	    strchr(c->jupyter_addr, ':') != NULL ? "]" : "",
	    (unsigned)http_port(app.jupyter_http));
}

/* Print the installed kernelspecs, first of each name winning. */
static int
print_kernels(void)
{
	struct kp_kernelspec **ks;
	char **dirs = kp_kernelspec_dirs();
	size_t skipped = 0;
	int rc;

	rc = kp_kernelspec_find_all(dirs, &ks, &skipped);
	kp_kernelspec_dirs_free(dirs);
	if (rc < 0) {
		fprintf(stderr, "execd: cannot list kernels: %s\n",
		    strerror(-rc));
		return 1;
	}
	for (size_t i = 0; ks[i] != NULL; i++)
		printf("%-16s %-12s %s\n", ks[i]->name,
		    ks[i]->language[0] != '\0' ? ks[i]->language : "-",
		    ks[i]->resource_dir);
	if (skipped > 0)
		fprintf(stderr, "execd: %zu kernel directories skipped "
		    "(unreadable kernel.json or invalid name)\n", skipped);
	kp_kernelspec_list_free(ks);
	return 0;
}

/*
 * The static build: name lookups use only the services built into libc.
 * A static glibc that follows nsswitch.conf to a module such as
 * libnss_systemd.so loads a second, shared libc and crashes on the first
 * lookup that reaches it (a uid no file knows, an owner name).  Must run
 * before the first lookup.  0, or -1 after saying why on stderr.
 */
static int
setup_nss(void)
{
#ifdef EXECD_STATIC
	static const char *const db[][2] = {
		{ "passwd", "files" }, { "group", "files" },
		{ "initgroups", "files" }, { "shadow", "files" },
		{ "gshadow", "files" }, { "hosts", "files dns" },
		{ "services", "files" }, { "protocols", "files" },
		{ "networks", "files" },
	};
	size_t i;

	for (i = 0; i < sizeof(db) / sizeof(db[0]); i++) {
		if (__nss_configure_lookup(db[i][0], db[i][1]) != 0) {
			fprintf(stderr, "execd: cannot restrict %s lookups to "
			    "%s\n", db[i][0], db[i][1]);
			return -1;
		}
	}
#endif
	return 0;
}

/* Many streams need many fds: take the hard limit. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("cannot raise the open file limit");
	}
}

/*
 * Block the signals we handle and read them from a signalfd on the loop.
 * SIGPIPE is ignored: a client that goes away is seen as a write error.
 */
static void
never_called(int sig)
{
}

static int
setup_signals(void)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa;
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	/*
	 * A handler, though the signals stay blocked and arrive through the
	 * signalfd: as PID 1 (of a container) a signal whose action is the
	 * default would be dropped before it is queued.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = never_called;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaddset(&set, sigs[i]);
		sigaction(sigs[i], &sa, NULL);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return sigfd < 0 ? -errno : 0;
}

static void
on_signal(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			child_reap();
			break;
		case SIGTERM:
		case SIGINT:
			if (stopping) {
				log_info("second signal: killing children "
				    "now");
				child_signal_all(SIGKILL);
				loop_stop(l);
			} else {
				log_info("signal %d: shutting down",
				    (int)si.ssi_signo);
				begin_shutdown();
			}
			break;
		case SIGHUP:
			reload_policy();
			break;
		}
	}
}

static void
begin_shutdown(void)
{
	int n;

	stopping = true;
	lifecycle_periodic_stop();
	http_shutdown(app.http);
	if (app.jupyter_http != NULL)
		http_shutdown(app.jupyter_http);
	/* Kernels get shutdown_request first, then signals with the rest. */
	context_delete_all();
	isolated_shutdown();
	session_shutdown();
	pty_shutdown();
	service_stop();
	n = child_signal_all(SIGTERM);
	if (n > 0)
		log_info("sent SIGTERM to %d children", n);
	loop_timer_add(app.loop, app.conf->grace_ms, kill_late, NULL);
	loop_timer_add(app.loop, app.conf->grace_ms + FINAL_WAIT_MS, give_up,
	    NULL);
}

/*
 * The watchdog's thread: SIGTERM or SIGINT came while one step has held
 * the loop thread past the watchdog's period (a call that waits on
 * something that does not answer), so the orderly shutdown, which runs on
 * the loop, cannot start.  What matters most is done from here: every
 * child is told SIGTERM, reaped as it ends, SIGKILLed after the grace
 * period, then execd exits 1.  The loop thread may still be running
 * (stuck in its step, or past it by now): child_signal_all() is the one
 * child.c call made for any thread (its table is under a mutex, see
 * child.c), and nothing else of the loop's is read here but
 * app.conf->grace_ms, which SIGHUP's reload leaves alone.
 */
static void
stuck_signal(int sig, void *arg)
{
	uint64_t end = loop_now_ms() + app.conf->grace_ms;
	struct timespec ts = { 0, 20 * 1000000 };
	int n;

	log_warnx("signal %d while the event loop is stuck: ending the "
	    "children and exiting without the orderly shutdown", sig);
	n = child_signal_all(SIGTERM);
	while (n > 0 && loop_now_ms() < end && (waitpid(-1, NULL, WNOHANG) >=
	    0 || errno != ECHILD))
		nanosleep(&ts, NULL);
	child_signal_all(SIGKILL);
	for (int i = 0; i < 50 && (waitpid(-1, NULL, WNOHANG) >= 0 ||
	    errno != ECHILD); i++)
		nanosleep(&ts, NULL);
	_exit(1);
}

static void
kill_late(struct loop *l, uint64_t id, void *arg)
{
	int n = child_signal_all(SIGKILL);

	if (n > 0)
		log_info("sent SIGKILL to %d children after the grace period",
		    n);
}

static void
give_up(struct loop *l, uint64_t id, void *arg)
{
	log_warnx("shutdown deadline passed: %zu streams still open",
	    http_streams(app.http));
	loop_stop(l);
}

/* Once shutting down, stop as soon as nothing is left to wait for. */
static void
check_done(struct loop *l, void *arg)
{
	if (!stopping)
		return;
	child_reap();
	if (http_streams(app.http) == 0 && (app.jupyter_http == NULL ||
	    http_streams(app.jupyter_http) == 0) && !child_any())
		loop_stop(l);
}

/*
 * SIGHUP: the options read again as at start (the --config file under
 * the same command line and environment), and the sandbox profile and
 * default limits of what is read put in force for jobs started from now
 * on; running jobs keep theirs.  A file that does not load, or a profile
 * that cannot be built, is logged and the policy in force kept.
 */
static void
reload_policy(void)
{
	struct conf fresh;
	struct sandbox *sb;
	char err[512], caps[512];

	if (live->config == NULL) {
		log_info("SIGHUP: no --config file to read again");
		return;
	}
	if (conf_reload(app.conf, &fresh, err, sizeof(err)) < 0) {
		log_warnx("SIGHUP: %s; the policy in force is kept", err);
		return;
	}
	/* Threads that carry the old filter retire; spares take over. */
	cgroup_renew();
	if (sandbox_new(&fresh.sandbox, &sb, err, sizeof(err)) < 0) {
		log_warnx("SIGHUP: %s; the policy in force is kept", err);
		conf_reset(&fresh);
		return;
	}
	spawn_init(sb);
	sandbox_free(sandbox);
	sandbox = sb;
	live->sandbox = fresh.sandbox;
	memcpy(live->limits, fresh.limits, sizeof(fresh.limits));
	memcpy(live->lang_limits, fresh.lang_limits,
	    sizeof(fresh.lang_limits));
	live->nlang_limits = fresh.nlang_limits;
	sandbox_caps_format(fresh.sandbox.caps, caps, sizeof(caps));
	log_info("SIGHUP: %s read again; new children: seccomp %s%s, "
	    "no_new_privs %s, capabilities %s", live->config,
	    sandbox_profile_name(fresh.sandbox.profile),
	    fresh.sandbox.log_only ? " (log only)" : "",
	    fresh.sandbox.no_new_privs ? "on" : "off", caps);
	conf_reset(&fresh);
}
