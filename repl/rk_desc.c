/*
 * rk_desc.c -- reading a REPL's description (rk_desc.h) from JSON.
 *
 * Strict: a member of the wrong type, an unknown signal name, an empty
 * argv or marker is refused with a message naming it, so that a
 * kernelspec's mistake shows at the kernel's start, not as a hung run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernelproto/kp_kernelspec.h"
#include "../util/must.h"
#include "rk_desc.h"

static char	*subst(const char *, const char *);
static int	 str_member(const json_t *, const char *, const char *,
		    const char *, char **, char *, size_t);
static int	 str_list(const json_t *, const char *, const char *, bool,
		    char ***, char *, size_t);
static void	 free_list(char **);

/* s with every key ("{marker}", say) replaced by val. */
static char *
subst_key(const char *s, const char *key, const char *val)
{
	size_t n = 0, ml = strlen(val), kl = strlen(key);
	const char *p;
	char *out, *o;

	for (p = s; (p = strstr(p, key)) != NULL; p += kl)
		n++;
	o = out = must(malloc(strlen(s) + n * ml + 1));
	while ((p = strstr(s, key)) != NULL) {
		memcpy(o, s, (size_t)(p - s));
		o += p - s;
		memcpy(o, val, ml);
		o += ml;
		s = p + kl;
	}
	strcpy(o, s);
	return out;
}

/* s with every "{marker}" replaced by marker. */
static char *
subst(const char *s, const char *marker)
{
	return subst_key(s, "{marker}", marker);
}

/* The string member k of o (substituted), or dflt (NULL: required). */
static int
str_member(const json_t *o, const char *k, const char *dflt,
    const char *marker, char **out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, k);

	if (v == NULL && dflt != NULL) {
		*out = subst(dflt, marker);
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) !=
	    json_string_length(v)) {
		snprintf(err, errlen, "repl.%s: %s", k, v == NULL ?
		    "missing" : "not a string without NULs");
		return -EINVAL;
	}
	*out = subst(json_string_value(v), marker);
	return 0;
}

/* The array of strings k of o, NULL-terminated (absent: empty). */
static int
str_list(const json_t *o, const char *k, const char *marker, bool need,
    char ***out, char *err, size_t errlen)
{
	const json_t *a = json_object_get(o, k), *v;
	char **l;
	size_t i;

	if ((a == NULL && need) || (a != NULL && !json_is_array(a)) ||
	    (need && json_array_size(a) == 0)) {
		snprintf(err, errlen, "repl.%s: not a non-empty array", k);
		return -EINVAL;
	}
	l = must(calloc(json_array_size(a) + 1, sizeof(*l)));
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) !=
		    json_string_length(v)) {
			snprintf(err, errlen, "repl.%s[%zu]: not a string "
			    "without NULs", k, i);
			free_list(l);
			return -EINVAL;
		}
		l[i] = subst(json_string_value(v), marker);
	}
	*out = l;
	return 0;
}

static void
free_list(char **l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; l[i] != NULL; i++)
		free(l[i]);
	free(l);
}

/* The signal named s ("INT", "SIGINT", ...), or 0. */
static int
sig_named(const char *s)
{
	static const struct { const char *n; int sig; } sigs[] = {
		{ "INT", SIGINT }, { "TERM", SIGTERM }, { "QUIT", SIGQUIT },
		{ "HUP", SIGHUP }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
	};

	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcmp(s, sigs[i].n) == 0)
			return sigs[i].sig;
	return 0;
}

/* Parse the "repl" object. */
int
rk_desc_parse(const json_t *o, const char *marker, struct rk_desc **out,
    char *err, size_t errlen)
{
	struct rk_desc *d;
	const json_t *v, *e, *intr;
	char *sig = NULL;
	size_t i;
	int rc = -EINVAL;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "metadata.repl: not an object");
		return -EINVAL;
	}
	d = must(calloc(1, sizeof(*d)));
	if ((rc = str_list(o, "argv", marker, true, &d->argv, err,
	    errlen)) < 0 || (rc = str_list(o, "init", marker, false,
	    &d->init, err, errlen)) < 0 || (rc = str_member(o, "program", "",
	    marker, &d->program, err, errlen)) < 0 || (rc = str_member(o,
	    "end", d->program[0] != '\0' ? "" : NULL, marker, &d->end, err,
	    errlen)) < 0 || (rc = str_member(o,
	    "marker", "{marker}", marker, &d->marker, err, errlen)) < 0 ||
	    (rc = str_member(o, "result_open", "", marker, &d->result_open,
	    err, errlen)) < 0 || (rc = str_member(o, "result_close", "",
	    marker, &d->result_close, err, errlen)) < 0 ||
	    (rc = str_member(o, "incomplete_ename", "SyntaxError", marker,
	    &d->incomplete_ename, err, errlen)) < 0 ||
	    (rc = str_member(o, "language", "text", marker, &d->language,
	    err, errlen)) < 0 || (rc = str_member(o, "file_extension",
	    ".txt", marker, &d->extension, err, errlen)) < 0)
		goto out;
	rc = -EINVAL;
	if (d->program[0] != '\0' && strcmp(d->program, "go") != 0 &&
	    strcmp(d->program, "whole") != 0) {
		snprintf(err, errlen, "repl.program: not \"go\" or \"whole\"");
		goto out;
	}
	if (d->marker[0] == '\0' || (d->result_open[0] == '\0') !=
	    (d->result_close[0] == '\0')) {
		snprintf(err, errlen, "repl: an empty marker, or only one of "
		    "result_open and result_close");
		goto out;
	}
	d->end_stderr = json_is_true(json_object_get(o, "end_stderr"));
	d->brackets = json_is_true(json_object_get(o, "brackets"));
	v = json_object_get(o, "ready_timeout");
	d->ready_ms = 60000;
	if (v != NULL) {
		if (!json_is_number(v) || json_number_value(v) <= 0 ||
		    json_number_value(v) > 3600) {
			snprintf(err, errlen, "repl.ready_timeout: not a "
			    "number of seconds in (0, 3600]");
			goto out;
		}
		d->ready_ms = (int)(json_number_value(v) * 1000);
	}
	v = json_object_get(o, "errors");
	if (v != NULL && (!json_is_array(v) ||
	    json_array_size(v) > RK_ERRORS_MAX)) {
		snprintf(err, errlen, "repl.errors: not an array of at most "
		    "%d", RK_ERRORS_MAX);
		goto out;
	}
	json_array_foreach(v, i, e) {
		struct rk_error *x = &d->errors[i];

		d->nerrors = i + 1;
		if ((rc = str_member(e, "prefix", NULL, marker, &x->prefix,
		    err, errlen)) < 0 || (rc = str_member(e, "ename", NULL,
		    marker, &x->ename, err, errlen)) < 0 ||
		    (rc = str_member(e, "continue", "", marker, &x->cont,
		    err, errlen)) < 0)
			goto out;
		x->discard = json_is_true(json_object_get(e, "discard"));
		x->rest = json_is_true(json_object_get(e, "rest"));
		rc = -EINVAL;
		if (x->prefix[0] == '\0') {
			snprintf(err, errlen, "repl.errors[%zu]: empty prefix",
			    i);
			goto out;
		}
	}
	intr = json_object_get(o, "interrupt");
	if (intr != NULL && !json_is_object(intr)) {
		snprintf(err, errlen, "repl.interrupt: not an object");
		goto out;
	}
	if ((rc = str_member(intr, "write", "", marker, &d->intr_write, err,
	    errlen)) < 0 || (rc = str_member(intr, "signal",
	    d->intr_write[0] != '\0' ? "" : "INT", marker, &sig, err,
	    errlen)) < 0 || (rc = str_member(intr, "ename",
	    "KeyboardInterrupt", marker, &d->intr_ename, err, errlen)) < 0)
		goto out;
	rc = -EINVAL;
	if (sig[0] != '\0' && (d->intr_signal = sig_named(sig)) == 0) {
		snprintf(err, errlen, "repl.interrupt.signal: unknown");
		goto out;
	}
	rc = 0;
out:
	free(sig);
	if (rc < 0) {
		rk_desc_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

/* Free the description. */
void
rk_desc_free(struct rk_desc *d)
{
	if (d == NULL)
		return;
	free_list(d->argv);
	free_list(d->init);
	free(d->program);
	free(d->end);
	free(d->marker);
	free(d->result_open);
	free(d->result_close);
	for (size_t i = 0; i < d->nerrors; i++) {
		free(d->errors[i].prefix);
		free(d->errors[i].ename);
		free(d->errors[i].cont);
	}
	free(d->intr_write);
	free(d->intr_ename);
	free(d->incomplete_ename);
	free(d->language);
	free(d->extension);
	free(d);
}

/* "{file}" replaced by path in argv and in the errors' prefixes. */
void
rk_desc_set_file(struct rk_desc *d, const char *path)
{
	char *t;

	for (size_t i = 0; d->argv[i] != NULL; i++) {
		t = subst_key(d->argv[i], "{file}", path);
		free(d->argv[i]);
		d->argv[i] = t;
	}
	for (size_t i = 0; i < d->nerrors; i++) {
		t = subst_key(d->errors[i].prefix, "{file}", path);
		free(d->errors[i].prefix);
		d->errors[i].prefix = t;
	}
}

/* Bracket and quote balance, as rk_desc.h says. */
const char *
rk_desc_is_complete(const struct rk_desc *d, const char *code)
{
	char stack[256];
	size_t depth = 0;
	const char *p = code;
	char c, q;

	if (!d->brackets)
		return "unknown";
	while ((c = *p++) != '\0') {
		if (c == '/' && *p == '/') {
			while (*p != '\0' && *p != '\n')
				p++;
		} else if (c == '/' && *p == '*') {
			if ((p = strstr(p + 1, "*/")) == NULL)
				return "incomplete";
			p += 2;
		} else if (c == '"' || c == '\'') {
			for (q = c; *p != '\0' && *p != q && *p != '\n'; p++)
				if (*p == '\\' && p[1] != '\0')
					p++;
			if (*p != q)
				return "invalid";
			p++;
		} else if (c == '(' || c == '[' || c == '{') {
			if (depth == sizeof(stack))
				return "invalid";
			stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
		} else if (c == ')' || c == ']' || c == '}') {
			if (depth == 0 || stack[--depth] != c)
				return "invalid";
		}
	}
	return depth > 0 ? "incomplete" : "complete";
}

/* The kernelspec in dir and its description. */
int
rk_desc_load(const char *dir, const char *marker,
    struct kp_kernelspec **specp, struct rk_desc **out, char *err,
    size_t errlen)
{
	struct kp_kernelspec *spec = NULL;
	char path[4096], msg[256], *text = NULL;
	FILE *f;
	long n;
	int rc = -EINVAL;

	snprintf(path, sizeof(path), "%s/kernel.json", dir);
	if ((f = fopen(path, "re")) == NULL) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 ||
	    n > (1 << 20) || fseek(f, 0, SEEK_SET) < 0) {
		snprintf(err, errlen, "%s: unreadable or over 1 MiB", path);
		goto out;
	}
	text = must(malloc((size_t)n + 1));
	if (fread(text, 1, (size_t)n, f) != (size_t)n) {
		snprintf(err, errlen, "%s: short read", path);
		goto out;
	}
	if (kp_kernelspec_parse(text, (size_t)n, "repl", dir, &spec, msg,
	    sizeof(msg)) < 0 || rk_desc_parse(json_object_get(
	    spec->metadata, "repl"), marker, out, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	*specp = spec;
	spec = NULL;
	rc = 0;
out:
	kp_kernelspec_free(spec);
	free(text);
	fclose(f);
	return rc;
}
