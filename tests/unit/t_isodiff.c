/*
 * t_isodiff.c -- unit tests for isodiff.c on an upper directory made by
 * hand as overlayfs leaves one (a whiteout is a character device 0/0,
 * made as root only; an opaque directory has user.overlay.opaque "y"):
 * the changes listed, a commit applied to the lower tree, a conflict
 * with a change made to the lower tree after it was recorded, and the
 * paths refused.  test_isolated_diff does the same through real mounts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../../execd/domain/isodiff.h"
#include "../t.h"

static char root[64], lower[96], upper[96];

static void
put(const char *dir, const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	T_OK(f != NULL);
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static char *
get(const char *dir, const char *rel)
{
	static char buf[256];
	char p[256];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	if ((fd = open(p, O_RDONLY)) < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void
sub(const char *dir, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	T_EQ_INT(mkdir(p, 0755), 0);
}

/* The change of path rel in a diff, or NULL. */
static json_t *
change_of(json_t *d, const char *rel)
{
	json_t *a = json_object_get(json_array_get(json_object_get(d,
	    "overlays"), 0), "changes"), *c;
	char p[256];
	size_t i;

	snprintf(p, sizeof(p), "%s/%s", lower, rel);
	json_array_foreach(a, i, c)
		if (strcmp(json_string_value(json_object_get(c, "path")), p) ==
		    0)
			return c;
	return NULL;
}

static const char *
kind(json_t *d, const char *rel)
{
	json_t *c = change_of(d, rel);

	return c != NULL ? json_string_value(json_object_get(c, "change")) :
	    "none";
}

static bool whiteouts;

static void
setup(void)
{
	char p[256];

	snprintf(root, sizeof(root), "/var/tmp/t_isodiff.XXXXXX");
	T_OK(mkdtemp(root) != NULL);
	snprintf(lower, sizeof(lower), "%s/l", root);
	snprintf(upper, sizeof(upper), "%s/u", root);
	T_EQ_INT(mkdir(lower, 0755), 0);
	T_EQ_INT(mkdir(upper, 0755), 0);
	put(lower, "a.txt", "old\n");
	put(lower, "b.txt", "bye\n");
	sub(lower, "o");
	put(lower, "o/x", "x\n");
	sub(lower, "keep");
	put(lower, "keep/k", "k\n");
	/* The session's work, as overlayfs writes it in the upper. */
	put(upper, "a.txt", "new\n");
	put(upper, "new.txt", "n\n");
	snprintf(p, sizeof(p), "%s/b.txt", upper);
	whiteouts = mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0;
	sub(upper, "o");
	put(upper, "o/z", "z\n");
	snprintf(p, sizeof(p), "%s/o", upper);
	T_EQ_INT(lsetxattr(p, "user.overlay.opaque", "y", 1, 0), 0);
	sub(upper, "keep");	/* a copied-up parent: no change */
}

static void
cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	T_EQ_INT(system(cmd), 0);
}

static void
test_diff_and_commit(void)
{
	const char *paths[1];
	char err[256];
	struct isodiff *d;
	struct isodiff_req q = { 0 };
	json_t *o;

	setup();
	paths[0] = lower;
	d = isodiff_take(1, paths, err, sizeof(err));
	T_OK(d != NULL);
	if (d == NULL)
		return;
	q.uppers[0] = upper;
	o = isodiff_diff(d, &q);
	T_OK(o != NULL);
	T_EQ_STR(kind(o, "a.txt"), "modified");
	T_EQ_STR(kind(o, "new.txt"), "added");
	T_EQ_STR(kind(o, "b.txt"), whiteouts ? "deleted" : "none");
	T_EQ_STR(kind(o, "o/x"), "deleted");
	T_EQ_STR(kind(o, "o/z"), "added");
	T_OK(json_is_true(json_object_get(change_of(o, "o"), "opaque")));
	T_EQ_STR(kind(o, "keep"), "none");
	T_EQ_STR(kind(o, "keep/k"), "none");
	json_decref(o);
	/* One path, with its contents. */
	snprintf(err, sizeof(err), "%s/a.txt", lower);
	q.path = err;
	o = isodiff_diff(d, &q);
	T_EQ_STR(json_string_value(json_object_get(o, "old_content")),
	    "old\n");
	T_EQ_STR(json_string_value(json_object_get(o, "new_content")),
	    "new\n");
	json_decref(o);
	q.path = NULL;
	/* Changed outside since the record: a conflict, left alone. */
	put(lower, "a.txt", "theirs, longer\n");
	o = isodiff_commit(d, &q);
	T_OK(o != NULL);
	T_EQ_INT(json_array_size(json_object_get(o, "conflicts")), 1);
	T_EQ_INT(json_array_size(json_object_get(o, "failed")), 0);
	T_EQ_STR(get(lower, "a.txt"), "theirs, longer\n");
	T_EQ_STR(get(lower, "new.txt"), "n\n");
	T_EQ_STR(get(lower, "o/z"), "z\n");
	T_OK(get(lower, "o/x") == NULL);
	if (whiteouts)
		T_OK(get(lower, "b.txt") == NULL);
	T_EQ_STR(get(lower, "keep/k"), "k\n");
	json_decref(o);
	/* What was committed is no longer a change; the conflict still is. */
	o = isodiff_diff(d, &q);
	T_EQ_STR(kind(o, "new.txt"), "none");
	T_EQ_STR(kind(o, "o/z"), "none");
	T_EQ_STR(kind(o, "a.txt"), "modified");
	json_decref(o);
	isodiff_drop(d);
	cleanup();
}

static void
test_paths_refused(void)
{
	const char *paths[1];
	const char *bad[] = { "rel", "/elsewhere", "", NULL };
	char err[256], dots[128];
	struct isodiff *d;
	struct isodiff_req q = { 0 };

	setup();
	paths[0] = lower;
	d = isodiff_take(1, paths, err, sizeof(err));
	T_OK(d != NULL);
	if (d == NULL)
		return;
	q.uppers[0] = upper;
	snprintf(dots, sizeof(dots), "%s/../x", lower);
	for (const char **b = bad; *b != NULL; b++) {
		q.path = *b;
		T_OK(isodiff_diff(d, &q) == NULL);
		T_EQ_INT(q.status, 400);
	}
	q.path = dots;
	T_OK(isodiff_diff(d, &q) == NULL);
	T_EQ_INT(q.status, 400);
	q.path = NULL;
	q.paths = bad;
	q.npaths = 1;
	T_OK(isodiff_commit(d, &q) == NULL);
	T_EQ_INT(q.status, 400);
	T_EQ_STR(get(lower, "a.txt"), "old\n");
	T_EQ_INT(isodiff_overlay_of(d, lower), 0);
	T_EQ_INT(isodiff_overlay_of(d, "/elsewhere"), -1);
	isodiff_drop(d);
	cleanup();
}

static const struct t_case cases[] = {
	{ "diff and commit of a hand-made upper", test_diff_and_commit },
	{ "paths refused", test_paths_refused },
};

int
main(void)
{
	return T_RUN(cases);
}
