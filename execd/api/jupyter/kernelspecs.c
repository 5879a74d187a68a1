/*
 * kernelspecs.c -- the Jupyter Server API's kernelspecs: GET
 * /api/kernelspecs[/{name}] and the files of a kernelspec's directory
 * (/kernelspecs/{name}/{file}), in Jupyter Server 2.x's shapes
 * (jupyter_server/services/kernelspecs, kernelspecs/handlers.py).  The
 * specs are the context registry's (context_specs): the ones execd
 * starts its kernels from.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../domain/context.h"
#include "jupyter.h"

/* python's kernelspec, else the first installed; "" when none. */
const char *
jupyter_default_name(void)
{
	const struct kp_kernelspec *const *all = context_specs();
	const struct kp_kernelspec *py = context_spec("python");

	if (py != NULL)
		return py->name;
	return all[0] != NULL ? all[0]->name : "";
}

/* The spec of this exact name, or NULL. */
static const struct kp_kernelspec *
spec_named(const char *name)
{
	const struct kp_kernelspec *const *all = context_specs();

	for (size_t i = 0; all[i] != NULL; i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

/*
 * A kernelspec model: name, spec (kernel.json's fields), resources
 * (kernel.js, kernel.css and logo-* in its directory, by URL).
 */
static json_t *
spec_model(const struct kp_kernelspec *s)
{
	json_t *argv = json_array(), *res = json_object(), *spec;
	char url[PATH_MAX], key[NAME_MAX + 1], *dot;
	struct dirent *e;
	DIR *d;

	for (size_t i = 0; i < s->argc; i++)
		json_array_append_new(argv, json_string(s->argv[i]));
	spec = json_pack("{s:o, s:O, s:s, s:s, s:s, s:O}", "argv", argv,
	    "env", s->env, "display_name", s->display_name, "language",
	    s->language, "interrupt_mode", s->interrupt_mode ==
	    KP_INTERRUPT_MESSAGE ? "message" : "signal", "metadata",
	    s->metadata);
	if ((d = opendir(s->resource_dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, "kernel.js") != 0 &&
			    strcmp(e->d_name, "kernel.css") != 0 &&
			    strncmp(e->d_name, "logo-", 5) != 0)
				continue;
			snprintf(key, sizeof(key), "%s", e->d_name);
			if (strncmp(key, "logo-", 5) == 0 &&
			    (dot = strrchr(key, '.')) != NULL)
				*dot = '\0';
			snprintf(url, sizeof(url), "/kernelspecs/%s/%s",
			    s->name, e->d_name);
			json_object_set_new(res, key, json_string(url));
		}
		closedir(d);
	}
	return json_pack("{s:s, s:o, s:o}", "name", s->name, "spec", spec,
	    "resources", res);
}

/* GET /api/kernelspecs: {"default", "kernelspecs": {name: model}}. */
void
jupyter_kernelspecs(struct http_req *req)
{
	const struct kp_kernelspec *const *all = context_specs();
	json_t *specs = json_object();

	for (size_t i = 0; all[i] != NULL; i++)
		json_object_set_new(specs, all[i]->name, spec_model(all[i]));
	http_reply_json(req, 200, json_pack("{s:s, s:o}", "default",
	    jupyter_default_name(), "kernelspecs", specs));
}

/* GET /api/kernelspecs/{kernel_name} */
void
jupyter_kernelspec(struct http_req *req)
{
	const char *name = http_req_param(req, "kernel_name");
	const struct kp_kernelspec *s = spec_named(name);

	if (s == NULL)
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Kernel spec %s not found", name);
	else
		http_reply_json(req, 200, spec_model(s));
}

/* The Content-Type of a resource file, by its extension. */
static const char *
file_type(const char *name)
{
	static const char *const types[][2] = {
		{ ".png", "image/png" }, { ".svg", "image/svg+xml" },
		{ ".js", "application/javascript" }, { ".css", "text/css" },
		{ ".json", "application/json" }, { ".txt", "text/plain" },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot != NULL && i < sizeof(types) /
	    sizeof(types[0]); i++)
		if (strcmp(dot, types[i][0]) == 0)
			return types[i][1];
	return "application/octet-stream";
}

/*
 * GET /kernelspecs/{kernel_name}/{file}: a file of the kernelspec's
 * directory (logos, kernel.js), never a path out of it or a link.
 */
void
jupyter_kernelspec_file(struct http_req *req)
{
	const char *name = http_req_param(req, "kernel_name");
	const char *file = http_req_param(req, "file");
	const struct kp_kernelspec *s = spec_named(name);
	struct http_resp *r;
	struct stat st;
	int dfd, fd;

	if (s == NULL) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Kernel spec %s not found", name);
		return;
	}
	if (file[0] == '\0' || file[0] == '.' || strchr(file, '/') != NULL ||
	    (dfd = open(s->resource_dir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND, "%s", "Not Found");
		return;
	}
	fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	close(dfd);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		http_reply_error(req, 404, HTTP_E_NOT_FOUND, "%s", "Not Found");
		return;
	}
	r = http_resp_fd(fd, 0, (uint64_t)st.st_size);
	http_resp_header(r, "Content-Type", file_type(file));
	http_reply_resp(req, 200, r);
}
