/*
 * cmdreq.c -- the body of POST /command, checked (cmdreq.h).
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../fs/fs_path.h"
#include "../../../util/buf.h"
#include "../../config/conf.h"
#include "../../process/envfile.h"
#include "../../transport/body.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "cmdreq.h"

/*
 * Exactly one of a non-empty command and an argv list of strings whose
 * first is not empty, none with a NUL: upstream's rules and words (its
 * decoding stage, then its validation).  0, or -1 with the reply sent.
 */
static int
check_what(struct http_req *req, json_t *body, struct cmd_req *r)
{
	json_t *c = json_object_get(body, "command");
	json_t *a = json_object_get(body, "argv"), *v;
	size_t i;

	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			http_reply_error(req, 400, HTTP_E_BODY, "error parsing "
			    "request, MAYBE invalid body format. argv "
			    "elements must be strings: argv[%zu] is %s", i,
			    json_is_null(v) ? "null" : json_is_object(v) ?
			    "an object" : json_is_array(v) ? "an array" :
			    json_is_boolean(v) ? "a boolean" : "a number");
			return -1;
		}
	}
	if ((c != NULL) == (a != NULL) || (c != NULL &&
	    json_string_length(c) == 0) || (a != NULL && !json_is_array(a))) {
		http_reply_error(req, 400, HTTP_E_BODY, "error parsing request, "
		    "MAYBE invalid body format. exactly one of non-empty "
		    "command or argv is required");
		return -1;
	}
	if (c != NULL) {
		r->command = json_string_value(c);
		return 0;
	}
	if (json_array_size(a) == 0 ||
	    json_string_length(json_array_get(a, 0)) == 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "argv must contain a non-empty executable");
		return -1;
	}
	json_array_foreach(a, i, v) {
		if (strlen(json_string_value(v)) != json_string_length(v)) {
			http_reply_error(req, 400, HTTP_E_BODY, "invalid "
			    "request, argv must not contain NUL: argv[%zu] "
			    "does", i);
			return -1;
		}
	}
	r->argv = a;
	return 0;
}

/*
 * The working directory, its $NAME, ${NAME} and ~ expanded as upstream
 * expands them (with the variables the command gets), into r->cwd; on
 * failure err says why and -1 is returned.
 */
static int
check_cwd(const char *cwd, struct cmd_req *r, char *err, size_t errlen)
{
	char why[512];
	struct buf exp;
	int rc = -1;

	buf_init_max(&exp, PATH_MAX);
	if (envfile_expand_path(cwd, r->overlay, &exp, why,
	    sizeof(why)) < 0) {
		snprintf(err, errlen, "cannot resolve working directory "
		    "\"%s\": %s", cwd, why);
		goto out;
	}
	if (exp.full || fs_path_resolve(exp.p, exp.len, NULL, r->cwd,
	    sizeof(r->cwd)) < 0) {
		snprintf(err, errlen, "invalid working directory '%s': it "
		    "must be absolute or start with ~%s", cwd,
		    strcmp(cwd, exp.full ? "" : exp.p) != 0 ? " once its "
		    "variables are expanded" : "");
		goto out;
	}
	snprintf(r->cwd_text, sizeof(r->cwd_text), "%s", cwd);
	r->has_cwd = true;
	rc = 0;
out:
	buf_reset(&exp);
	return rc;
}

/* Check the body into r; see cmdreq.h. */
int
cmdreq_check(struct http_req *req, json_t *body, struct cmd_req *r)
{
	char err[1024];
	const char *cwd, *k;
	long long uid, gid;
	json_t *v, *envs;

	memset(r, 0, sizeof(*r));
	if (check_what(req, body, r) < 0)
		return -1;
	conf_limits(((struct execd *)http_req_app(req))->conf,
	    LIMITS_COMMAND, NULL, &r->limits);
	if ((v = json_object_get(body, "limits")) != NULL &&
	    !json_is_null(v) && limits_from_json(&r->limits, v, err,
	    sizeof(err)) < 0)
		goto bad;
	r->background = json_is_true(json_object_get(body, "background"));
	r->stdin_pipe = json_is_true(json_object_get(body, "stdin"));
	r->timeout_ms = body_int(body, "timeout", 0);
	if (r->timeout_ms < 0) {
		snprintf(err, sizeof(err), "field 'timeout' must not be "
		    "negative");
		goto bad;
	}
	envs = json_object_get(body, "envs");
	json_object_foreach(envs, k, v) {
		if (!json_is_string(v) || k[0] == '\0' ||
		    strchr(k, '=') != NULL) {
			snprintf(err, sizeof(err), "field 'envs.%s' must be a "
			    "string under a name without '='", k);
			goto bad;
		}
	}
	/* Read once: the cwd is checked with what the command gets. */
	r->overlay = envfile_overlay(envs);
	uid = body_int(body, "uid", -1);
	gid = body_int(body, "gid", -1);
	if (json_object_get(body, "gid") != NULL && !json_is_null(
	    json_object_get(body, "gid")) && uid < 0 &&
	    json_object_get(body, "uid") == NULL) {
		snprintf(err, sizeof(err), "uid is required when gid is "
		    "provided");
		goto bad;
	}
	if ((json_is_integer(json_object_get(body, "uid")) && (uid < 0 ||
	    uid >= UINT32_MAX)) || (json_is_integer(json_object_get(body,
	    "gid")) && (gid < 0 || gid >= UINT32_MAX))) {
		snprintf(err, sizeof(err), "uid and gid must be between 0 and "
		    "4294967294");
		goto bad;
	}
	if (uid >= 0) {
		/* Looked up in cmdreq_resolve(). */
		r->set_ids = true;
		r->uid = (uid_t)uid;
		r->gid_given = gid >= 0;
		r->gid = gid >= 0 ? (gid_t)gid : 0;
	}
	cwd = body_str(body, "cwd", "");
	if (cwd[0] != '\0' && check_cwd(cwd, r, err, sizeof(err)) < 0)
		goto bad;
	return 0;
bad:
	http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s", err);
	return -1;
}

/* The user and the working directory, looked up; see cmdreq.h. */
int
cmdreq_resolve(struct cmd_req *r, char *err, size_t errlen)
{
	struct passwd pwd, *pw = NULL;
	struct stat st;
	char pwbuf[16384];
	int rc;

	if (r->set_ids) {
		rc = getpwuid_r(r->uid, &pwd, pwbuf, sizeof(pwbuf), &pw);
		if (pw == NULL) {
			snprintf(err, errlen, "unknown uid %lu: %s",
			    (unsigned long)r->uid, rc == 0 ? "no such user "
			    "in the user database" : strerror(rc));
			return -1;
		}
		if (!r->gid_given)
			r->gid = pw->pw_gid;
		r->ngroups = CMDREQ_MAX_GROUPS;
		if (getgrouplist(pw->pw_name, r->gid, r->groups,
		    &r->ngroups) < 0)
			r->ngroups = 0;
	}
	if (!r->has_cwd)
		return 0;
	if (stat(r->cwd, &st) < 0) {
		if (errno == ENOENT)
			snprintf(err, errlen, "working directory does not "
			    "exist: %s", r->cwd_text);
		else
			snprintf(err, errlen, "cannot access working directory "
			    "\"%s\": %s", r->cwd_text, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "working directory path is not a "
		    "directory: %s", r->cwd_text);
		return -1;
	}
	return 0;
}
