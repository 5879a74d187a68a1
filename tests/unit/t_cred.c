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
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
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

static const struct t_case cases[] = {
	{ "lookup", test_lookup },
	{ "enter_and_leave", test_enter_and_leave },
};

int
main(void)
{
	return T_RUN(cases);
}
