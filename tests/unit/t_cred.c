/*
 * t_cred.c -- unit tests for cred.c, a thread acting as another user.
 *
 * Covered: the look-up of an account (its home and its groups, the
 * primary one among them) and of a uid no account has (no groups, "/");
 * as root, cred_enter() gives the calling thread the effective uid, gid
 * and groups asked for, with no effective capability left, the real uid
 * kept, and a file of root's mode 0600 refused by the kernel; another
 * thread meanwhile stays root; a nested enter of the same identity is
 * counted and of another refused (-EBUSY); cred_leave() gives everything
 * back (uid, gid, groups, capabilities).  Not root: entering another uid
 * is refused (-EPERM) and the thread is unchanged.
 * A root (cred_root): as root, the thread resolves "/", "..", absolute and
 * relative symlinks beneath the directory, another thread meanwhile sees
 * execd's "/", a copy keeps the root open after the original is dropped,
 * and leaving gives the thread its "/" and working directory back.
 * A process's identity (cred_of_pid, cred_parse_status): this process's
 * filesystem ids and groups as getgroups() has them, a pid with no
 * process -ESRCH; the filesystem field of the Uid and Gid lines, an empty
 * Groups line, lines missing, malformed, or ids out of range refused.
 * A view (cred_view, cred_proc_mounts): the procfs mount points of a
 * mountinfo text, unescaped, and malformed lines refused; as root, a
 * thread in the view of this process has no /proc (a magic link such as
 * /proc/self/root does not resolve) but the rest of the tree, another
 * thread meanwhile has /proc, and leaving gives the thread its
 * namespace, "/" and working directory back; a copy works on a worker
 * thread; a pid with no process is -ESRCH; the view of a child with a
 * second procfs mounted has neither.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../execd/core/cred.h"
#include "../t.h"
#include "../t_tmp.h"

static uid_t	 free_uid(void);
static bool	 caps_any(void);
static void	*other_thread(void *);

static int	 gate[2];		/* main -> other thread: look now */
static uid_t	 seen_euid;

/* A uid without an account, from 4242 up. */
static uid_t
free_uid(void)
{
	uid_t u = 4242;

	while (getpwuid(u) != NULL)
		u++;
	return u;
}

static bool
caps_any(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return true;
	return d[0].effective != 0 || d[1].effective != 0;
}

static void *
other_thread(void *arg)
{
	char c;

	(void)!read(gate[0], &c, 1);
	seen_euid = geteuid();
	return NULL;
}

static void
test_lookup(void)
{
	struct passwd *pw = getpwuid(0);
	struct cred c;
	char err[256];
	bool primary = false;

	T_OK(pw != NULL);
	T_EQ_INT(cred_lookup(0, 5, &c, err, sizeof(err)), 0);
	T_EQ_INT(c.uid, 0);
	T_EQ_INT(c.gid, 5);
	if (pw != NULL)
		T_EQ_STR(c.home, pw->pw_dir);
	for (size_t i = 0; i < c.ngroups; i++)
		if (c.groups[i] == (pw != NULL ? pw->pw_gid : 0))
			primary = true;
	T_OK(primary);
	T_EQ_INT(cred_lookup(free_uid(), 77, &c, err, sizeof(err)), 0);
	T_EQ_INT(c.gid, 77);
	T_EQ_INT(c.ngroups, 0);
	T_EQ_STR(c.home, "/");
}

static void
test_enter_and_leave(void)
{
	char *dir = t_tmpdir(), *f = strdup(t_path(dir, "secret"));
	struct cred c, d;
	gid_t groups[CRED_NGROUPS];
	pthread_t th;
	char err[256];
	int ngroups = getgroups(CRED_NGROUPS, groups), fd;

	T_EQ_INT(cred_lookup(free_uid(), 4243, &c, err, sizeof(err)), 0);
	T_OK(cred_current() == NULL && cred_home() == NULL);
	if (geteuid() != 0) {
		T_EQ_INT(cred_enter(&c), -EPERM);
		T_OK(cred_current() == NULL);
		goto out;
	}
	t_spit(f, "root only", 9, 0600);
	T_EQ_INT(pipe(gate), 0);
	T_EQ_INT(pthread_create(&th, NULL, other_thread, NULL), 0);
	T_EQ_INT(cred_enter(&c), 0);
	T_EQ_INT(geteuid(), c.uid);
	T_EQ_INT(getegid(), 4243);
	T_EQ_INT(getuid(), 0);
	T_EQ_INT(getgroups(0, NULL), 0);
	T_OK(!caps_any());
	T_EQ_STR(cred_home(), "/");
	T_OK(cred_current() != NULL && cred_current()->uid == c.uid);
	errno = 0;
	T_OK((fd = open(f, O_RDONLY)) < 0 && errno == EACCES);
	if (fd >= 0)
		close(fd);
	/* Another thread keeps its own credentials. */
	(void)!write(gate[1], "x", 1);
	pthread_join(th, NULL);
	T_EQ_INT(seen_euid, 0);
	/* Nesting: the same identity counts, another is refused. */
	T_EQ_INT(cred_enter(&c), 0);
	d = c;
	d.gid = 4244;
	T_EQ_INT(cred_enter(&d), -EBUSY);
	cred_leave(&c);
	T_EQ_INT(geteuid(), c.uid);
	cred_leave(&c);
	T_EQ_INT(geteuid(), 0);
	T_EQ_INT(getegid(), getgid());
	T_EQ_INT(getgroups(0, NULL), ngroups);
	T_OK(caps_any());
	T_OK(cred_current() == NULL);
	T_OK((fd = open(f, O_RDONLY)) >= 0);
	if (fd >= 0)
		close(fd);
	close(gate[0]);
	close(gate[1]);
out:
	free(f);
	t_tmpdir_free(dir);
}

static char	 other_seen[64];

/* Up to n - 1 bytes of path into buf, NUL added: how many, or -1. */
static int
readin(const char *path, char *buf, size_t n)
{
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = '\0';
	return (int)r;
}

static void *
root_thread(void *arg)
{
	const char *probe = arg;
	char c;

	(void)!read(gate[0], &c, 1);
	other_seen[0] = '\0';
	(void)!readin(probe, other_seen, sizeof(other_seen));
	return NULL;
}

static void
test_root(void)
{
	char *dir = t_tmpdir(), *out = t_tmpdir(), buf[64], cwd[4096];
	char *probe = strdup(t_path(out, "probe"));
	struct cred c, *dup;
	pthread_t th;
	int fd;

	if (geteuid() != 0)
		goto done;
	T_OK(getcwd(cwd, sizeof(cwd)) != NULL);
	t_spit(probe, "outside", 7, 0644);
	T_EQ_INT(mkdir(t_path(dir, "tmp"), 0755), 0);
	t_spit(t_path(dir, "in"), "inside", 6, 0644);
	T_EQ_INT(symlink("/", t_path(dir, "abs")), 0);
	T_EQ_INT(symlink("../../../../..", t_path(dir, "tmp/up")), 0);
	T_EQ_INT(symlink(probe, t_path(dir, "esc")), 0);
	T_OK((fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);
	T_EQ_INT(cred_root(fd, &c), 0);
	T_EQ_INT(c.uid, geteuid());
	T_EQ_INT(pipe(gate), 0);
	T_EQ_INT(pthread_create(&th, NULL, root_thread, probe), 0);
	T_EQ_INT(cred_enter(&c), 0);
	T_EQ_INT(readin("/in", buf, sizeof(buf)), 6);
	T_EQ_INT(readin("/abs/in", buf, sizeof(buf)), 6);
	T_EQ_INT(readin("/tmp/up/in", buf, sizeof(buf)), 6);
	T_EQ_INT(readin("../../in", buf, sizeof(buf)), 6);
	T_OK(readin("/esc", buf, sizeof(buf)) < 0);
	T_OK(readin(probe, buf, sizeof(buf)) < 0);
	/* Another thread keeps execd's "/". */
	(void)!write(gate[1], "x", 1);
	pthread_join(th, NULL);
	T_EQ_STR(other_seen, "outside");
	dup = cred_dup_current();
	cred_leave(&c);
	cred_root_drop(&c);
	T_EQ_INT(readin(probe, buf, sizeof(buf)), 7);
	T_OK(getcwd(buf, sizeof(buf)) != NULL && strcmp(buf, cwd) == 0);
	/* The copy holds the root still. */
	T_EQ_INT(cred_enter(dup), 0);
	T_EQ_INT(readin("/in", buf, sizeof(buf)), 6);
	cred_leave(dup);
	cred_free(dup);
	T_EQ_INT(readin(probe, buf, sizeof(buf)), 7);
	close(gate[0]);
	close(gate[1]);
done:
	free(probe);
	t_tmpdir_free(dir);
	t_tmpdir_free(out);
}

static void
test_of_pid(void)
{
	static const char st[] = "Name:\tbash\nUid:\t0\t1000\t0\t1001\n"
	    "Gid:\t5\t6\t7\t8\nGroups:\t4 24  27 \nNgid:\t0\n";
	static const char unended[] = "Groups:\nUid: 1 1 1 2\nGid: 3 3 3 4";
	static const char *const bad[] = {
		"Uid:\t1 2 3 4\nGid:\t1 2 3 4\n",		/* no Groups */
		"Uid:\t1 2 3\nGid:\t1 2 3 4\nGroups:\n",	/* 3 ids */
		"Uid:\t1 2 3 4 5\nGid:\t1 2 3 4\nGroups:\n",
		"Uid:\t1 2 3 x\nGid:\t1 2 3 4\nGroups:\n",
		"Uid:\t1 2 3 4\nGid:\t1 2 3 -4\nGroups:\n",
		"Uid:\t1 2 3 4294967295\nGid:\t1 2 3 4\nGroups:\n",
		"Uid:\t1 2 3 99999999999999999999\nGid:\t1 2 3 4\nGroups:\n",
		"Uid:\t1 2 3 4\nGid:\t1 2 3 4\nGroups:\t1 2a\n",
		"",
	};
	gid_t groups[CRED_NGROUPS];
	struct cred c;
	char err[256], *many;
	size_t n;
	int ng = getgroups(CRED_NGROUPS, groups);

	memset(&c, 0, sizeof(c));
	T_EQ_INT(cred_parse_status(st, sizeof(st) - 1, &c), 0);
	T_EQ_INT(c.uid, 1001);
	T_EQ_INT(c.gid, 8);
	T_EQ_INT(c.ngroups, 3);
	T_OK(c.groups[0] == 4 && c.groups[1] == 24 && c.groups[2] == 27);
	/* The last line need not end; an empty Groups line is none. */
	T_EQ_INT(cred_parse_status(unended, strlen(unended), &c), 0);
	T_OK(c.uid == 2 && c.gid == 4 && c.ngroups == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		T_EQ_INT(cred_parse_status(bad[i], strlen(bad[i]), &c),
		    -EINVAL);
	/* One group more than an identity may hold. */
	many = malloc(64 + (CRED_NGROUPS + 1) * 3);
	n = (size_t)sprintf(many, "Uid: 0 0 0 0\nGid: 0 0 0 0\nGroups:");
	for (int i = 0; i <= CRED_NGROUPS; i++)
		n += (size_t)sprintf(many + n, " %d", i % 10);
	T_EQ_INT(cred_parse_status(many, n, &c), -E2BIG);
	free(many);
	/* This process, as the kernel has it. */
	T_EQ_INT(cred_of_pid(getpid(), &c, err, sizeof(err)), 0);
	T_EQ_INT(c.uid, geteuid());
	T_EQ_INT(c.gid, getegid());
	T_EQ_INT(c.ngroups, ng);
	for (int i = 0; i < ng && (size_t)i < c.ngroups; i++)
		T_EQ_INT(c.groups[i], groups[i]);
	T_OK(c.home[0] == '/' && c.root == NULL);
	T_EQ_INT(cred_of_pid(0x3fffffff, &c, err, sizeof(err)), -ESRCH);
}

static char	 seen_mounts[4][64];
static int	 nseen;

static void
seen_mount(const char *path, void *arg)
{
	(void)arg;
	if (nseen < 4)
		snprintf(seen_mounts[nseen], sizeof(seen_mounts[0]), "%s", path);
	nseen++;
}

static void *
view_thread(void *arg)
{
	struct cred *c = arg;
	struct stat st;
	intptr_t ok;

	char g;

	(void)!read(gate[0], &g, 1);
	if (cred_enter(c) < 0)
		return (void *)0;
	ok = stat("/proc/self", &st) < 0 && errno == ENOENT &&
	    stat("/etc", &st) == 0;
	cred_leave(c);
	return (void *)(intptr_t)(ok && stat("/proc/self", &st) == 0);
}

/*
 * The view of a child whose namespace has a second procfs (under a
 * directory of the test's): neither is in it, the directory is.
 */
static void
view_of_child(void)
{
	char *dir = t_tmpdir(), *mnt = strdup(t_path(dir, "p")), err[256];
	char self[4200];
	int ready[2];
	struct cred c;
	struct stat st;
	pid_t pid;
	char b;

	T_EQ_INT(mkdir(mnt, 0755), 0);
	T_EQ_INT(pipe(ready), 0);
	if ((pid = fork()) == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("proc", mnt, "proc", 0, NULL) < 0)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	T_OK(pid > 0);
	close(ready[1]);
	T_EQ_INT(read(ready[0], &b, 1), 1);
	close(ready[0]);
	T_EQ_INT(cred_view(pid, &c, err, sizeof(err)), 0);
	snprintf(self, sizeof(self), "%s/self", mnt);
	T_EQ_INT(cred_enter(&c), 0);
	T_OK(stat(self, &st) < 0 && errno == ENOENT);
	T_OK(stat("/proc/self", &st) < 0 && errno == ENOENT);
	T_OK(stat(mnt, &st) == 0 && S_ISDIR(st.st_mode));
	cred_leave(&c);
	cred_root_drop(&c);
	/* Not in this namespace: the child's mount stays the child's. */
	T_OK(stat(self, &st) < 0 && errno == ENOENT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(mnt);
	t_tmpdir_free(dir);
}

static void
test_view(void)
{
	static const char mi[] =
	    "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
	    "21 20 0:5 / /proc rw,nosuid master:2 - proc proc rw\n"
	    "22 21 0:6 / /proc/sys ro - proc proc ro\n"
	    "23 20 0:7 / /a\\040b\\134c rw shared:1 - proc none rw\n"
	    "24 20 0:8 / /procfs rw - tmpfs proc rw\n";
	static const char *const bad[] = {
		"1 2 3:4 / /p rw proc proc rw\n",	/* no "-" */
		"1 2 3:4 / /p - proc proc rw\n",	/* a field short */
		"1 2 3:4 / p rw - proc proc rw\n",	/* relative */
		"1 2 3:4 / /p\\0 rw - proc proc rw\n",	/* short escape */
		"1 2 3:4 / /p\\000 rw - proc proc rw\n",	/* NUL */
		"1 2 3:4 / /p rw -\n",			/* no type */
	};
	char err[256], cwd[4096], now[4096];
	struct cred c, *dup;
	struct stat st;
	pthread_t th;
	void *ok = NULL;

	nseen = 0;
	T_EQ_INT(cred_proc_mounts(mi, sizeof(mi) - 1, seen_mount, NULL), 3);
	T_EQ_INT(nseen, 3);
	T_EQ_STR(seen_mounts[0], "/proc");
	T_EQ_STR(seen_mounts[1], "/proc/sys");
	T_EQ_STR(seen_mounts[2], "/a b\\c");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		T_EQ_INT(cred_proc_mounts(bad[i], strlen(bad[i]), NULL, NULL),
		    -EINVAL);
	T_EQ_INT(cred_proc_mounts("", 0, NULL, NULL), 0);
	if (geteuid() != 0)
		return;
	T_EQ_INT(cred_view(0x3fffffff, &c, err, sizeof(err)), -ESRCH);
	T_OK(getcwd(cwd, sizeof(cwd)) != NULL);
	T_EQ_INT(cred_view(getpid(), &c, err, sizeof(err)), 0);
	T_EQ_INT(c.uid, geteuid());
	T_EQ_INT(cred_enter(&c), 0);
	dup = cred_dup_current();
	cred_leave(&c);
	/*
	 * A thread made by one in a view would start in it (it shares the
	 * namespaces and, CLONE_FS, the root of its maker): made outside.
	 */
	T_EQ_INT(pipe(gate), 0);
	T_EQ_INT(pthread_create(&th, NULL, view_thread, dup), 0);
	T_EQ_INT(cred_enter(&c), 0);
	T_OK(stat("/proc/self", &st) < 0 && errno == ENOENT);
	T_OK(stat("/proc/self/root/etc", &st) < 0);
	T_OK(stat("/etc", &st) == 0);
	/* The copy, on the other thread, while this one is in it too. */
	T_EQ_INT(write(gate[1], "x", 1), 1);
	T_EQ_INT(pthread_join(th, &ok), 0);
	T_OK(ok != NULL);
	close(gate[0]);
	close(gate[1]);
	cred_leave(&c);
	T_OK(stat("/proc/self", &st) == 0);
	T_OK(getcwd(now, sizeof(now)) != NULL);
	T_EQ_STR(now, cwd);
	cred_free(dup);
	cred_root_drop(&c);
	view_of_child();
}

static const struct t_case cases[] = {
	{ "lookup", test_lookup },
	{ "enter_and_leave", test_enter_and_leave },
	{ "root", test_root },
	{ "of_pid", test_of_pid },
	{ "view", test_view },
};

int
main(void)
{
	return T_RUN(cases);
}
