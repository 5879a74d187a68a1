/*
 * t_isoplan.c -- unit tests for isoplan.c's building side: the overlay
 * options string overlayfs gets, the paths refused (relative, with the
 * characters its options cannot carry), the kinds of steps in order, and
 * the cap on steps.  Applying a plan needs a child with CAP_SYS_ADMIN:
 * test_isolated does that.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../execd/process/isoplan.h"
#include "../t.h"

static void
test_overlay_options(void)
{
	struct isoplan p = { 0 };

	T_EQ_INT(isoplan_overlay(&p, "/workspace", "/var/up/s/0", false, 0755,
	    1000, 1001), 0);
	T_EQ_INT(p.n, 1);
	T_EQ_INT(p.step[0].kind, ISOPLAN_OVERLAY);
	T_EQ_STR(p.step[0].opts, "lowerdir=/workspace,upperdir=/var/up/s/0/"
	    "upper,workdir=/var/up/s/0/work");
	T_EQ_STR(p.step[0].upper, "/var/up/s/0/upper");
	T_EQ_STR(p.step[0].work, "/var/up/s/0/work");
	T_EQ_INT(p.step[0].mode, 0755);
	T_EQ_INT(p.step[0].uid, 1000);
	T_EQ_INT(p.step[0].gid, 1001);
	T_EQ_INT(isoplan_overlay(&p, "/data", "/var/up/s/1", true, 040700, 0,
	    0), 0);
	T_EQ_INT(p.step[1].kind, ISOPLAN_OVERLAY_TMP);
	T_EQ_INT(p.step[1].mode, 0700);	/* the type bits go */
	T_EQ_STR(p.step[1].dir, "/var/up/s/1");
	T_EQ_STR(p.step[1].tmpopts, "mode=0700");
	/* The upper cap: the tmpfs's size. */
	p.upper_max = 1 << 20;
	T_EQ_INT(isoplan_overlay(&p, "/e", "/var/up/s/2", true, 0700, 0, 0), 0);
	T_EQ_STR(p.step[2].tmpopts, "mode=0700,size=1048576");
	isoplan_free(&p);
	T_EQ_INT(p.n, 0);
}

static void
test_paths_refused(void)
{
	struct isoplan p = { 0 };

	T_EQ_INT(isoplan_overlay(&p, "rel", "/u", false, 0, 0, 0), -EINVAL);
	T_EQ_INT(isoplan_overlay(&p, "/a,b", "/u", false, 0, 0, 0), -EINVAL);
	T_EQ_INT(isoplan_overlay(&p, "/a:b", "/u", false, 0, 0, 0), -EINVAL);
	T_EQ_INT(isoplan_overlay(&p, "/a\\b", "/u", false, 0, 0, 0), -EINVAL);
	T_EQ_INT(isoplan_overlay(&p, "/a", "/u,x", false, 0, 0, 0), -EINVAL);
	T_EQ_INT(isoplan_readonly(&p, "rel"), -EINVAL);
	T_EQ_INT(isoplan_bind(&p, "rel", "/x", false), -EINVAL);
	T_EQ_INT(isoplan_bind(&p, "/x", "rel", false), -EINVAL);
	T_EQ_INT(p.n, 0);
	T_OK(isoplan_path_ok("/workspace/a b"));
	T_OK(!isoplan_path_ok(""));
	isoplan_free(&p);
}

static void
test_kinds_in_order_and_cap(void)
{
	struct isoplan p = { 0 };
	int rc = 0;

	T_EQ_INT(isoplan_readonly(&p, "/ro"), 0);
	T_EQ_INT(isoplan_bind(&p, "/data/x", "/mnt/y", true), 0);
	T_EQ_INT(isoplan_bind(&p, "/data/z", "/mnt/z", false), 0);
	T_EQ_INT(p.step[0].kind, ISOPLAN_READONLY);
	T_EQ_STR(p.step[0].target, "/ro");
	T_EQ_INT(p.step[1].kind, ISOPLAN_BIND_RO);
	T_EQ_STR(p.step[1].source, "/data/x");
	T_EQ_STR(p.step[1].target, "/mnt/y");
	T_EQ_INT(p.step[2].kind, ISOPLAN_BIND);
	for (int i = 3; i < ISOPLAN_STEPS + 1 && rc == 0; i++)
		rc = isoplan_readonly(&p, "/r");
	T_EQ_INT(rc, -E2BIG);
	T_EQ_INT(p.n, ISOPLAN_STEPS);
	isoplan_free(&p);
}

/* In a user namespace, overlayfs keeps its xattrs in user.*. */
static void
test_userns_options(void)
{
	struct isoplan p = { 0 };

	p.userns.on = true;
	T_EQ_INT(isoplan_overlay(&p, "/w", "/u/s/0", false, 0755, 0, 0), 0);
	T_EQ_STR(p.step[0].opts, "lowerdir=/w,upperdir=/u/s/0/upper,"
	    "workdir=/u/s/0/work,userxattr");
	isoplan_free(&p);
}

static const struct t_case cases[] = {
	{ "overlay options", test_overlay_options },
	{ "overlay options in a user namespace", test_userns_options },
	{ "paths refused", test_paths_refused },
	{ "kinds in order, and the cap", test_kinds_in_order_and_cap },
};

int
main(void)
{
	return T_RUN(cases);
}
