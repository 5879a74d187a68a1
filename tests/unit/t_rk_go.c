/*
 * t_rk_go.c -- Go cells for execd-repl-kernel's "program" mode: what
 * rk_go_parse keeps by which name, what rk_go_program assembles, and the
 * go kernelspec of the tree as a description, with what its errors make
 * of yaegi's stderr.  The program's .c files
 * are included: they are not part of execd's objects.
 */
#include <stdlib.h>
#include <string.h>

#include "../../repl/rk_desc.c"
#include "../../repl/rk_go.c"
#include "../../repl/rk_scan.c"
#include "../t.h"

/* The keys of g's declarations, one after another. */
static char *
keys(const struct rk_go *g)
{
	static char buf[1024];

	buf[0] = '\0';
	for (size_t i = 0; i < g->n; i++)
		strncat(buf, g->v[i].keys, sizeof(buf) - strlen(buf) - 1);
	return buf;
}

static int
parse(const char *code, struct rk_go *g)
{
	memset(g, 0, sizeof(*g));
	return rk_go_parse(code, strlen(code), g);
}

static void
test_names(void)
{
	struct rk_go g;

	T_EQ_INT(parse("package main\n"
	    "import \"fmt\"\n"
	    "import (\n\t\"os\"\n\ts \"strings\" // c\n)\n"
	    "type (\n\tA int\n\tB = A\n)\n"
	    "var x, y = 1, 2\n"
	    "const (\n\tK = iota\n\tL\n)\n"
	    "func (p *Point[T]) Len() int { return 0 }\n"
	    "func f(a int,\n\tb int) int {\n\treturn a +\n\t\tb\n}\n"
	    "var _ = f\n", &g), 0);
	T_EQ_STR(keys(&g), " import:\"fmt\"  import:\"os\"  "
	    "import:s\"strings\"  A B  x y  K L  Point.Len  f  ");
	T_OK(g.main == NULL);
	T_EQ_STR(g.stmts, "");
	/* The text of a declaration is as written, over its lines. */
	T_EQ_STR(g.v[7].text, "func f(a int,\n\tb int) int {\n\treturn a +"
	    "\n\t\tb\n}");
	rk_go_clear(&g);
}

static void
test_main_and_statements(void)
{
	struct rk_go g;

	T_EQ_INT(parse("func main() {\n\tprintln(\"}\", `{`, '}')\n}\n",
	    &g), 0);
	T_EQ_STR(g.main, "func main() {\n\tprintln(\"}\", `{`, '}')\n}");
	T_EQ_INT(g.n, 0);
	rk_go_clear(&g);
	/* Statements, a func literal called among them; a comment with a
	 * newline ends a line as a newline does. */
	T_EQ_INT(parse("x := 1 /* a\n b */\nfunc() { x++ }()\n"
	    "println(x); println(2)\n", &g), 0);
	T_EQ_INT(g.n, 0);
	T_EQ_STR(g.stmts, "x := 1 \nfunc() { x++ }()\nprintln(x);\n"
	    "println(2)\n");
	rk_go_clear(&g);
	/* Left open: a bracket, a raw string, a comment. */
	T_EQ_INT(parse("func f() {\n", &g), -1);
	rk_go_clear(&g);
	T_EQ_INT(parse("s := `abc\n", &g), -1);
	rk_go_clear(&g);
	T_EQ_INT(parse("/* x", &g), -1);
	rk_go_clear(&g);
}

static void
test_program_and_keep(void)
{
	struct rk_go kept = { 0 }, c;
	size_t len;
	char *p;

	T_EQ_INT(parse("import \"fmt\"\nfunc f() int { return 1 }\n"
	    "var v, w = 1, 2\n", &c), 0);
	rk_go_keep(&kept, &c);
	/* A cell that declares f and v again, and an import: imports come
	 * first, the old f and the v, w group go, the statements are main. */
	T_EQ_INT(parse("func f() int { return 2 }\nvar v = 3\n"
	    "import \"os\"\nfmt.Println(f(), v, os.Args)\n", &c), 0);
	p = rk_go_program(&kept, &c, &len);
	T_EQ_STR(p, "package main\n\nimport \"fmt\"\n\nimport \"os\"\n\n"
	    "func f() int { return 2 }\n\nvar v = 3\n\nfunc main() {\n"
	    "fmt.Println(f(), v, os.Args)\n}\n");
	T_EQ_INT(len, strlen(p));
	free(p);
	rk_go_keep(&kept, &c);
	T_EQ_STR(keys(&kept), " import:\"fmt\"  f  v  import:\"os\" ");
	/* A cell of declarations only gets an empty main. */
	T_EQ_INT(parse("type T struct{}\n", &c), 0);
	p = rk_go_program(&kept, &c, &len);
	T_OK(strstr(p, "type T struct{}\n\nfunc main() {\n}\n") != NULL);
	free(p);
	rk_go_clear(&c);
	rk_go_clear(&kept);
}

static void
test_desc_go(void)
{
	json_t *spec = json_load_file("repl/kernels/go/kernel.json", 0,
	    NULL);
	struct rk_desc *d = NULL;
	char err[256] = "";

	T_OK(spec != NULL);
	T_EQ_INT(rk_desc_parse(json_object_get(json_object_get(spec,
	    "metadata"), "repl"), "@M@", &d, err, sizeof(err)), 0);
	json_decref(spec);
	if (d == NULL)
		return;
	T_EQ_STR(d->program, "go");
	T_EQ_STR(d->end, "");
	rk_desc_set_file(d, "/t/main.go");
	T_EQ_STR(d->argv[2], "/t/main.go");
	T_EQ_STR(d->errors[0].prefix, "run: /t/main.go:");
	T_OK(d->errors[0].discard && !d->errors[1].discard);
	T_EQ_INT(d->intr_signal, SIGINT);
	rk_desc_free(d);
	/* Only known programs; a REPL needs its end line. */
	json_t *o = json_pack("{s:[s], s:s}", "argv", "x", "program", "py");
	T_EQ_INT(rk_desc_parse(o, "M", &d, err, sizeof(err)), -EINVAL);
	json_decref(o);
	o = json_pack("{s:[s]}", "argv", "x");
	T_EQ_INT(rk_desc_parse(o, "M", &d, err, sizeof(err)), -EINVAL);
	json_decref(o);
}

static void
record(void *arg, const struct rk_ev *ev)
{
	char *b = arg;
	size_t o = strlen(b);

	if (ev->type == RK_EV_TEXT)
		snprintf(b + o, 1024 - o, "T[%.*s]", (int)ev->n, ev->p);
	else if (ev->type == RK_EV_ERROR)
		snprintf(b + o, 1024 - o, "E[%s|%s|%zu]", ev->ename,
		    ev->evalue, json_array_size(ev->traceback));
}

/* yaegi's stderr through the go spec's errors. */
static void
test_scan_yaegi(void)
{
	json_t *spec = json_load_file("repl/kernels/go/kernel.json", 0,
	    NULL);
	struct rk_desc *d = NULL;
	struct rk_scan *sc;
	char err[256], seen[1024] = "";
	static const char panic[] = "x\n/t/main.go:3:15: panic\n"
	    "run: boom\ngoroutine 1 [running]:\nruntime/debug.Stack()\n"
	    "\truntime/debug/stack.go:24 +0x65\n";
	static const char compile[] = "run: /t/main.go:5:14: undefined: "
	    "v\n";

	T_OK(spec != NULL);
	T_EQ_INT(rk_desc_parse(json_object_get(json_object_get(spec,
	    "metadata"), "repl"), "@M@", &d, err, sizeof(err)), 0);
	json_decref(spec);
	if (d == NULL)
		return;
	rk_desc_set_file(d, "/t/main.go");
	sc = rk_scan_new(d, false, 4096, record, seen);
	rk_scan_feed(sc, panic, sizeof(panic) - 1);
	rk_scan_flush(sc);
	/* The panic's message, and yaegi's own stack as its traceback. */
	T_EQ_STR(seen, "T[x\n]T[/t/main.go:3:15: panic\n]E[Panic|boom|4]");
	seen[0] = '\0';
	rk_scan_feed(sc, compile, sizeof(compile) - 1);
	rk_scan_flush(sc);
	T_EQ_STR(seen, "E[CompilationError|5:14: undefined: v|1]");
	rk_scan_free(sc);
	rk_desc_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "names", test_names },
		{ "main_and_statements", test_main_and_statements },
		{ "program_and_keep", test_program_and_keep },
		{ "desc_go", test_desc_go },
		{ "scan_yaegi", test_scan_yaegi },
	};

	return T_RUN(cases);
}
