/*
 * tools.c -- the MCP tools: their table (name, description, arguments,
 * output schema), tools/list made from it, and tools/call checked
 * against it before a tool runs.
 *
 * A tool's input schema is written from its argument rows, and the same
 * rows check a call's arguments, so what a client is told and what is
 * enforced cannot drift apart.  A call that names no tool or whose
 * arguments fail the schema is a JSON-RPC error (-32602) and runs
 * nothing; what fails while a tool runs is a result with isError.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "mcp.h"

enum arg_type { A_STR, A_INT, A_BOOL, A_ENV };

struct arg {
	const char	*name;
	enum arg_type	 type;
	bool		 required;
	const char	*desc;
};

struct tool {
	const char		*name;
	const char		*title;
	const char		*desc;
	const struct arg	*args;
	mcp_tool_fn		*fn;
	const char		*output;	/* JSON Schema text, or NULL */
	bool			 read_only;
};

#define END	{ NULL, 0, false, NULL }

static const struct arg a_run_code[] = {
	{ "code", A_STR, true, "The code to run." },
	{ "language", A_STR, false, "The kernel language (\"python\" by "
	    "default; list_contexts and create_context show others)." },
	{ "context_id", A_STR, false, "Run in this context (from "
	    "create_context), keeping its variables; default: the "
	    "language's shared default context." },
	{ "timeout_ms", A_INT, false, "Interrupt the code after this many "
	    "milliseconds (0: no limit)." },
	END
};
static const struct arg a_run_command[] = {
	{ "command", A_STR, true, "A shell command line (bash -c)." },
	{ "cwd", A_STR, false, "Working directory (absolute or ~)." },
	{ "env", A_ENV, false, "Environment variables to set, name to "
	    "value." },
	{ "timeout_ms", A_INT, false, "Stop the command after this many "
	    "milliseconds (0: no limit)." },
	{ "background", A_BOOL, false, "Start it and return its id at once; "
	    "read its output with command_output." },
	{ "stdin", A_BOOL, false, "Give the command a stdin that "
	    "command_input writes to, usually with background (without it "
	    "the command reads end of file)." },
	END
};
static const struct arg a_command_output[] = {
	{ "id", A_STR, true, "The id run_command returned for a background "
	    "command." },
	{ "offset", A_INT, false, "Byte offset to read from (the "
	    "next_offset of the previous read; 0: the start)." },
	END
};
static const struct arg a_command_input[] = {
	{ "id", A_STR, true, "The id of a background command started with "
	    "stdin: true." },
	{ "text", A_STR, true, "Text to write to its stdin (include the "
	    "newline a line-reading program waits for)." },
	{ "close", A_BOOL, false, "Close its stdin after the text (end of "
	    "file for the command)." },
	END
};
static const struct arg a_id[] = {
	{ "id", A_STR, true, "A context id (its running code is "
	    "interrupted) or a background command id (it is stopped)." },
	END
};
static const struct arg a_read_file[] = {
	{ "path", A_STR, true, "Absolute path, or one starting with ~." },
	{ "offset", A_INT, false, "First byte to read (byte range)." },
	{ "length", A_INT, false, "Bytes to read from offset." },
	{ "start_line", A_INT, false, "First line to read, from 1 (line "
	    "window)." },
	{ "line_count", A_INT, false, "Lines to read from start_line." },
	END
};
static const struct arg a_write_file[] = {
	{ "path", A_STR, true, "Absolute path, or one starting with ~; "
	    "missing parent directories are made." },
	{ "content", A_STR, true, "The whole new content (UTF-8 text)." },
	{ "mode", A_STR, false, "Permissions in octal, e.g. \"644\" or "
	    "\"755\" (default 644 for a new file, else unchanged)." },
	END
};
static const struct arg a_edit_file[] = {
	{ "path", A_STR, true, "Absolute path, or one starting with ~." },
	{ "old_string", A_STR, true, "Text to replace: it must occur exactly "
	    "once in the file (include surrounding lines to make it "
	    "unique)." },
	{ "new_string", A_STR, true, "The replacement text." },
	END
};
static const struct arg a_list_directory[] = {
	{ "path", A_STR, true, "Directory, absolute or starting with ~." },
	{ "depth", A_INT, false, "Levels to descend (1: the directory's own "
	    "entries; default 1, at most 16)." },
	END
};
static const struct arg a_search_files[] = {
	{ "path", A_STR, true, "Directory to search under." },
	{ "pattern", A_STR, true, "Glob matched against file base names, "
	    "e.g. \"*.py\"." },
	END
};
static const struct arg a_grep[] = {
	{ "path", A_STR, true, "A file, or a directory searched "
	    "recursively." },
	{ "pattern", A_STR, true, "POSIX extended regular expression." },
	{ "ignore_case", A_BOOL, false, "Match without regard to case." },
	{ "max_matches", A_INT, false, "Stop after this many matches "
	    "(default 200)." },
	END
};
static const struct arg a_move[] = {
	{ "source", A_STR, true, "Path to move." },
	{ "destination", A_STR, true, "New path; it must not exist." },
	END
};
static const struct arg a_delete[] = {
	{ "path", A_STR, true, "Path to delete." },
	{ "recursive", A_BOOL, false, "Delete a directory and everything "
	    "under it." },
	END
};
static const struct arg a_list_contexts[] = {
	{ "language", A_STR, false, "Only contexts of this language." },
	END
};
static const struct arg a_create_context[] = {
	{ "language", A_STR, false, "Kernel language (default "
	    "\"python\")." },
	{ "cwd", A_STR, false, "Working directory of the kernel." },
	END
};
static const struct arg a_delete_context[] = {
	{ "id", A_STR, true, "The context id." },
	END
};

static const struct arg a_screenshot[] = {
	{ "x", A_INT, false, "Left edge of a region (default 0)." },
	{ "y", A_INT, false, "Top edge of a region (default 0)." },
	{ "width", A_INT, false, "Region width (default: to the right "
	    "edge)." },
	{ "height", A_INT, false, "Region height (default: to the bottom "
	    "edge)." },
	{ "scale_width", A_INT, false, "Scale the image down to this width, "
	    "keeping the aspect (never up)." },
	END
};
static const struct arg a_click[] = {
	{ "x", A_INT, false, "Screen x in pixels (with y; default: where the "
	    "pointer is)." },
	{ "y", A_INT, false, "Screen y in pixels." },
	{ "button", A_STR, false, "left (default), middle or right." },
	{ "count", A_INT, false, "Clicks, 2 for a double click (default "
	    "1)." },
	END
};
static const struct arg a_type[] = {
	{ "text", A_STR, true, "Text to type into the focused window (any "
	    "Unicode; a newline presses Return)." },
	END
};
static const struct arg a_key[] = {
	{ "keys", A_STR, true, "xdotool-style key combinations: names joined "
	    "by '+', several separated by spaces, e.g. \"ctrl+shift+t\", "
	    "\"Return\", \"ctrl+a BackSpace\"." },
	END
};
static const struct arg a_scroll[] = {
	{ "direction", A_STR, true, "up, down, left or right." },
	{ "amount", A_INT, false, "Wheel notches (default 3)." },
	{ "x", A_INT, false, "Scroll at this screen x (with y; default: "
	    "where the pointer is)." },
	{ "y", A_INT, false, "Screen y in pixels." },
	END
};

#define O_COMMAND "{\"type\":\"object\",\"properties\":{" \
	"\"id\":{\"type\":\"string\"},\"background\":{\"type\":\"boolean\"}," \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]}," \
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"}}," \
	"\"required\":[\"id\"]}"
#define O_OUTPUT "{\"type\":\"object\",\"properties\":{" \
	"\"output\":{\"type\":\"string\"},\"next_offset\":{\"type\":" \
	"\"integer\"},\"running\":{\"type\":\"boolean\"},\"exit_code\":" \
	"{\"type\":[\"integer\",\"null\"]}},\"required\":[\"output\"," \
	"\"next_offset\",\"running\"]}"
#define O_ENTRIES(k) "{\"type\":\"object\",\"properties\":{\"" k "\":" \
	"{\"type\":\"array\",\"items\":{\"type\":\"object\"}}}," \
	"\"required\":[\"" k "\"]}"
#define O_GREP "{\"type\":\"object\",\"properties\":{\"matches\":" \
	"{\"type\":\"array\",\"items\":{\"type\":\"object\"}},\"truncated\":" \
	"{\"type\":\"boolean\"}},\"required\":[\"matches\"]}"
#define O_CONTEXT "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":" \
	"\"string\"},\"language\":{\"type\":\"string\"}},\"required\":" \
	"[\"id\",\"language\"]}"

static const struct tool tools[] = {
	{ "run_code", "Run code", "Run code in a Jupyter kernel inside the "
	    "sandbox (Python by default) and return its stdout, stderr, "
	    "results and errors; images a cell displays (matplotlib plots) "
	    "come back as image content. State persists in the context "
	    "between calls.", a_run_code, mcp_run_code, NULL, false },
	{ "run_command", "Run a shell command", "Run a shell command in the "
	    "sandbox and return its exit code and output, or with "
	    "background start it and return its id.", a_run_command,
	    mcp_run_command, O_COMMAND, false },
	{ "command_output", "Read a background command's output", "Read "
	    "what a background command has written so far, from a byte "
	    "offset, and whether it still runs.", a_command_output,
	    mcp_command_output, O_OUTPUT, true },
	{ "command_input", "Write to a background command's stdin", "Write "
	    "text to the stdin of a background command started with stdin: "
	    "true, and optionally close it.", a_command_input,
	    mcp_command_input, NULL, false },
	{ "interrupt", "Interrupt", "Interrupt the code running in a "
	    "context, or stop a background command.", a_id, mcp_interrupt,
	    NULL, false },
	{ "read_file", "Read a file", "Read a text file: whole (up to 1 MiB), "
	    "a byte range (offset, length) or a window of lines (start_line, "
	    "line_count).", a_read_file, mcp_read_file, NULL, true },
	{ "write_file", "Write a file", "Write a file atomically (a reader "
	    "sees the old or the new content, never a mix), replacing what "
	    "was there.", a_write_file, mcp_write_file, NULL, false },
	{ "edit_file", "Edit a file", "Replace one exact occurrence of a "
	    "string in a file. Fails, changing nothing, when the string is "
	    "absent or occurs more than once.", a_edit_file, mcp_edit_file,
	    NULL, false },
	{ "list_directory", "List a directory", "List a directory's entries "
	    "(name, size, mode, modification time), to a depth.",
	    a_list_directory, mcp_list_directory, O_ENTRIES("entries"),
	    true },
	{ "search_files", "Find files by name", "Find files under a "
	    "directory whose names match a glob.", a_search_files,
	    mcp_search_files, O_ENTRIES("files"), true },
	{ "grep", "Search file contents", "Find lines matching a regular "
	    "expression in a file or under a directory.", a_grep, mcp_grep,
	    O_GREP, true },
	{ "move", "Move or rename", "Move or rename a file or directory.",
	    a_move, mcp_move, NULL, false },
	{ "delete", "Delete", "Delete a file, or a directory with "
	    "recursive.", a_delete, mcp_delete, NULL, false },
	{ "list_contexts", "List code contexts", "List code contexts "
	    "(kernels) with their ids and languages.", a_list_contexts,
	    mcp_list_contexts, O_ENTRIES("contexts"), true },
	{ "create_context", "Create a code context", "Start a new code "
	    "context (a kernel with its own state); returns its id once it "
	    "is ready.", a_create_context, mcp_create_context, O_CONTEXT,
	    false },
	{ "delete_context", "Delete a code context", "Shut a code context's "
	    "kernel down; its state is lost.", a_delete_context,
	    mcp_delete_context, NULL, false },
	{ "screenshot", "Take a screenshot", "A PNG of the X display (or a "
	    "region of it), as image content; scale_width shrinks it for a "
	    "model.", a_screenshot, mcp_screenshot, NULL, true },
	{ "click", "Click", "Click a mouse button at a point of the screen.",
	    a_click, mcp_click, NULL, false },
	{ "type", "Type text", "Type text into the focused window, as if on "
	    "a keyboard.", a_type, mcp_type, NULL, false },
	{ "key", "Press keys", "Press key combinations (shortcuts, Return, "
	    "arrows).", a_key, mcp_key, NULL, false },
	{ "scroll", "Scroll", "Turn the mouse wheel, at a point or where the "
	    "pointer is.", a_scroll, mcp_scroll, NULL, false },
};

#define NTOOLS	(sizeof(tools) / sizeof(tools[0]))

static json_t	*input_schema(const struct arg *);
static int	 check_args(const struct tool *, json_t *, char *,
		    size_t);

static json_t *
input_schema(const struct arg *a)
{
	json_t *props = json_object(), *req = json_array(), *p;
	static const char *const types[] = { "string", "integer", "boolean",
	    "object" };

	for (; a->name != NULL; a++) {
		p = json_pack("{s:s, s:s}", "type", types[a->type],
		    "description", a->desc);
		if (a->type == A_INT)
			json_object_set_new(p, "minimum", json_integer(0));
		if (a->type == A_ENV)
			json_object_set_new(p, "additionalProperties",
			    json_pack("{s:s}", "type", "string"));
		json_object_set_new(props, a->name, p);
		if (a->required)
			json_array_append_new(req, json_string(a->name));
	}
	return json_pack("{s:s, s:o, s:o, s:b}", "type", "object",
	    "properties", props, "required", req, "additionalProperties", 0);
}

/* The tools/list result: every tool, no pages. */
json_t *
mcp_tools_list(void)
{
	json_t *list = json_array(), *t, *o;
	json_error_t je;

	for (size_t i = 0; i < NTOOLS; i++) {
		t = json_pack("{s:s, s:s, s:s, s:o, s:{s:b}}", "name",
		    tools[i].name, "title", tools[i].title, "description",
		    tools[i].desc, "inputSchema", input_schema(tools[i].args),
		    "annotations", "readOnlyHint", tools[i].read_only);
		if (tools[i].output != NULL) {
			if ((o = json_loads(tools[i].output, 0, &je)) == NULL)
				fatalx("tool %s: output schema: %s",
				    tools[i].name, je.text);
			json_object_set_new(t, "outputSchema", o);
		}
		json_array_append_new(list, t);
	}
	return json_pack("{s:o}", "tools", list);
}

/*
 * File contents and stdin text may hold any character; names, paths,
 * code may not.
 */
static bool
bytes_arg(const char *name)
{
	return strcmp(name, "content") == 0 ||
	    strcmp(name, "old_string") == 0 || strcmp(name, "new_string") == 0 ||
	    strcmp(name, "text") == 0;
}

/* 0, or -EINVAL with why in err. */
static int
check_args(const struct tool *t, json_t *args, char *err,
    size_t errlen)
{
	const struct arg *a;
	const char *k, *ek;
	json_t *v, *ev;

	json_object_foreach(args, k, v) {
		for (a = t->args; a->name != NULL; a++)
			if (strcmp(a->name, k) == 0)
				break;
		if (a->name == NULL) {
			snprintf(err, errlen, "%s: unknown argument '%s'",
			    t->name, k);
			return -EINVAL;
		}
		if ((a->type == A_STR && !json_is_string(v)) ||
		    (a->type == A_INT && (!json_is_integer(v) ||
		    json_integer_value(v) < 0)) ||
		    (a->type == A_BOOL && !json_is_boolean(v)) ||
		    (a->type == A_ENV && !json_is_object(v))) {
			snprintf(err, errlen, "%s: argument '%s' must be %s",
			    t->name, k, a->type == A_STR ? "a string" :
			    a->type == A_INT ? "an integer, 0 or more" :
			    a->type == A_BOOL ? "a boolean" : "an object");
			return -EINVAL;
		}
		if (a->type == A_STR && !bytes_arg(k) &&
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(err, errlen, "%s: argument '%s' must not "
			    "hold a NUL character", t->name, k);
			return -EINVAL;
		}
		if (a->type == A_ENV)
			json_object_foreach(v, ek, ev)
				if (!json_is_string(ev) ||
				    strlen(json_string_value(ev)) !=
				    json_string_length(ev)) {
					snprintf(err, errlen, "%s: env value "
					    "of '%s' must be a string",
					    t->name, ek);
					return -EINVAL;
				}
	}
	for (a = t->args; a->name != NULL; a++)
		if (a->required && json_object_get(args, a->name) == NULL) {
			snprintf(err, errlen, "%s: missing required argument "
			    "'%s'", t->name, a->name);
			return -EINVAL;
		}
	return 0;
}

bool
mcp_tools_runs(const json_t *params)
{
	const char *name = json_string_value(json_object_get(params,
	    "name"));

	return name != NULL && (strcmp(name, "run_code") == 0 ||
	    strcmp(name, "run_command") == 0);
}

/* tools/call: find the tool, check its arguments, run it. */
void
mcp_tools_call(struct mcp_call *c, const json_t *params)
{
	const char *name = json_string_value(json_object_get(params,
	    "name"));
	json_t *args = json_object_get(params, "arguments"), *empty = NULL;
	char err[256];

	if (name == NULL || strlen(name) != json_string_length(
	    json_object_get(params, "name"))) {
		mcp_call_rpc_error(c, JSONRPC_INVALID_PARAMS, "tools/call "
		    "needs params.name, a string");
		return;
	}
	if (args != NULL && !json_is_object(args)) {
		mcp_call_rpc_error(c, JSONRPC_INVALID_PARAMS, "tools/call: "
		    "params.arguments must be an object");
		return;
	}
	for (size_t i = 0; i < NTOOLS; i++) {
		if (strcmp(tools[i].name, name) != 0)
			continue;
		if (args == NULL)
			args = empty = json_object();
		if (check_args(&tools[i], args, err, sizeof(err)) < 0)
			mcp_call_rpc_error(c, JSONRPC_INVALID_PARAMS, err);
		else
			tools[i].fn(c, args);
		json_decref(empty);
		return;
	}
	if (mcp_gateway_call(c, name, params))
		return;
	snprintf(err, sizeof(err), "unknown tool: %.200s", name);
	mcp_call_rpc_error(c, JSONRPC_INVALID_PARAMS, err);
}
