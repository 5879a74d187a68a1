/*
 * policy.c -- print the options in force as a YAML policy file (see
 * policy.h), and the policy_ names of conf.c's reader.
 *
 * The printer writes the shapes conf.c reads, with every option's help as
 * a comment, values quoted only when YAML would read them otherwise.
 * Which keys exist is conf.c's table, read through conf_key_get and
 * conf_key_value: this file holds no list of options.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "../process/limits.h"
#include "conf.h"
#include "policy.h"

static bool	null_text(const char *);
static void	put_value(FILE *, const char *);
static void	put_comment(FILE *, const char *);
static void	put_limits(FILE *, const struct limits *);
static void	put_mcp_servers(FILE *, const struct conf *);
static void	put_services(FILE *, const struct conf *);
static void	put_words(FILE *, const char *, char *const *, bool);

/* Read the file at path over c; see conf.h. */
int
policy_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	return conf_file_load(c, path, err, errlen);
}

/* Read len bytes at text over c; see conf.h. */
int
policy_parse(struct conf *c, const char *name, const char *text, size_t len,
    char *err, size_t errlen)
{
	return conf_file_parse(c, name, text, len, err, errlen);
}

/* Text that YAML reads as null when it is written plain. */
static bool
null_text(const char *v)
{
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0;
}

/* --- printing ------------------------------------------------------------ */

/* A value, plain when YAML reads it back as the same text, else quoted. */
static void
put_value(FILE *f, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/,=+@%:";
	size_t n = strlen(s);

	if (n > 0 && (isalnum((unsigned char)s[0]) || s[0] == '/' ||
	    s[0] == '.') && strspn(s, safe) == n && s[n - 1] != ':' &&
	    !null_text(s)) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s != '\0'; s++) {
		/* YAML folds its line breaks NEL, LS and PS: escaped. */
		if (strncmp(s, "\xc2\x85", 2) == 0) {
			fputs("\\N", f);
			s++;
		} else if (strncmp(s, "\xe2\x80\xa8", 3) == 0 ||
		    strncmp(s, "\xe2\x80\xa9", 3) == 0) {
			fputs(s[2] == '\xa8' ? "\\L" : "\\P", f);
			s += 2;
		} else if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s);
		} else if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\x%02x", (unsigned char)*s);
		} else if (s[0] == '\xc2' && (unsigned char)s[1] >= 0x80 &&
		    (unsigned char)s[1] <= 0x9f) {
			/* The other C1 controls: YAML refuses them raw. */
			fprintf(f, "\\x%02x", (unsigned char)s[1]);
			s++;
		} else if (strncmp(s, "\xef\xbf\xbe", 3) == 0 ||
		    strncmp(s, "\xef\xbf\xbf", 3) == 0) {
			/* U+FFFE and U+FFFF: not characters, escaped. */
			fprintf(f, "\\u%s", s[2] == '\xbe' ? "fffe" : "ffff");
			s += 2;
		} else {
			fputc(*s, f);
		}
	}
	fputc('"', f);
}

/* text as "# " lines, wrapped before 78 columns. */
static void
put_comment(FILE *f, const char *text)
{
	const char *p = text, *brk;
	size_t n;

	while (*p != '\0') {
		n = strlen(p);
		if (n > 74) {
			for (brk = p + 74; brk > p && *brk != ' '; brk--)
				;
			n = brk > p ? (size_t)(brk - p) : 74;
		}
		fprintf(f, "# %.*s\n", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

/* One mapping of limits, in flow style: {memory: 268435456, core: 0}. */
static void
put_limits(FILE *f, const struct limits *l)
{
	json_t *o = limits_json(l), *v;
	const char *k;
	bool first = true;

	fputc('{', f);
	json_object_foreach(o, k, v) {
		fprintf(f, "%s%s: ", first ? "" : ", ", k);
		if (json_is_integer(v))
			fprintf(f, "%" JSON_INTEGER_FORMAT,
			    json_integer_value(v));
		else
			put_value(f, json_string_value(v));
		first = false;
	}
	fputs("}\n", f);
	json_decref(o);
}

/* mcp_servers, in block style (a word may hold a comma). */
static void
put_mcp_servers(FILE *f, const struct conf *c)
{
	const struct conf_mcp_server *m;
	const char *eq;
	char name[256];

	fputc('\n', f);
	put_comment(f, "MCP servers /mcp offers the tools of, as "
	    "NAME__tool: each a command (a list: the program, then its "
	    "arguments) with env and cwd, run on stdio under the policy of "
	    "commands when first needed, or the url of one listening on "
	    "loopback.  See docs/mcp.md.");
	if (c->nmcp_servers == 0) {
		fputs("# mcp_servers:\n", f);
		return;
	}
	fputs("mcp_servers:\n", f);
	for (size_t i = 0; i < c->nmcp_servers; i++) {
		m = &c->mcp_servers[i];
		fprintf(f, "  %s:\n", m->name);
		if (m->url != NULL) {
			fputs("    url: ", f);
			put_value(f, m->url);
			fputc('\n', f);
			continue;
		}
		fputs("    command:\n", f);
		for (size_t k = 0; m->argv[k] != NULL; k++) {
			fputs("      - ", f);
			put_value(f, m->argv[k]);
			fputc('\n', f);
		}
		if (m->env != NULL && m->env[0] != NULL) {
			fputs("    env:\n", f);
			for (size_t k = 0; m->env[k] != NULL; k++) {
				eq = strchr(m->env[k], '=');
				snprintf(name, sizeof(name), "%.*s",
				    (int)(eq - m->env[k]), m->env[k]);
				fputs("      ", f);
				put_value(f, name);	/* "null" quoted */
				fputs(": ", f);
				put_value(f, eq + 1);
				fputc('\n', f);
			}
		}
		if (m->cwd != NULL) {
			fputs("    cwd: ", f);
			put_value(f, m->cwd);
			fputc('\n', f);
		}
	}
}

/* A command (a list) or env (a mapping) of a service, in block style. */
static void
put_words(FILE *f, const char *key, char *const *w, bool env)
{
	const char *eq;
	char name[256];

	if (w == NULL || w[0] == NULL)
		return;
	fprintf(f, "    %s:\n", key);
	for (size_t k = 0; w[k] != NULL; k++) {
		if (!env) {
			fputs("      - ", f);
			put_value(f, w[k]);
			fputc('\n', f);
			continue;
		}
		eq = strchr(w[k], '=');
		snprintf(name, sizeof(name), "%.*s", (int)(eq - w[k]), w[k]);
		fputs("      ", f);
		put_value(f, name);
		fputs(": ", f);
		put_value(f, eq + 1);
		fputc('\n', f);
	}
}

/* services, in their order. */
static void
put_services(FILE *f, const struct conf *c)
{
	static const char *const restarts[] = { "always", "on-failure",
	    "never" };
	const struct conf_service *v;

	fputc('\n', f);
	put_comment(f, "Services execd starts in this order as jobs under "
	    "the policy of commands, restarts with backoff when they end "
	    "(restart: always, on-failure or never), stops when it stops, "
	    "and reports at GET /services; after: an earlier service that "
	    "must be running and ready first; ready: a path that exists "
	    "once a service is ready.  See docs/desktop.md.");
	if (c->nservices == 0) {
		fputs("# services:\n", f);
		return;
	}
	fputs("services:\n", f);
	for (size_t i = 0; i < c->nservices; i++) {
		v = &c->services[i];
		fprintf(f, "  %s:\n", v->name);
		put_words(f, "command", v->argv, false);
		put_words(f, "env", v->env, true);
		if (v->cwd != NULL) {
			fputs("    cwd: ", f);
			put_value(f, v->cwd);
			fputc('\n', f);
		}
		if (v->after[0] != '\0') {
			fputs("    after: ", f);
			put_value(f, v->after);
			fputc('\n', f);
		}
		if (v->ready != NULL) {
			fputs("    ready: ", f);
			put_value(f, v->ready);
			fputc('\n', f);
		}
		fprintf(f, "    restart: %s\n", restarts[v->restart]);
	}
}

/* The options in force as a policy file; see policy.h. */
void
policy_print(const struct conf *c, FILE *f)
{
	struct conf_key k;
	const char *v;

	fputs("# execd policy: the options in force, as execd --config FILE "
	    "reads them.\n# The command line and EXECD_* variables go over "
	    "the file.  The access\n# token is never printed.\n", f);
	for (size_t i = 0; conf_key_get(i, &k) == 0; i++) {
		if (strcmp(k.key, "limit") == 0)
			continue;	/* in force below, as limits */
		fputc('\n', f);
		put_comment(f, k.help);
		if (k.secret) {
			fprintf(f, "# %s: never printed\n", k.key);
			continue;
		}
		if ((v = conf_key_value(c, i)) == NULL) {
			fprintf(f, "# %s:\n", k.key);
			continue;
		}
		fprintf(f, "%s: ", k.key);
		put_value(f, v);
		fputc('\n', f);
	}
	fputc('\n', f);
	put_comment(f, "Resource limits of new jobs by kind, and of contexts "
	    "by language (over context): memory, processes, cpu_seconds, "
	    "file_size, open_files, core; sizes in bytes or with K, M, G, T "
	    "(binary, e.g. 256MiB); unlimited lifts one.  A request's "
	    "\"limits\" object goes over these.");
	fputs("limits:\n", f);
	for (int i = 0; i < LIMITS_NKINDS; i++) {
		fprintf(f, "  %s: ", limits_kind_name((enum limits_kind)i));
		put_limits(f, &c->limits[i]);
	}
	fputs("  languages:", f);
	if (c->nlang_limits == 0)
		fputs(" {}", f);
	fputc('\n', f);
	for (size_t i = 0; i < c->nlang_limits; i++) {
		fprintf(f, "    %s: ", c->lang_limits[i].lang);
		put_limits(f, &c->lang_limits[i].l);
	}
	put_mcp_servers(f, c);
	put_services(f, c);
}
