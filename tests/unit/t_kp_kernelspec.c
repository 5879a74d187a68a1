/*
 * t_kp_kernelspec.c -- unit tests for kp_kernelspec.c.
 *
 * Parsing is checked on Debian's python3 kernel.json byte for byte, on
 * env, interrupt_mode in any case, defaults, and every refusal with its
 * message.  The search path is computed under chosen JUPYTER_PATH,
 * JUPYTER_DATA_DIR, XDG_DATA_HOME and HOME (set with setenv) and compared
 * with what jupyter_core 4.12's jupyter_path() printed for the same
 * settings.  Discovery runs on trees built in a fresh temporary directory
 * (in $TMPDIR, else /tmp): first match wins, names are lowercased, output
 * is sorted, broken files and bad names are skipped and counted, and a
 * broken spec still hides a later one of its name, as in jupyter_client.
 * argv substitution is checked for every occurrence and for a single
 * pass.  Last, the installed /usr/share/jupyter/kernels/python3 is read
 * if it is there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../kernelproto/kp_kernelspec.h"
#include "../t.h"
#include "../t_tmp.h"

/* Debian 12's /usr/share/jupyter/kernels/python3/kernel.json, exactly. */
static const char debian_spec[] =
    "{\n"
    " \"argv\": [\n"
    "  \"/usr/bin/python3\",\n"
    "  \"-m\",\n"
    "  \"ipykernel_launcher\",\n"
    "  \"-f\",\n"
    "  \"{connection_file}\"\n"
    " ],\n"
    " \"display_name\": \"Python 3 (ipykernel)\",\n"
    " \"language\": \"python\",\n"
    " \"metadata\": {\n"
    "  \"debugger\": true\n"
    " }\n"
    "}";

#define SYSTEM_PYTHON3	"/usr/share/jupyter/kernels/python3/kernel.json"

static int	 parse(const char *, struct kp_kernelspec **, char *, size_t);
static void	 put(const char *, const char *, const char *);
static char	*cat(const char *, const char *);
static void	 env_clear(void);
static void	 check_dirs(const char *const *);

/* kp_kernelspec_parse on a C string, as kernel "k" in "/r". */
static int
parse(const char *text, struct kp_kernelspec **ks, char *err, size_t errlen)
{
	return kp_kernelspec_parse(text, strlen(text), "k", "/r", ks, err,
	    errlen);
}

/* "a/b", allocated. */
static char *
cat(const char *a, const char *b)
{
	char *p;

	if (asprintf(&p, "%s/%s", a, b) < 0)
		abort();
	return p;
}

/* Create root/rel/ (and parents) and, if text, rel/kernel.json in it. */
static void
put(const char *root, const char *rel, const char *text)
{
	char *path = cat(root, rel), *json;
	FILE *f;

	for (char *p = path + strlen(root) + 1; *p != '\0'; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0700);
			*p = '/';
		}
	mkdir(path, 0700);
	if (text != NULL) {
		json = cat(path, "kernel.json");
		if ((f = fopen(json, "w")) == NULL) {
			perror(json);
			exit(1);
		}
		fputs(text, f);
		fclose(f);
		free(json);
	}
	free(path);
}

/* Unset every variable the search path depends on. */
static void
env_clear(void)
{
	unsetenv("JUPYTER_PATH");
	unsetenv("JUPYTER_DATA_DIR");
	unsetenv("XDG_DATA_HOME");
	unsetenv("HOME");
	unsetenv("PATH");
	unsetenv("VIRTUAL_ENV");
	unsetenv("CONDA_PREFIX");
}

/* kp_kernelspec_dirs() must be exactly want (NULL-terminated). */
static void
check_dirs(const char *const *want)
{
	char **dirs = kp_kernelspec_dirs();
	size_t i;

	T_OK(dirs != NULL);
	if (dirs == NULL)
		return;
	for (i = 0; want[i] != NULL && dirs[i] != NULL; i++)
		T_EQ_STR(dirs[i], want[i]);
	T_OK(want[i] == NULL && dirs[i] == NULL);
	kp_kernelspec_dirs_free(dirs);
}

static void
test_parse_debian(void)
{
	static const char *const argv[] = { "/usr/bin/python3", "-m",
	    "ipykernel_launcher", "-f", "{connection_file}" };
	struct kp_kernelspec *ks = NULL;
	char err[256] = "";

	T_EQ_INT(kp_kernelspec_parse(debian_spec, strlen(debian_spec),
	    "python3", "/usr/share/jupyter/kernels/python3", &ks, err,
	    sizeof(err)), 0);
	T_EQ_STR(err, "");
	T_OK(ks != NULL);
	if (ks == NULL)
		return;
	T_EQ_STR(ks->name, "python3");
	T_EQ_STR(ks->resource_dir, "/usr/share/jupyter/kernels/python3");
	T_EQ_INT(ks->argc, 5);
	for (size_t i = 0; i < 5 && i < ks->argc; i++)
		T_EQ_STR(ks->argv[i], argv[i]);
	T_OK(ks->argv[ks->argc] == NULL);
	T_EQ_STR(ks->display_name, "Python 3 (ipykernel)");
	T_EQ_STR(ks->language, "python");
	T_EQ_INT(ks->interrupt_mode, KP_INTERRUPT_SIGNAL);
	T_OK(json_is_object(ks->env) && json_object_size(ks->env) == 0);
	T_OK(json_is_object(ks->metadata));
	T_OK(json_is_true(json_object_get(ks->metadata, "debugger")));
	kp_kernelspec_free(ks);
}

static void
test_parse_env_and_mode(void)
{
	struct kp_kernelspec *ks = NULL;
	char err[256];

	T_EQ_INT(parse("{\"argv\":[\"k\"],\"env\":{\"A\":\"1\",\"B\":\"\"},"
	    "\"interrupt_mode\":\"message\",\"unknown\":[null]}", &ks, err,
	    sizeof(err)), 0);
	if (ks != NULL) {
		T_EQ_INT(json_object_size(ks->env), 2);
		T_EQ_STR(json_string_value(json_object_get(ks->env, "A")),
		    "1");
		T_EQ_STR(json_string_value(json_object_get(ks->env, "B")), "");
		T_EQ_INT(ks->interrupt_mode, KP_INTERRUPT_MESSAGE);
		/* Absent labels are "", as in jupyter_client. */
		T_EQ_STR(ks->display_name, "");
		T_EQ_STR(ks->language, "");
		T_OK(json_is_object(ks->metadata));
		kp_kernelspec_free(ks);
	}
	/* traitlets' CaselessStrEnum: any case will do. */
	ks = NULL;
	T_EQ_INT(parse("{\"argv\":[\"k\"],\"interrupt_mode\":\"MESSAGE\"}", &ks,
	    err, sizeof(err)), 0);
	if (ks != NULL)
		T_EQ_INT(ks->interrupt_mode, KP_INTERRUPT_MESSAGE);
	kp_kernelspec_free(ks);
	ks = NULL;
	T_EQ_INT(parse("{\"argv\":[\"k\"],\"interrupt_mode\":\"Signal\"}", &ks,
	    err, sizeof(err)), 0);
	if (ks != NULL)
		T_EQ_INT(ks->interrupt_mode, KP_INTERRUPT_SIGNAL);
	kp_kernelspec_free(ks);
	kp_kernelspec_free(NULL);
}

static void
test_parse_errors(void)
{
	static const struct {
		const char	*text, *msg;
	} cases[] = {
		{ "", "line 1 column 0: '[' or '{' expected near end of "
		    "file" },
		{ "{\"argv\":[\"a\\u0000\"]}", "line 1 column 18: \\u0000 is "
		    "not allowed without JSON_ALLOW_NUL" },
		{ "{\"argv\":[\"a\"],\"env\":{\"T\":\"secret", "line 1 "
		    "column 32: premature end of input" },
		{ "[\"argv\"]", "not a JSON object" },
		{ "{}", "missing argv" },
		{ "{\"argv\":\"python3 -f x\"}", "argv: not an array" },
		{ "{\"argv\":[]}", "argv: empty" },
		{ "{\"argv\":[\"a\",1]}", "argv[1]: not a string" },
		{ "{\"argv\":[\"a\",null]}", "argv[1]: not a string" },
		{ "{\"argv\":[\"a\"],\"display_name\":7}",
		    "display_name: not a string" },
		{ "{\"argv\":[\"a\"],\"language\":null}", "language: not a "
		    "string" },
		{ "{\"argv\":[\"a\"],\"env\":[]}", "env: not an object" },
		{ "{\"argv\":[\"a\"],\"env\":{\"X\":\"1\",\"PATH\":2}}",
		    "env.PATH: not a string" },
		{ "{\"argv\":[\"a\"],\"interrupt_mode\":\"sigint\"}",
		    "interrupt_mode: \"sigint\" is not signal or message" },
		{ "{\"argv\":[\"a\"],\"interrupt_mode\":\"\"}",
		    "interrupt_mode: \"\" is not signal or message" },
		{ "{\"argv\":[\"a\"],\"interrupt_mode\":1}", "interrupt_mode: "
		    "not a string" },
		{ "{\"argv\":[\"a\"],\"metadata\":\"x\"}", "metadata: not an "
		    "object" },
	};
	struct kp_kernelspec *ks, *sentinel = (struct kp_kernelspec *)&ks;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		ks = sentinel;
		T_EQ_INT(parse(cases[i].text, &ks, err, sizeof(err)), -EINVAL);
		T_EQ_STR(err, cases[i].msg);
		T_OK(ks == sentinel);	/* out untouched on failure */
	}
	T_EQ_INT(parse("{}", &ks, NULL, 0), -EINVAL);
}

static void
test_dirs(void)
{
	static const char *const all[] = { "/a", "/b", "/d",
	    "/h/.local/share/jupyter", "/usr/local/share/jupyter",
	    "/usr/share/jupyter", NULL };
	static const char *const xdg[] = { "/x/jupyter",
	    "/h/.local/share/jupyter", "/usr/local/share/jupyter",
	    "/usr/share/jupyter", NULL };
	static const char *const plain[] = { "/h/.local/share/jupyter",
	    "/usr/local/share/jupyter", "/usr/share/jupyter", NULL };

	/*
	 * Each list is what jupyter_core 4.12's jupyter_path() printed with
	 * the same variables (except that it keeps the empty entry of
	 * "/a::/b/" as a relative "").
	 */
	env_clear();
	setenv("JUPYTER_PATH", "/a::/b/", 1);
	setenv("JUPYTER_DATA_DIR", "/d", 1);
	setenv("XDG_DATA_HOME", "/ignored", 1);
	setenv("HOME", "/h", 1);
	check_dirs(all);
	env_clear();
	setenv("JUPYTER_PATH", "", 1);
	setenv("JUPYTER_DATA_DIR", "", 1);
	setenv("XDG_DATA_HOME", "/x/", 1);
	setenv("HOME", "/h", 1);
	check_dirs(xdg);
	env_clear();
	setenv("HOME", "/h//", 1);
	check_dirs(plain);
	/* The data dir is the user site: listed once. */
	env_clear();
	setenv("HOME", "/h", 1);
	setenv("JUPYTER_DATA_DIR", "/h/.local/share/jupyter", 1);
	check_dirs(plain);
	env_clear();
	setenv("JUPYTER_PATH", ":/only:", 1);
	setenv("HOME", "/h", 1);
	{
		static const char *const only[] = { "/only",
		    "/h/.local/share/jupyter", "/usr/local/share/jupyter",
		    "/usr/share/jupyter", NULL };

		check_dirs(only);
	}
	env_clear();
	kp_kernelspec_dirs_free(NULL);
}

/* An executable file at root/rel. */
static void
put_exe(const char *root, const char *rel)
{
	char *path = cat(root, rel);
	int fd;

	put(root, rel, NULL);
	rmdir(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755)) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
	free(path);
}

/*
 * Python prefixes: a venv and a conda env from their variables, a python3
 * and a python on $PATH, a link into another prefix, a bin without Python,
 * relative entries, and prefixes that are the system's.
 */
static void
test_dirs_python_prefix(void)
{
	char *root = t_tmpdir(), *path, *link, *target;
	char *own[4];
	const char *w[16];
	size_t n = 0;

	put_exe(root, "venv/bin/python3");
	put_exe(root, "opt/bin/python");
	put_exe(root, "real/bin/python3.11");
	put(root, "nopy/bin", NULL);
	put(root, "lnk/bin", NULL);
	put_exe(root, "notexe/bin/python3");
	link = cat(root, "lnk/bin/python3");
	target = cat(root, "real/bin/python3.11");
	T_EQ_INT(symlink(target, link), 0);
	path = cat(root, "notexe/bin/python3");
	T_EQ_INT(chmod(path, 0644), 0);
	free(path);
	if (asprintf(&path, "%s/nopy/bin:%s/venv/bin/:bin:%s/lnk/bin:"
	    "%s/opt/bin:%s/notexe/bin:/usr/bin:%s/venv/bin", root, root, root,
	    root, root, root) < 0)
		abort();
	env_clear();
	setenv("HOME", "/h", 1);
	setenv("PATH", path, 1);
	setenv("VIRTUAL_ENV", "/ve/", 1);
	setenv("CONDA_PREFIX", "/usr", 1);
	w[n++] = "/h/.local/share/jupyter";
	w[n++] = "/ve/share/jupyter";
	w[n++] = own[0] = cat(root, "venv/share/jupyter");
	w[n++] = own[1] = cat(root, "lnk/share/jupyter");
	w[n++] = own[2] = cat(root, "real/share/jupyter");
	w[n++] = own[3] = cat(root, "opt/share/jupyter");
	w[n++] = "/usr/local/share/jupyter";
	w[n++] = "/usr/share/jupyter";
	w[n] = NULL;
	check_dirs(w);
	for (size_t i = 0; i < 4; i++)
		free(own[i]);
	env_clear();
	free(path);
	free(link);
	free(target);
	t_tmpdir_free(root);
}

static void
test_find_all(void)
{
	char *root = t_tmpdir(), *p1 = cat(root, "p1"), *p2 = cat(root, "p2");
	char *const dirs[] = { p1, p2, NULL };
	struct kp_kernelspec **list = NULL;
	size_t skipped = 99;
	char *want;
	FILE *f;

	put(root, "p1/kernels/k1", "{\"argv\":[\"p1\"]}");
	put(root, "p2/kernels/k1", "{\"argv\":[\"p2\"]}");	/* hidden */
	put(root, "p2/kernels/k2", "{\"argv\":[\"k2\"],\"language\":\"R\"}");
	put(root, "p1/kernels/Upper", "{\"argv\":[\"up\"]}");
	put(root, "p1/kernels/nojson", NULL);			/* ignored */
	put(root, "p1/kernels/broken", "{\"argv\":");		/* counted */
	put(root, "p2/kernels/broken", "{\"argv\":[\"ok\"]}");	/* hidden */
	put(root, "p1/kernels/bad name", "{\"argv\":[\"x\"]}");	/* counted */
	want = cat(root, "p2/kernels/notes.txt");		/* a file */
	if ((f = fopen(want, "w")) != NULL)
		fclose(f);
	free(want);
	T_EQ_INT(kp_kernelspec_find_all(dirs, &list, &skipped), 0);
	T_EQ_INT(skipped, 2);
	T_OK(list != NULL);
	if (list != NULL) {
		T_OK(list[0] != NULL && list[1] != NULL && list[2] != NULL &&
		    list[3] == NULL);
	}
	if (list != NULL && list[0] != NULL && list[1] != NULL &&
	    list[2] != NULL) {
		T_EQ_STR(list[0]->name, "k1");
		T_EQ_STR(list[0]->argv[0], "p1");	/* first match wins */
		want = cat(p1, "kernels/k1");
		T_EQ_STR(list[0]->resource_dir, want);
		free(want);
		T_EQ_STR(list[1]->name, "k2");
		T_EQ_STR(list[1]->language, "R");
		/* Lowercased name; the directory keeps its spelling. */
		T_EQ_STR(list[2]->name, "upper");
		want = cat(p1, "kernels/Upper");
		T_EQ_STR(list[2]->resource_dir, want);
		free(want);
	}
	kp_kernelspec_list_free(list);
	/* skipped may be NULL; no dirs at all is an empty list. */
	list = NULL;
	T_EQ_INT(kp_kernelspec_find_all(dirs, &list, NULL), 0);
	kp_kernelspec_list_free(list);
	{
		char *const none[] = { NULL };

		list = NULL;
		T_EQ_INT(kp_kernelspec_find_all(none, &list, &skipped), 0);
		T_OK(list != NULL && list[0] == NULL);
		T_EQ_INT(skipped, 0);
		kp_kernelspec_list_free(list);
	}
	kp_kernelspec_list_free(NULL);
	free(p1);
	free(p2);
	t_tmpdir_free(root);
}

static void
test_find_from_env(void)
{
	char *root = t_tmpdir(), *jp, *want, **dirs;
	struct kp_kernelspec **list = NULL;
	size_t skipped, seen = 0;

	/* JUPYTER_PATH, then the data dir, then the user site. */
	put(root, "jp/kernels/same", "{\"argv\":[\"from-jupyter-path\"]}");
	put(root, "data/kernels/same", "{\"argv\":[\"from-data\"]}");
	put(root, "data/kernels/d1", "{\"argv\":[\"d1\"]}");
	put(root, "home/.local/share/jupyter/kernels/h1",
	    "{\"argv\":[\"h1\"]}");
	put(root, "home/.local/share/jupyter/kernels/d1",
	    "{\"argv\":[\"hidden\"]}");
	env_clear();
	jp = cat(root, "jp");
	setenv("JUPYTER_PATH", jp, 1);
	want = cat(root, "data");
	setenv("JUPYTER_DATA_DIR", want, 1);
	free(want);
	want = cat(root, "home");
	setenv("HOME", want, 1);
	free(want);
	dirs = kp_kernelspec_dirs();
	T_EQ_INT(kp_kernelspec_find_all(dirs, &list, &skipped), 0);
	for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
		if (i > 0)	/* sorted */
			T_OK(strcmp(list[i - 1]->name, list[i]->name) < 0);
		if (strcmp(list[i]->name, "same") == 0) {
			T_EQ_STR(list[i]->argv[0], "from-jupyter-path");
			seen++;
		} else if (strcmp(list[i]->name, "d1") == 0) {
			T_EQ_STR(list[i]->argv[0], "d1");
			seen++;
		} else if (strcmp(list[i]->name, "h1") == 0) {
			T_EQ_STR(list[i]->argv[0], "h1");
			seen++;
		}
	}
	T_EQ_INT(seen, 3);
	kp_kernelspec_list_free(list);
	kp_kernelspec_dirs_free(dirs);
	env_clear();
	free(jp);
	t_tmpdir_free(root);
}

static void
test_argv(void)
{
	/* \u007b is '{': escaped braces are braces, as for Python. */
	static const char spec[] = "{\"argv\":[\"{connection_file}\","
	    "\"-f={connection_file}:{connection_file}\","
	    "\"{resource_dir}/logo.png\",\"{other}\","
	    "\"{{connection_file}}\",\"{connection_file\","
	    "\"connection_file}\",\"\\u007bresource_dir}{resource_dir}\","
	    "\"\"]}";
	static const char *const want[] = { "/run/k-1.json",
	    "-f=/run/k-1.json:/run/k-1.json", "/ks/py/logo.png",
	    "{other}", "{/run/k-1.json}", "{connection_file",
	    "connection_file}", "/ks/py/ks/py", "" };
	struct kp_kernelspec *ks = NULL;
	char **argv, err[256];
	size_t i;

	T_EQ_INT(kp_kernelspec_parse(spec, strlen(spec), "py", "/ks/py", &ks,
	    err, sizeof(err)), 0);
	if (ks == NULL)
		return;
	T_EQ_INT(ks->argc, 9);
	argv = kp_kernelspec_argv(ks, "/run/k-1.json");
	T_OK(argv != NULL);
	for (i = 0; argv != NULL && i < ks->argc; i++) {
		T_EQ_STR(argv[i], want[i]);
		free(argv[i]);
	}
	T_OK(argv != NULL && argv[i] == NULL);
	free(argv);
	kp_kernelspec_free(ks);
}

static void
test_argv_single_pass(void)
{
	/* Replaced text is not scanned again, as with Python's re.sub. */
	static const char spec[] = "{\"argv\":[\"{connection_file}\","
	    "\"{resource_dir}\"]}";
	struct kp_kernelspec *ks = NULL;
	char **argv, err[256];

	T_EQ_INT(kp_kernelspec_parse(spec, strlen(spec), "k",
	    "/r/{connection_file}", &ks, err, sizeof(err)), 0);
	if (ks == NULL)
		return;
	argv = kp_kernelspec_argv(ks, "/c/{resource_dir}.json");
	T_OK(argv != NULL);
	if (argv != NULL) {
		T_EQ_STR(argv[0], "/c/{resource_dir}.json");
		T_EQ_STR(argv[1], "/r/{connection_file}");
		T_OK(argv[2] == NULL);
		free(argv[0]);
		free(argv[1]);
		free(argv);
	}
	errno = 0;
	T_OK(kp_kernelspec_argv(ks, NULL) == NULL);
	T_EQ_INT(errno, EINVAL);
	kp_kernelspec_free(ks);
}

static void
test_system_python3(void)
{
	struct kp_kernelspec *ks = NULL;
	char buf[65536], err[256] = "", **argv;
	size_t n;
	int fd;

	if ((fd = open(SYSTEM_PYTHON3, O_RDONLY)) < 0) {
		printf("  (no %s: skipped)\n", SYSTEM_PYTHON3);
		return;
	}
	n = (size_t)read(fd, buf, sizeof(buf));
	close(fd);
	T_OK(n > 0 && n < sizeof(buf));
	T_EQ_INT(kp_kernelspec_parse(buf, n, "python3",
	    "/usr/share/jupyter/kernels/python3", &ks, err, sizeof(err)), 0);
	T_EQ_STR(err, "");
	if (ks == NULL)
		return;
	T_OK(ks->argc >= 3);
	T_OK(strstr(ks->argv[0], "python") != NULL);
	T_EQ_STR(ks->language, "python");
	argv = kp_kernelspec_argv(ks, "/run/kernel-x.json");
	T_OK(argv != NULL);
	for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
		T_OK(strstr(argv[i], "{connection_file}") == NULL);
		free(argv[i]);
	}
	free(argv);
	kp_kernelspec_free(ks);
}

/* argv[0] of spec text in resource dir rd, filled in; freed here. */
static char *
argv0_of(const char *text, const char *rd)
{
	struct kp_kernelspec *ks = NULL;
	char **argv, err[256], *a0;

	T_EQ_INT(kp_kernelspec_parse(text, strlen(text), "k", rd, &ks, err,
	    sizeof(err)), 0);
	if (ks == NULL)
		return NULL;
	argv = kp_kernelspec_argv(ks, "/run/k-1.json");
	T_OK(argv != NULL);
	if (argv == NULL) {
		kp_kernelspec_free(ks);
		return NULL;
	}
	a0 = argv[0];
	for (size_t i = 1; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
	kp_kernelspec_free(ks);
	return a0;
}

static void
test_argv_python_of_the_prefix(void)
{
	/*
	 * Debian's octave kernelspec says "python", which Jupyter replaces
	 * with its own interpreter; execd takes the python3 of the prefix
	 * the spec is installed in (<P>/share/jupyter/kernels/<name>).
	 */
	static const char py[] = "{\"argv\":[\"python\",\"-m\",\"k\"]}";
	static const char py3[] = "{\"argv\":[\"python3\",\"-m\",\"k\"]}";
	static const char abs[] = "{\"argv\":[\"/opt/python\",\"-m\"]}";
	static const char other[] = "{\"argv\":[\"pythonx\",\"-m\"]}";
	char *root = t_tmpdir(), *rd, *bare, *want, *a0;

	t_mkdir(root, "share");
	t_mkdir(root, "share/jupyter");
	t_mkdir(root, "share/jupyter/kernels");
	t_mkdir(root, "share/jupyter/kernels/k");
	rd = cat(root, "share/jupyter/kernels/k");
	/* No python3 in the prefix yet: argv[0] is left alone. */
	T_EQ_STR((a0 = argv0_of(py, rd)), "python");
	free(a0);
	t_mkdir(root, "bin");
	t_spit(t_path(root, "bin/python3"), "", 0, 0755);
	want = cat(root, "bin/python3");
	T_EQ_STR((a0 = argv0_of(py, rd)), want);
	free(a0);
	T_EQ_STR((a0 = argv0_of(py3, rd)), want);
	free(a0);
	T_EQ_STR((a0 = argv0_of(abs, rd)), "/opt/python");
	free(a0);
	T_EQ_STR((a0 = argv0_of(other, rd)), "pythonx");
	free(a0);
	/* A resource dir that is not in a share/jupyter/kernels. */
	t_mkdir(root, "k");
	bare = cat(root, "k");
	T_EQ_STR((a0 = argv0_of(py, bare)), "python");
	free(a0);
	/* A python3 that is not executable is not taken. */
	chmod(want, 0644);
	T_EQ_STR((a0 = argv0_of(py, rd)), "python");
	free(a0);
	free(bare);
	free(want);
	free(rd);
	t_tmpdir_free(root);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "parse Debian's python3", test_parse_debian },
		{ "parse env, interrupt_mode", test_parse_env_and_mode },
		{ "parse errors and messages", test_parse_errors },
		{ "search path from the environment", test_dirs },
		{ "search path: every Python's prefix", test_dirs_python_prefix },
		{ "find_all: first wins, sorted, skips", test_find_all },
		{ "find_all on the environment's path", test_find_from_env },
		{ "argv substitution", test_argv },
		{ "argv substitution is one pass", test_argv_single_pass },
		{ "argv: python is the prefix's python3",
		    test_argv_python_of_the_prefix },
		{ "installed python3 kernelspec", test_system_python3 },
	};

	return T_RUN(cases);
}
