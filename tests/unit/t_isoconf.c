/*
 * t_isoconf.c -- the isolation configuration file (execd/config/
 * isoconf.c): what each key becomes, the lines of its refusals (keys
 * quoted or not, headers with blanks), and its warnings.
 */
#include <errno.h>
#include <string.h>

#include "../../execd/config/isoconf.h"
#include "../t.h"

/* s read as the file "f": "" when taken, else the message. */
static const char *
rd(const char *s, struct isoconf *c)
{
	static char err[512];

	err[0] = '\0';
	if (isoconf_parse("f", s, strlen(s), c, err, sizeof(err)) == 0)
		return "";
	return err;
}

static void
test_keys(void)
{
	struct isoconf c;

	T_EQ_STR(rd("upper_root = '/u'\nupper_max_bytes = 0x10000\n"
	    "diff_max_bytes = 0\nallowed_writable = []\n", &c), "");
	T_EQ_STR(c.upper_root, "/u");
	T_OK(c.has_upper_max && c.upper_max == 65536);
	T_OK(c.has_diff_max && c.diff_max == 0);
	T_OK(c.has_allowed && c.nallowed == 0);
	T_OK(c.caps == NULL && c.nwarn == 0);
	isoconf_free(&c);
	T_EQ_STR(rd("[hardening]\nenabled = true\nkeep_capabilities = "
	    "['chown', 'kill']\n[seccomp]\n[ebpf]\nenabled = false\n", &c),
	    "");
	T_EQ_STR(c.caps, "chown,kill");
	isoconf_free(&c);
	T_EQ_STR(rd("[hardening]\nenabled = true\nkeep_capabilities = []\n",
	    &c), "");
	T_EQ_STR(c.caps, "none");
	isoconf_free(&c);
	T_EQ_STR(rd("", &c), "");
	T_OK(!c.has_allowed && c.upper_root == NULL);
}

static void
test_lines(void)
{
	struct isoconf c;

	T_EQ_STR(rd("\n\"upper_root\" = 'x'\n", &c),
	    "f:2: upper_root must be an absolute path, not \"x\"");
	T_EQ_STR(rd("[ebpf]\nenabled=false\n[ seccomp ]\n  'deny' = []\n",
	    &c), "f:4: [seccomp] deny is not supported: the filter of every "
	    "child, a session's shell too, is execd's --seccomp profile "
	    "(groups of calls, see docs/isolation.md), not a list of calls");
	T_EQ_STR(rd("# x\n[x]\n", &c), "f:2: unknown table [x] (the tables "
	    "are [seccomp], [hardening], [landlock], [ebpf])");
	T_EQ_STR(rd("[[hardening]]\n", &c), "f:1: [[hardening]] is not a "
	    "table of the isolation configuration");
	T_EQ_STR(rd("a = true\n", &c), "f:1: unknown key a (the root's are "
	    "upper_root, upper_max_bytes, diff_max_bytes, allowed_writable)");
	T_EQ_STR(rd("\n\nupper_root = \"\\u0000\"\n", &c),
	    "f:3: upper_root must be a string");
	T_EQ_STR(rd("x = 'unterminated\n", &c), "f:1: unterminated string");
}

static void
test_warnings(void)
{
	struct isoconf c;

	T_EQ_STR(rd("[landlock]\nenabled = false\nextra_writable = ['/a']\n"
	    "[hardening]\nkeep_capabilities = ['chown']\n", &c), "");
	T_EQ_INT(c.nwarn, 2);
	T_EQ_STR(c.warn[0], "f:3: [landlock] extra_writable is not applied: "
	    "execd has no Landlock");
	T_EQ_STR(c.warn[1], "f:5: [hardening] keep_capabilities is not "
	    "applied: [hardening] enabled is not true");
	T_OK(c.caps == NULL);
	isoconf_free(&c);
}

static const struct t_case cases[] = {
	{ "keys", test_keys },
	{ "refusals with their lines", test_lines },
	{ "warnings", test_warnings },
};

int
main(void)
{
	return T_RUN(cases);
}
