/*
 * t_fs.c -- unit tests for fs_path.c and fs_ops.c.
 *
 * Path resolution is pure and checked against exact strings, including
 * the length limits at the byte; temporary names beside a path by their
 * shape.  fs_mkdirs() runs in a fresh temporary
 * directory (in $TMPDIR, else /tmp) under a umask of 022 and is checked
 * with stat(); the tree is removed afterwards.  Covered: absolute and "~"
 * paths, refusals (empty, relative, "~user", NUL), '$' kept literally,
 * $HOME as the default home; the mode convention; user and group look-up
 * by name and number; nested creation, the mode on the created leaf only,
 * existing directories left alone, files in the way, trailing and doubled
 * slashes, and owners.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../fs/fs_ops.h"
#include "../../fs/fs_path.h"
#include "../t.h"
#include "../t_tmp.h"

static int	 resolve(const char *, const char *, char *, size_t);

/* fs_path_resolve() on a C string. */
static int
resolve(const char *in, const char *home, char *out, size_t outlen)
{
	return fs_path_resolve(in, strlen(in), home, out, outlen);
}

/* Absolute paths are taken as they are, unnormalised. */
static void
test_path_absolute(void)
{
	static const char *const v[] = {
		"/", "/tmp", "/a/b/c", "/a/../b", "//x//", "/with space",
		"/caf\xc3\xa9", "/~", "/a/~/b", "/\xff\xfe",
	};
	char out[PATH_MAX] = "";

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_INT(resolve(v[i], "/home/u", out, sizeof(out)), 0);
		T_EQ_STR(out, v[i]);
	}
	/* Only len bytes count: the rest of the string is not read. */
	T_EQ_INT(fs_path_resolve("/abc/def", 4, "/h", out, sizeof(out)), 0);
	T_EQ_STR(out, "/abc");
}

/* "~" and "~/rest" start from the home given. */
static void
test_path_home(void)
{
	char out[PATH_MAX] = "";

	T_EQ_INT(resolve("~", "/home/u", out, sizeof(out)), 0);
	T_EQ_STR(out, "/home/u");
	T_EQ_INT(resolve("~/", "/home/u", out, sizeof(out)), 0);
	T_EQ_STR(out, "/home/u/");
	T_EQ_INT(resolve("~/x", "/home/u", out, sizeof(out)), 0);
	T_EQ_STR(out, "/home/u/x");
	T_EQ_INT(resolve("~/a/b/../c", "/srv/u", out, sizeof(out)), 0);
	T_EQ_STR(out, "/srv/u/a/b/../c");
	T_EQ_INT(resolve("~//x", "/h", out, sizeof(out)), 0);
	T_EQ_STR(out, "/h//x");
	T_EQ_INT(resolve("~/~", "/h", out, sizeof(out)), 0);
	T_EQ_STR(out, "/h/~");
}

/* '$' is an ordinary character: nothing is expanded. */
static void
test_path_dollar(void)
{
	char out[PATH_MAX] = "";

	setenv("T_FS_VAR", "expanded", 1);
	T_EQ_INT(resolve("/tmp/$T_FS_VAR", "/h", out, sizeof(out)), 0);
	T_EQ_STR(out, "/tmp/$T_FS_VAR");
	T_EQ_INT(resolve("/tmp/${T_FS_VAR}/$", "/h", out, sizeof(out)), 0);
	T_EQ_STR(out, "/tmp/${T_FS_VAR}/$");
	T_EQ_INT(resolve("~/$HOME", "/h", out, sizeof(out)), 0);
	T_EQ_STR(out, "/h/$HOME");
	T_EQ_INT(resolve("$HOME/x", "/h", out, sizeof(out)), -EINVAL);
	unsetenv("T_FS_VAR");
}

/* Empty, relative, "~user" and NUL-containing paths are refused. */
static void
test_path_refused(void)
{
	static const struct {
		const char	*in;
		size_t		 len;
	} v[] = {
		{ "", 0 }, { "a", 1 }, { "./a", 3 }, { "../a", 4 },
		{ ".", 1 }, { "~user", 5 }, { "~user/x", 7 }, { "~~", 2 },
		{ " /a", 3 }, { "\\a", 2 }, { "\0", 1 }, { "/a\0b", 4 },
		{ "/a\0", 3 }, { "~\0", 2 }, { "~/\0", 3 }, { "\0/a", 3 },
	};
	char out[PATH_MAX] = "";

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_INT(fs_path_resolve(v[i].in, v[i].len, "/home/u", out,
		    sizeof(out)), -EINVAL);
	}
}

/* Length limits, at the byte: out must hold the path and its NUL. */
static void
test_path_too_long(void)
{
	char in[64], out[16] = "";

	memset(in, 'a', sizeof(in));
	in[0] = '/';
	/* 15 bytes and a NUL fit in 16. */
	T_EQ_INT(fs_path_resolve(in, 15, "/h", out, sizeof(out)), 0);
	T_EQ_INT(strlen(out), 15);
	T_EQ_INT(fs_path_resolve(in, 16, "/h", out, sizeof(out)),
	    -ENAMETOOLONG);
	T_EQ_INT(fs_path_resolve(in, sizeof(in), "/h", out, sizeof(out)),
	    -ENAMETOOLONG);
	/* "~/" + 12: "/home" + "/" + 12 = 18 > 15. */
	in[0] = '~';
	in[1] = '/';
	T_EQ_INT(fs_path_resolve(in, 14, "/home", out, sizeof(out)),
	    -ENAMETOOLONG);
	/* "/home" + "/" + 10 = 16 bytes: no room for the NUL. */
	T_EQ_INT(fs_path_resolve(in, 12, "/home", out, sizeof(out)),
	    -ENAMETOOLONG);
	/* A home longer than out. */
	T_EQ_INT(resolve("~", "/0123456789abcdef", out, sizeof(out)),
	    -ENAMETOOLONG);
	T_EQ_INT(resolve("/", "/h", out, 1), -ENAMETOOLONG);
	T_EQ_INT(resolve("/", "/h", out, 2), 0);
}

/* Whether s is n lowercase hex digits and nothing more. */
static int
is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * A temporary name beside a path: its directory, the prefix, 12 hex
 * digits; the directory of "/f" is the root, of "f" the current one; two
 * names in a row differ; a buffer one byte short is refused.
 */
static void
test_path_tmp_beside(void)
{
	char a[64], b[64];
	size_t pl = strlen("/d/e/.p-");

	T_EQ_INT(fs_path_tmp_beside("/d/e/f", ".p-", a, sizeof(a)), 0);
	T_OK(strncmp(a, "/d/e/.p-", pl) == 0);
	T_OK(is_hex(a + pl, 12));
	T_EQ_INT(fs_path_tmp_beside("/d/e/f", ".p-", b, sizeof(b)), 0);
	T_OK(strcmp(a, b) != 0);
	/* Only what follows the last slash is replaced. */
	T_EQ_INT(fs_path_tmp_beside("/d/e/", "x", a, sizeof(a)), 0);
	T_OK(strncmp(a, "/d/e/x", 6) == 0 && is_hex(a + 6, 12));
	T_EQ_INT(fs_path_tmp_beside("/f", ".q", a, sizeof(a)), 0);
	T_OK(strncmp(a, "/.q", 3) == 0 && is_hex(a + 3, 12));
	T_EQ_INT(fs_path_tmp_beside("f", ".q", a, sizeof(a)), 0);
	T_OK(strncmp(a, "./.q", 4) == 0 && is_hex(a + 4, 12));
	/* "/d/" + "p" + 12 = 16 bytes and a NUL. */
	T_EQ_INT(fs_path_tmp_beside("/d/f", "p", a, 17), 0);
	T_EQ_INT(strlen(a), 16);
	T_EQ_INT(fs_path_tmp_beside("/d/f", "p", a, 16), -ENAMETOOLONG);
	T_EQ_INT(fs_path_tmp_beside("/d/f", "p", a, 1), -ENAMETOOLONG);
}

/* A "~" path whose expansion fills out exactly, NUL included, fits. */
static void
test_path_home_exact(void)
{
	char in[16], out[16] = "";

	memset(in, 'a', sizeof(in));
	in[0] = '~';
	in[1] = '/';
	/* "/home" + "/" + 9 = 15 bytes and a NUL: exactly 16. */
	T_EQ_INT(fs_path_resolve(in, 11, "/home", out, sizeof(out)), 0);
	T_EQ_STR(out, "/home/aaaaaaaaa");
	T_EQ_INT(resolve("~", "/0123456789abcd", out, sizeof(out)), 0);
	T_EQ_STR(out, "/0123456789abcd");
	/* As for an absolute path of the same length. */
	T_EQ_INT(resolve("/home/aaaaaaaaa", NULL, out, sizeof(out)), 0);
}

/* With no home given: $HOME if absolute, else the password database. */
static void
test_path_default_home(void)
{
	char out[PATH_MAX] = "", *saved = NULL;
	const char *h = getenv("HOME");
	int rc;

	if (h != NULL)
		saved = strdup(h);
	setenv("HOME", "/t_fs/home", 1);
	T_EQ_INT(resolve("~/x", NULL, out, sizeof(out)), 0);
	T_EQ_STR(out, "/t_fs/home/x");
	/* A relative $HOME is not trusted. */
	setenv("HOME", "relative", 1);
	rc = resolve("~/x", NULL, out, sizeof(out));
	T_OK(rc == 0 || rc == -ENOENT);
	if (rc == 0) {
		T_EQ_INT(out[0], '/');
		T_OK(strstr(out, "relative") == NULL);
	}
	unsetenv("HOME");
	rc = resolve("~", NULL, out, sizeof(out));
	T_OK(rc == 0 || rc == -ENOENT);
	if (rc == 0)
		T_EQ_INT(out[0], '/');
	/* Absolute paths never need a home. */
	T_EQ_INT(resolve("/abs", NULL, out, sizeof(out)), 0);
	if (saved != NULL)
		setenv("HOME", saved, 1);
	free(saved);
}

/* Decimal digits read as octal; only permission bits kept. */
static void
test_mode_parse(void)
{
	static const struct {
		long long	 in;
		int		 rc;
		mode_t		 want;
	} v[] = {
		{ 755, 0, 0755 }, { 644, 0, 0644 }, { 777, 0, 0777 },
		{ 700, 0, 0700 }, { 0, 0, 0 }, { 7, 0, 07 }, { 10, 0, 010 },
		{ 4755, 0, 0755 }, { 2775, 0, 0775 }, { 1777, 0, 0777 },
		{ 789, -EINVAL, 0 }, { 8, -EINVAL, 0 }, { 9, -EINVAL, 0 },
		{ 1800, -EINVAL, 0 }, { -1, -EINVAL, 0 }, { -755, -EINVAL, 0 },
		{ 9223372036854775807LL, -EINVAL, 0 },
		{ -9223372036854775807LL - 1, -EINVAL, 0 },
		{ 777777777777777LL, -EINVAL, 0 },
	};
	mode_t m;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		m = 01234;
		T_EQ_INT(fs_mode_parse(v[i].in, &m), v[i].rc);
		if (v[i].rc == 0)
			T_EQ_INT(m, v[i].want);
	}
}

/* Users and groups by name; NULL and "" leave the ids at -1. */
static void
test_owner_names(void)
{
	struct passwd *pw;
	struct group *gr;
	char err[128] = "";
	uid_t uid = 0;
	gid_t gid = 0;

	T_EQ_INT(fs_owner_lookup(NULL, NULL, &uid, &gid, err, sizeof(err)),
	    0);
	T_EQ_INT(uid, (uid_t)-1);
	T_EQ_INT(gid, (gid_t)-1);
	T_EQ_INT(fs_owner_lookup("", "", &uid, &gid, err, sizeof(err)), 0);
	T_EQ_INT(uid, (uid_t)-1);
	T_EQ_INT(gid, (gid_t)-1);
	T_EQ_INT(fs_owner_lookup("root", "root", &uid, &gid, err,
	    sizeof(err)), 0);
	T_EQ_INT(uid, 0);
	T_EQ_INT(gid, 0);
	T_EQ_INT(fs_owner_lookup("root", NULL, &uid, &gid, err,
	    sizeof(err)), 0);
	T_EQ_INT(uid, 0);
	T_EQ_INT(gid, (gid_t)-1);
	if ((pw = getpwnam("nobody")) != NULL) {
		T_EQ_INT(fs_owner_lookup("nobody", NULL, &uid, &gid, err,
		    sizeof(err)), 0);
		T_EQ_INT(uid, pw->pw_uid);
	}
	if ((gr = getgrnam("nogroup")) != NULL) {
		T_EQ_INT(fs_owner_lookup(NULL, "nogroup", &uid, &gid, err,
		    sizeof(err)), 0);
		T_EQ_INT(gid, gr->gr_gid);
		T_EQ_INT(uid, (uid_t)-1);
	}
}

/* Unknown names fail with a message; numbers are taken as ids. */
static void
test_owner_unknown_numeric(void)
{
	char err[128] = "";
	uid_t uid;
	gid_t gid;

	T_EQ_INT(fs_owner_lookup("no-such-user-t-fs", NULL, &uid, &gid, err,
	    sizeof(err)), -ENOENT);
	T_EQ_STR(err, "unknown user no-such-user-t-fs");
	T_EQ_INT(fs_owner_lookup("root", "no-such-group-t-fs", &uid, &gid,
	    err, sizeof(err)), -ENOENT);
	T_EQ_STR(err, "unknown group no-such-group-t-fs");
	T_EQ_INT(fs_owner_lookup("12345", "23456", &uid, &gid, err,
	    sizeof(err)), 0);
	T_EQ_INT(uid, 12345);
	T_EQ_INT(gid, 23456);
	T_EQ_INT(fs_owner_lookup("0", "0", &uid, &gid, err, sizeof(err)), 0);
	T_EQ_INT(uid, 0);
	T_EQ_INT(gid, 0);
	T_EQ_INT(fs_owner_lookup("-1", NULL, &uid, &gid, err, sizeof(err)),
	    -ENOENT);
	T_EQ_INT(fs_owner_lookup("12a", NULL, &uid, &gid, err, sizeof(err)),
	    -ENOENT);
	T_EQ_INT(fs_owner_lookup(NULL, "-5", &uid, &gid, err, sizeof(err)),
	    -ENOENT);
}

/* An id too large for uid_t/gid_t must not wrap (to root, or to -1). */
static void
test_owner_numeric_overflow(void)
{
	char err[128] = "";
	uid_t uid;
	gid_t gid;
	int rc;

	rc = fs_owner_lookup("4294967296", NULL, &uid, &gid, err,
	    sizeof(err));
	T_EQ_INT(rc, -ENOENT);
	if (rc == 0)
		fprintf(stderr, "  \"4294967296\" gave uid %u\n",
		    (unsigned)uid);
	rc = fs_owner_lookup(NULL, "4294967296", &uid, &gid, err,
	    sizeof(err));
	T_EQ_INT(rc, -ENOENT);
	T_EQ_INT(fs_owner_lookup("4294967295", NULL, &uid, &gid, err,
	    sizeof(err)), -ENOENT);
	T_EQ_INT(fs_owner_lookup("99999999999999999999", NULL, &uid, &gid,
	    err, sizeof(err)), -ENOENT);
}

/* Nested creation: the leaf gets mode, the parents the umask default. */
static void
test_mkdirs_nested(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	mode_t old = umask(022);
	bool created = false;

	T_EQ_INT(fs_mkdirs(t_path(d, "a/b/c"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_OK(created);
	T_EQ_INT(t_mode(t_path(d, "a/b/c")), 0700);
	T_EQ_INT(t_mode(t_path(d, "a/b")), 0755);
	T_EQ_INT(t_mode(t_path(d, "a")), 0755);
	/* Mode 0: the leaf keeps the umask default too. */
	T_EQ_INT(fs_mkdirs(t_path(d, "x/y"), 0, (uid_t)-1, (gid_t)-1, &created,
	    err, sizeof(err)), 0);
	T_OK(created);
	T_EQ_INT(t_mode(t_path(d, "x/y")), 0755);
	/* A mode wider than the umask allows is still applied. */
	T_EQ_INT(fs_mkdirs(t_path(d, "x/z"), 0777, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_EQ_INT(t_mode(t_path(d, "x/z")), 0777);
	/* Only the leaf is new here: a parent that exists is untouched. */
	chmod(t_path(d, "x"), 0750);
	T_EQ_INT(fs_mkdirs(t_path(d, "x/w"), 0711, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_EQ_INT(t_mode(t_path(d, "x")), 0750);
	T_EQ_INT(t_mode(t_path(d, "x/w")), 0711);
	umask(old);
	t_tmpdir_free(d);
}

/* An existing directory: success, created false, mode left alone. */
static void
test_mkdirs_existing(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	mode_t old = umask(022);
	bool created = true;

	T_EQ_INT(mkdir(t_path(d, "e"), 0750), 0);
	T_EQ_INT(fs_mkdirs(t_path(d, "e"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_OK(!created);
	T_EQ_INT(t_mode(t_path(d, "e")), 0750);
	created = true;
	T_EQ_INT(fs_mkdirs(d, 0700, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err)), 0);
	T_OK(!created);
	T_EQ_INT(t_mode(d), 0700);	/* mkdtemp's own mode */
	created = true;
	T_EQ_INT(fs_mkdirs("/", 0700, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err)), 0);
	T_OK(!created);
	created = true;
	T_EQ_INT(fs_mkdirs("///", 0700, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err)), 0);
	T_OK(!created);
	/* A symbolic link to a directory counts as the directory. */
	T_EQ_INT(symlink("e", t_path(d, "link")), 0);
	T_EQ_INT(fs_mkdirs(t_path(d, "link/sub"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_OK(created);
	T_EQ_INT(t_mode(t_path(d, "e/sub")), 0700);
	umask(old);
	t_tmpdir_free(d);
}

/* A file where a directory should be: -EEXIST with a message. */
static void
test_mkdirs_file_in_way(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	bool created;
	int fd;

	fd = open(t_path(d, "f"), O_CREAT | O_WRONLY, 0644);
	T_OK(fd >= 0);
	close(fd);
	T_EQ_INT(fs_mkdirs(t_path(d, "f"), 0700, (uid_t)-1, (gid_t)-1, &created,
	    err, sizeof(err)), -EEXIST);
	T_OK(strstr(err, "not a directory") != NULL);
	T_EQ_INT(fs_mkdirs(t_path(d, "f/sub/leaf"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), -EEXIST);
	T_OK(strstr(err, t_path(d, "f")) != NULL);
	T_EQ_INT(fs_mkdirs(t_path(d, "f/"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), -EEXIST);
	/* A dangling symbolic link is in the way too. */
	T_EQ_INT(symlink("nowhere", t_path(d, "dangling")), 0);
	T_EQ_INT(fs_mkdirs(t_path(d, "dangling"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), -EEXIST);
	t_tmpdir_free(d);
}

/* Trailing and doubled slashes name the same directory. */
static void
test_mkdirs_slashes(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	mode_t old = umask(022);
	bool created = false;
	struct stat st;

	T_EQ_INT(fs_mkdirs(t_path(d, "t/u///"), 0701, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_OK(created);
	T_EQ_INT(stat(t_path(d, "t/u"), &st), 0);
	T_OK(S_ISDIR(st.st_mode));
	T_EQ_INT(st.st_mode & 07777, 0701);
	T_EQ_INT(fs_mkdirs(t_path(d, "t/u/"), 0700, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_OK(!created);
	T_EQ_INT(fs_mkdirs(t_path(d, "t//v"), 0702, (uid_t)-1, (gid_t)-1,
	    &created, err, sizeof(err)), 0);
	T_OK(created);
	T_EQ_INT(t_mode(t_path(d, "t/v")), 0702);
	umask(old);
	t_tmpdir_free(d);
}

/* Bad paths and system errors come back as -errno with a message. */
static void
test_mkdirs_errors(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "", *big;
	bool created;

	T_EQ_INT(fs_mkdirs("", 0700, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err)), -EINVAL);
	big = malloc(PATH_MAX + 10);
	memset(big, 'a', PATH_MAX + 9);
	big[0] = '/';
	big[PATH_MAX + 9] = '\0';
	T_EQ_INT(fs_mkdirs(big, 0700, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err)), -ENAMETOOLONG);
	free(big);
	/* A component longer than NAME_MAX. */
	big = malloc(NAME_MAX + 2);
	memset(big, 'n', NAME_MAX + 1);
	big[NAME_MAX + 1] = '\0';
	T_EQ_INT(fs_mkdirs(t_path(d, big), 0700, (uid_t)-1, (gid_t)-1, &created,
	    err, sizeof(err)), -ENAMETOOLONG);
	T_OK(strstr(err, "mkdir") != NULL);
	free(big);
	/* No write permission (root is not stopped by it). */
	if (geteuid() != 0) {
		T_EQ_INT(mkdir(t_path(d, "ro"), 0500), 0);
		T_EQ_INT(fs_mkdirs(t_path(d, "ro/x"), 0700, (uid_t)-1,
		    (gid_t)-1, &created, err, sizeof(err)), -EACCES);
	}
	t_tmpdir_free(d);
}

/* Owner and group go to the created leaf only. */
static void
test_mkdirs_owner(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	struct passwd *pw = getpwnam("nobody");
	bool created;
	struct stat st;

	/* To ourselves: allowed for anyone. */
	T_EQ_INT(fs_mkdirs(t_path(d, "mine/leaf"), 0700, getuid(), getgid(),
	    &created, err, sizeof(err)), 0);
	T_EQ_INT(stat(t_path(d, "mine/leaf"), &st), 0);
	T_EQ_INT(st.st_uid, getuid());
	T_EQ_INT(st.st_gid, getgid());
	if (geteuid() == 0 && pw != NULL) {
		T_EQ_INT(fs_mkdirs(t_path(d, "p/q"), 0700, pw->pw_uid,
		    (gid_t)-1, &created, err, sizeof(err)), 0);
		T_EQ_INT(stat(t_path(d, "p/q"), &st), 0);
		T_EQ_INT(st.st_uid, pw->pw_uid);
		T_EQ_INT(st.st_gid, getgid());
		T_EQ_INT(stat(t_path(d, "p"), &st), 0);
		T_EQ_INT(st.st_uid, 0);
		/* Existing: the owner is not changed. */
		T_EQ_INT(fs_mkdirs(t_path(d, "p"), 0700, pw->pw_uid,
		    pw->pw_gid, &created, err, sizeof(err)), 0);
		T_OK(!created);
		T_EQ_INT(stat(t_path(d, "p"), &st), 0);
		T_EQ_INT(st.st_uid, 0);
	} else if (geteuid() != 0 && pw != NULL) {
		/* Not allowed: -EPERM, and the message names the path. */
		T_EQ_INT(fs_mkdirs(t_path(d, "p/q"), 0700, pw->pw_uid,
		    (gid_t)-1, &created, err, sizeof(err)), -EPERM);
		T_OK(strstr(err, "p/q") != NULL);
	}
	t_tmpdir_free(d);
}

/* The text form of names: fixed cases, then random byte strings. */
static void
test_path_text(void)
{
	static const char *v[][2] = {
		{ "/plain/name", "/plain/name" },
		{ "/f\xffx", "/f\\xffx" },
		{ "/a\\xffb", "/a\\x5cxffb" },
		{ "/a\\xFFb", "/a\\x5cxFFb" },
		{ "/a\\x41", "/a\\x41" },
		{ "/a\\x5c", "/a\\x5cx5c" },
		{ "/\\\xff", "/\\\\xff" },
		{ "/caf\xc3\xa9", "/caf\xc3\xa9" },
		{ "/cut\xc3", "/cut\\xc3" },
	};
	unsigned seed = 12345;
	char raw[32], back[32 * 4 + 1], *t;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		t = fs_path_escape(v[i][0]);
		T_EQ_STR(t, v[i][1]);
		T_EQ_INT(fs_path_is_plain(v[i][0]), strcmp(v[i][0], v[i][1]) ==
		    0);
		fs_path_unescape(t);
		T_EQ_STR(t, v[i][0]);
		free(t);
	}
	/* Uppercase hex decodes too. */
	snprintf(back, sizeof(back), "/a\\xFF");
	fs_path_unescape(back);
	T_EQ_STR(back, "/a\xff");
	for (int k = 0; k < 20000; k++) {
		size_t n = (size_t)(rand_r(&seed) % 16);
		static const char pick[] = "\\x5cfF8a0\xff\xc3\xa9/";

		for (size_t i = 0; i < n; i++)
			raw[i] = pick[rand_r(&seed) % (sizeof(pick) - 1)];
		raw[n] = '\0';
		if ((t = fs_path_escape(raw)) == NULL)
			break;
		snprintf(back, sizeof(back), "%s", t);
		fs_path_unescape(back);
		if (strcmp(back, raw) != 0) {
			T_EQ_STR(back, raw);
			free(t);
			break;
		}
		free(t);
	}
}

static const struct t_case cases[] = {
	{ "path absolute", test_path_absolute },
	{ "path home", test_path_home },
	{ "path dollar", test_path_dollar },
	{ "path refused", test_path_refused },
	{ "path text", test_path_text },
	{ "path too long", test_path_too_long },
	{ "path tmp beside", test_path_tmp_beside },
	{ "path home fits exactly", test_path_home_exact },
	{ "path default home", test_path_default_home },
	{ "mode parse", test_mode_parse },
	{ "owner names", test_owner_names },
	{ "owner unknown and numeric", test_owner_unknown_numeric },
	{ "owner numeric overflow", test_owner_numeric_overflow },
	{ "mkdirs nested", test_mkdirs_nested },
	{ "mkdirs existing", test_mkdirs_existing },
	{ "mkdirs file in the way", test_mkdirs_file_in_way },
	{ "mkdirs slashes", test_mkdirs_slashes },
	{ "mkdirs errors", test_mkdirs_errors },
	{ "mkdirs owner", test_mkdirs_owner },
};

int
main(void)
{
	return T_RUN(cases);
}
