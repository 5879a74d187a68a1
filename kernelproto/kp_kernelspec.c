/*
 * kp_kernelspec.c -- finding and reading kernelspecs, as Jupyter does.
 *
 * A kernelspec is a directory <data dir>/kernels/<name>/ holding
 * kernel.json (how to start the kernel) and resources such as logos.  This
 * file computes the search path, lists the kernels on it, parses
 * kernel.json and fills in the argv template.  It does not start kernels
 * (execd's kernel.c), install specs or serve their logos.
 *
 * The behaviour follows the installed jupyter_core 4.12 (paths.py
 * jupyter_path, jupyter_data_dir) and jupyter_client 7.4 (kernelspec.py,
 * manager.py format_kernel_cmd), with these deliberate differences:
 * - empty $JUPYTER_PATH entries are ignored (Python turns them into a path
 *   relative to its working directory), and so is an empty $HOME (the
 *   password database is asked instead, as when HOME is unset);
 * - $HOME is not resolved through symbolic links;
 * - $PYTHONUSERBASE plays no part: the user site is always ~/.local, and
 *   the legacy ~/.ipython/kernels is not searched;
 * - execd runs no Python, so "sys.prefix" is every prefix a Python could
 *   have here: $VIRTUAL_ENV, $CONDA_PREFIX, and the parent of each $PATH
 *   directory holding a python3 or python (the parent of its real
 *   location too, for a link), whose share/jupyter is searched after the
 *   user's directories and before the system's, as jupyter_core does by
 *   default; that is where `jupyter kernelspec install --sys-prefix` and
 *   `ipykernel install --sys-prefix` write;
 * - a directory name outside [A-Za-z0-9._-] is skipped and counted rather
 *   than merely warned about, since names end up in URLs and logs;
 * - two directories in one kernels/ directory that differ only in case
 *   are resolved by name order (Python takes whichever listdir returns
 *   last);
 * - no python3 spec is invented from ipykernel's resources when none is
 *   installed.
 * What is kept even where it surprises: names are lowercased (resource_dir
 * keeps the directory's own spelling), and the first directory holding
 * kernel.json claims a name even when that file turns out to be broken, so
 * a broken user spec hides the system one, as in jupyter_client.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/must.h"
#include "kp_kernelspec.h"

#define SPEC_MAX	(1024 * 1024)	/* kernel.json is a few hundred bytes */

/* The state of one kp_kernelspec_find_all. */
struct scan {
	struct kp_kernelspec	**list;
	size_t			  n;
	char			**claimed;	/* names taken, broken or not */
	size_t			  nclaimed;
	size_t			  skipped;
};

static void	 seterr(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static char	*join(const char *, const char *);
static void	 push(char ***, size_t *, char *);
static void	 push_spec(struct scan *, struct kp_kernelspec *);
static char	*home_dir(void);
static bool	 name_ok(const char *);
static bool	 is_type(const char *, mode_t);
static int	 read_file(const char *, char **, size_t *);
static int	 cmp_str(const void *, const void *);
static int	 cmp_spec(const void *, const void *);
static void	 scan_dir(struct scan *, const char *);
static void	 scan_one(struct scan *, const char *, const char *);
static char	*subst(const char *, const char *, const char *);
static void	 prefix_python(const char *, char **);
static void	 push_new(char ***, size_t *, char *);
static void	 push_prefix(char ***, size_t *, const char *, size_t);
static void	 push_pythons(char ***, size_t *);

/* Format a message into err, if the caller gave one. */
static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* "dir/name", with no slash doubled after dir (Python's os.path.join). */
static char *
join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p;

	if (asprintf(&p, "%s%s%s", dir, dl > 0 && dir[dl - 1] == '/' ? "" :
	    "/", name) < 0)
		abort();
	return p;
}

/* Append s (taken) to the NULL-terminated array *v of *n strings. */
static void
push(char ***v, size_t *n, char *s)
{
	*v = must(realloc(*v, (*n + 2) * sizeof(**v)));
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

/* Append ks (taken) to s->list, keeping it NULL-terminated. */
static void
push_spec(struct scan *s, struct kp_kernelspec *ks)
{
	s->list = must(realloc(s->list, (s->n + 2) * sizeof(*s->list)));
	s->list[s->n++] = ks;
	s->list[s->n] = NULL;
}

/*
 * The home directory without trailing slashes ("" for "/"), from $HOME or
 * else the password database; NULL if there is none.
 */
static char *
home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;
	char *s;
	size_t n;

	if (h == NULL || *h == '\0') {
		if ((pw = getpwuid(getuid())) == NULL || *pw->pw_dir == '\0')
			return NULL;
		h = pw->pw_dir;
	}
	s = must_strdup(h);
	n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

/* Whether name is a valid (lowercased) kernel name: [a-z0-9._-]+. */
static bool
name_ok(const char *name)
{
	if (*name == '\0')
		return false;
	for (const char *p = name; *p != '\0'; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') &&
		    *p != '.' && *p != '_' && *p != '-')
			return false;
	return true;
}

/* Whether path, symbolic links followed, is of type fmt (S_IFDIR...). */
static bool
is_type(const char *path, mode_t fmt)
{
	struct stat st;

	return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == fmt;
}

/* Read a whole file of at most SPEC_MAX bytes: 0 or -errno (-EFBIG). */
static int
read_file(const char *path, char **out, size_t *lenp)
{
	char *buf;
	size_t len = 0;
	ssize_t r;
	int fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	buf = must(malloc(SPEC_MAX + 1));
	for (;;) {
		if ((r = read(fd, buf + len, SPEC_MAX + 1 - len)) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > SPEC_MAX) {
			rc = -EFBIG;
			break;
		}
	}
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*lenp = len;
	return 0;
}

/* qsort: strings in byte order. */
static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* qsort: kernelspecs by name. */
static int
cmp_spec(const void *a, const void *b)
{
	return strcmp((*(struct kp_kernelspec *const *)a)->name,
	    (*(struct kp_kernelspec *const *)b)->name);
}

/* See kp_kernelspec.h. */
int
kp_kernelspec_parse(const char *text, size_t n, const char *name,
    const char *resource_dir, struct kp_kernelspec **out, char *err,
    size_t errlen)
{
	struct kp_kernelspec *ks;
	json_error_t jerr;
	json_t *root, *v, *e;
	const char *k, *mode, *near;
	size_t i;
	int rc = -EINVAL;

	if ((root = json_loadb(text, n, 0, &jerr)) == NULL) {
		/* Cut jansson's "near '<text>'": env may hold secrets. */
		near = strstr(jerr.text, " near '");
		seterr(err, errlen, "line %d column %d: %.*s", jerr.line,
		    jerr.column, near != NULL ? (int)(near - jerr.text) :
		    (int)strlen(jerr.text), jerr.text);
		return -EINVAL;
	}
	ks = must(calloc(1, sizeof(*ks)));
	ks->name = must_strdup(name);
	ks->resource_dir = must_strdup(resource_dir);
	if (!json_is_object(root)) {
		seterr(err, errlen, "not a JSON object");
		goto out;
	}
	/* 1. argv: what to run, never empty. */
	if ((v = json_object_get(root, "argv")) == NULL) {
		seterr(err, errlen, "missing argv");
		goto out;
	}
	if (!json_is_array(v) || json_array_size(v) == 0) {
		seterr(err, errlen, "argv: %s", json_is_array(v) ? "empty" :
		    "not an array");
		goto out;
	}
	ks->argv = must(calloc(json_array_size(v) + 1, sizeof(char *)));
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			seterr(err, errlen, "argv[%zu]: not a string", i);
			goto out;
		}
		ks->argv[ks->argc++] = must_strdup(json_string_value(e));
	}
	/* 2. Labels; absent is "", as in jupyter_client's KernelSpec. */
	v = json_object_get(root, "display_name");
	if (v != NULL && !json_is_string(v)) {
		seterr(err, errlen, "display_name: not a string");
		goto out;
	}
	ks->display_name = must_strdup(v != NULL ? json_string_value(v) : "");
	v = json_object_get(root, "language");
	if (v != NULL && !json_is_string(v)) {
		seterr(err, errlen, "language: not a string");
		goto out;
	}
	ks->language = must_strdup(v != NULL ? json_string_value(v) : "");
	/* 3. env: an object of strings, kept as it is. */
	if ((v = json_object_get(root, "env")) != NULL) {
		if (!json_is_object(v)) {
			seterr(err, errlen, "env: not an object");
			goto out;
		}
		json_object_foreach(v, k, e)
			if (!json_is_string(e)) {
				seterr(err, errlen, "env.%.64s: not a string",
				    k);
				goto out;
			}
		ks->env = json_incref(v);
	} else
		ks->env = must(json_object());
	/* 4. interrupt_mode: traitlets' CaselessStrEnum, so any case. */
	ks->interrupt_mode = KP_INTERRUPT_SIGNAL;
	if ((v = json_object_get(root, "interrupt_mode")) != NULL) {
		if (!json_is_string(v)) {
			seterr(err, errlen, "interrupt_mode: not a string");
			goto out;
		}
		mode = json_string_value(v);
		if (strcasecmp(mode, "message") == 0)
			ks->interrupt_mode = KP_INTERRUPT_MESSAGE;
		else if (strcasecmp(mode, "signal") != 0) {
			seterr(err, errlen, "interrupt_mode: \"%.32s\" is not "
			    "signal or message", mode);
			goto out;
		}
	}
	/* 5. metadata: any object, passed on untouched. */
	if ((v = json_object_get(root, "metadata")) != NULL) {
		if (!json_is_object(v)) {
			seterr(err, errlen, "metadata: not an object");
			goto out;
		}
		ks->metadata = json_incref(v);
	} else
		ks->metadata = must(json_object());
	*out = ks;
	ks = NULL;
	rc = 0;
out:
	kp_kernelspec_free(ks);
	json_decref(root);
	return rc;
}

/* See kp_kernelspec.h. */
void
kp_kernelspec_free(struct kp_kernelspec *ks)
{
	if (ks == NULL)
		return;
	free(ks->name);
	free(ks->resource_dir);
	for (size_t i = 0; i < ks->argc; i++)
		free(ks->argv[i]);
	free(ks->argv);
	free(ks->display_name);
	free(ks->language);
	json_decref(ks->env);
	json_decref(ks->metadata);
	free(ks);
}

/*
 * See kp_kernelspec.h.  jupyter_core's jupyter_path(): $JUPYTER_PATH, the
 * user data dir, the user site's share/jupyter if different (Python's
 * site.getuserbase(), ~/.local), then the system dirs.  jupyter_core 4.12
 * does honour $XDG_DATA_HOME on Linux, so we do too.
 */
char **
kp_kernelspec_dirs(void)
{
	const char *jp = getenv("JUPYTER_PATH"), *dd, *xdg, *s, *e;
	char **v = NULL, *home, *data = NULL, *user = NULL;
	size_t n = 0, len;

	/* 1. $JUPYTER_PATH, trailing slashes cut, empty entries dropped. */
	for (s = jp != NULL ? jp : ""; *s != '\0'; s = e) {
		len = strcspn(s, ":");
		e = s + len + (s[len] == ':');
		while (len > 0 && s[len - 1] == '/')
			len--;
		if (len > 0)
			push(&v, &n, must(strndup(s, len)));
	}
	/* 2. The user's data dir, then the user site's. */
	home = home_dir();
	if (home != NULL) {
		if (asprintf(&user, "%s/.local/share/jupyter", home) < 0)
			abort();
	}
	if ((dd = getenv("JUPYTER_DATA_DIR")) != NULL && *dd != '\0')
		data = must_strdup(dd);
	else if ((xdg = getenv("XDG_DATA_HOME")) != NULL && *xdg != '\0')
		data = join(xdg, "jupyter");
	else if (user != NULL)
		data = must_strdup(user);
	if (data != NULL)
		push(&v, &n, data);
	if (user != NULL && (data == NULL || strcmp(user, data) != 0))
		push(&v, &n, user);
	else
		free(user);
	free(home);
	/* 3. Every Python's sys.prefix, then the system. */
	push_pythons(&v, &n);
	push(&v, &n, must_strdup("/usr/local/share/jupyter"));
	push(&v, &n, must_strdup("/usr/share/jupyter"));
	return v;
}

/* Append s (taken) unless *v has it already; then free it. */
static void
push_new(char ***v, size_t *n, char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], s) == 0) {
			free(s);
			return;
		}
	push(v, n, s);
}

/*
 * Append <prefix>/share/jupyter for the len bytes of prefix (trailing
 * slashes cut), unless it is listed, or is a system directory, which keeps
 * its place at the end.
 */
static void
push_prefix(char ***v, size_t *n, const char *prefix, size_t len)
{
	char *d;

	while (len > 0 && prefix[len - 1] == '/')
		len--;
	if (len == 0 || prefix[0] != '/')
		return;
	if (asprintf(&d, "%.*s/share/jupyter", (int)len, prefix) < 0)
		abort();
	if (strcmp(d, "/usr/share/jupyter") == 0 ||
	    strcmp(d, "/usr/local/share/jupyter") == 0) {
		free(d);
		return;
	}
	push_new(v, n, d);
}

/*
 * The prefixes of the Pythons a kernelspec installer may have used:
 * $VIRTUAL_ENV, $CONDA_PREFIX, then for each absolute <dir>/bin on $PATH
 * holding an executable python3 or python, <dir>, and the prefix of that
 * file's real location when it is a link into another <dir>/bin.
 */
static void
push_pythons(char ***v, size_t *n)
{
	static const char *const exe[] = { "python3", "python" };
	const char *path = getenv("PATH"), *s, *e;
	char *f, *real, *slash;
	size_t len;

	if ((s = getenv("VIRTUAL_ENV")) != NULL)
		push_prefix(v, n, s, strlen(s));
	if ((s = getenv("CONDA_PREFIX")) != NULL)
		push_prefix(v, n, s, strlen(s));
	for (s = path != NULL ? path : ""; *s != '\0'; s = e) {
		len = strcspn(s, ":");
		e = s + len + (s[len] == ':');
		while (len > 1 && s[len - 1] == '/')
			len--;
		if (len < 5 || s[0] != '/' || strncmp(s + len - 4, "/bin", 4))
			continue;
		for (size_t i = 0; i < sizeof(exe) / sizeof(exe[0]); i++) {
			if (asprintf(&f, "%.*s/%s", (int)len, s, exe[i]) < 0)
				abort();
			if (!is_type(f, S_IFREG) || access(f, X_OK) != 0) {
				free(f);
				continue;
			}
			push_prefix(v, n, s, len - 4);
			real = realpath(f, NULL);
			free(f);
			if (real != NULL && (slash = strrchr(real, '/')) != NULL
			    && slash - real >= 4 &&
			    strncmp(slash - 4, "/bin", 4) == 0)
				push_prefix(v, n, real, (size_t)(slash - 4 -
				    real));
			free(real);
			break;
		}
	}
}

/* See kp_kernelspec.h. */
void
kp_kernelspec_dirs_free(char **dirs)
{
	if (dirs == NULL)
		return;
	for (size_t i = 0; dirs[i] != NULL; i++)
		free(dirs[i]);
	free(dirs);
}

/*
 * Consider <kdir>/<entry> as a kernelspec: add it to s->list, count it as
 * skipped, or ignore it (no kernel.json, or a name already taken).
 */
static void
scan_one(struct scan *s, const char *kdir, const char *entry)
{
	struct kp_kernelspec *ks;
	char *path, *json = NULL, *name = NULL, *text = NULL;
	size_t len = 0;

	/* 1. A directory with a kernel.json file (kernelspec.py). */
	path = join(kdir, entry);
	json = join(path, "kernel.json");
	if (!is_type(path, S_IFDIR) || !is_type(json, S_IFREG))
		goto out;
	/* 2. The name: lowercased, valid, and not claimed earlier. */
	name = must_strdup(entry);
	for (char *p = name; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	if (!name_ok(name)) {
		s->skipped++;
		goto out;
	}
	for (size_t i = 0; i < s->nclaimed; i++)
		if (strcmp(s->claimed[i], name) == 0)
			goto out;
	push(&s->claimed, &s->nclaimed, must_strdup(name));
	/* 3. The spec; a broken one keeps its name claimed. */
	if (read_file(json, &text, &len) < 0) {
		s->skipped++;
		goto out;
	}
	if (kp_kernelspec_parse(text, len, name, path, &ks, NULL, 0) == 0)
		push_spec(s, ks);
	else
		s->skipped++;
	free(text);
out:
	free(name);
	free(json);
	free(path);
}

/* Add the kernelspecs of <dir>/kernels, in name order, to s. */
static void
scan_dir(struct scan *s, const char *dir)
{
	struct dirent *de;
	char *kdir, **names = NULL;
	size_t n = 0;
	DIR *d;

	kdir = join(dir, "kernels");
	/* Missing or unreadable: nothing here, as for Jupyter. */
	if ((d = opendir(kdir)) == NULL) {
		free(kdir);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			push(&names, &n, must_strdup(de->d_name));
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		scan_one(s, kdir, names[i]);
		free(names[i]);
	}
	free(names);
	free(kdir);
}

/* See kp_kernelspec.h. */
int
kp_kernelspec_find_all(char *const *dirs, struct kp_kernelspec ***out,
    size_t *skipped)
{
	struct scan s;

	memset(&s, 0, sizeof(s));
	for (size_t i = 0; dirs != NULL && dirs[i] != NULL; i++)
		scan_dir(&s, dirs[i]);
	if (s.n > 0)
		qsort(s.list, s.n, sizeof(*s.list), cmp_spec);
	else
		s.list = must(calloc(1, sizeof(*s.list)));
	for (size_t i = 0; i < s.nclaimed; i++)
		free(s.claimed[i]);
	free(s.claimed);
	*out = s.list;
	if (skipped != NULL)
		*skipped = s.skipped;
	return 0;
}

/* See kp_kernelspec.h. */
void
kp_kernelspec_list_free(struct kp_kernelspec **list)
{
	if (list == NULL)
		return;
	for (size_t i = 0; list[i] != NULL; i++)
		kp_kernelspec_free(list[i]);
	free(list);
}

/*
 * s with every {connection_file} and {resource_dir} replaced, in one pass
 * from the left as jupyter_client's re.sub does: replaced text is never
 * scanned again.
 */
static char *
subst(const char *s, const char *cf, const char *rd)
{
	static const char cfk[] = "{connection_file}", rdk[] = "{resource_dir}";
	const size_t cfkl = sizeof(cfk) - 1, rdkl = sizeof(rdk) - 1;
	size_t cfl = strlen(cf), rdl = strlen(rd), n = 0;
	const char *p;
	char *out = NULL;

	/* Pass 0 measures, pass 1 copies. */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			out = must(malloc(n + 1));
		n = 0;
		for (p = s; *p != '\0';) {
			if (strncmp(p, cfk, cfkl) == 0) {
				if (out != NULL)
					memcpy(out + n, cf, cfl);
				n += cfl;
				p += cfkl;
			} else if (strncmp(p, rdk, rdkl) == 0) {
				if (out != NULL)
					memcpy(out + n, rd, rdl);
				n += rdl;
				p += rdkl;
			} else {
				if (out != NULL)
					out[n] = *p;
				n++;
				p++;
			}
		}
	}
	out[n] = '\0';
	return out;
}

/*
 * A bare "python" or "python3" in *arg0 becomes <P>/bin/python3 when the
 * spec lives in <P>/share/jupyter/kernels/<name> and that file is
 * executable: Jupyter puts its own interpreter there (Debian's octave spec
 * says "python", which plain Debian lacks), and the interpreter of the
 * spec's own prefix is the one its package was installed for.
 */
static void
prefix_python(const char *rd, char **arg0)
{
	static const char tail[] = "/share/jupyter/kernels/";
	const char *slash = strrchr(rd, '/'), *p;
	char *py;
	size_t plen;

	if (strcmp(*arg0, "python") != 0 && strcmp(*arg0, "python3") != 0)
		return;
	if (slash == NULL || (size_t)(slash - rd) + 1 < sizeof(tail) - 1)
		return;
	p = slash + 1 - (sizeof(tail) - 1);
	if (strncmp(p, tail, sizeof(tail) - 1) != 0 ||
	    strchr(slash + 1, '/') != NULL || slash[1] == '\0')
		return;
	plen = (size_t)(p - rd);
	if (asprintf(&py, "%.*s/bin/python3", (int)plen, rd) < 0)
		abort();
	if (access(py, X_OK) != 0) {
		free(py);
		return;
	}
	free(*arg0);
	*arg0 = py;
}

/* See kp_kernelspec.h.  NULL (EINVAL) only if connection_file is NULL. */
char **
kp_kernelspec_argv(const struct kp_kernelspec *ks,
    const char *connection_file)
{
	char **argv;

	if (connection_file == NULL) {
		errno = EINVAL;
		return NULL;
	}
	argv = must(calloc(ks->argc + 1, sizeof(*argv)));
	for (size_t i = 0; i < ks->argc; i++)
		argv[i] = subst(ks->argv[i], connection_file,
		    ks->resource_dir);
	prefix_python(ks->resource_dir, &argv[0]);
	return argv;
}
