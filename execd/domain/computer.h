/*
 * computer.h -- the screen, mouse and keyboard of an X display, for agents
 * that drive a desktop (the /computer routes and the MCP computer tools).
 *
 * The module owns one connection to the X server that --display (else
 * $DISPLAY) names, opened on first use, opened again when the server
 * went away, and serialised by a mutex: every call below may block on
 * the server, so callers run them on a worker (work.h), never on the
 * loop thread.  No
 * display is never fatal: calls fail with -ENXIO and a message naming
 * what is missing.
 *
 * Errors: -ENXIO no display (or it went away and cannot be reached
 * again), -EINVAL bad input (off screen, unknown key name), -ENOENT no
 * such window, -EIO what the server refused; each with a message in err.
 * computer_keys_parse() and computer_text_keysyms() keep no state and
 * take no lock (fuzzed).  computer_keys_parse() may read Xlib's keysym
 * database from disk (a name not in Xlib's built-in table), so it is no
 * call for the loop thread: front ends hand the names to
 * computer_op_run() (COMPUTER_OP_KEYS with text), which parses them on
 * the worker, one parse at a time.  Everything else takes the module's
 * lock.
 */
#ifndef EXECD_COMPUTER_H
#define EXECD_COMPUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define COMPUTER_ERRLEN		256
/* Keys in one combination ("ctrl+shift+t": 3), combinations in a list. */
#define COMPUTER_COMBO_MAX	8
#define COMPUTER_COMBOS_MAX	64
/* Characters one keyboard call types at most. */
#define COMPUTER_TEXT_MAX	65536

struct computer_screen {
	int	width, height;
	int	cursor_x, cursor_y;
};

enum computer_mouse_action {
	COMPUTER_MOVE, COMPUTER_CLICK, COMPUTER_DRAG, COMPUTER_SCROLL
};

struct computer_mouse {
	enum computer_mouse_action action;
	bool	has_xy;		/* x, y given: move there first */
	int	x, y;
	int	button;		/* 1-5 (1 left, 2 middle, 3 right) */
	int	count;		/* clicks (1-10); scroll: unused */
	int	to_x, to_y;	/* drag: where the button is released */
	int	dx, dy;		/* scroll: notches, + right/down, - left/up */
};

/*
 * A region of the screen: w or h 0 reaches the screen's edge; scaled
 * down to scale_width when that is smaller (0: not scaled).
 */
struct computer_shot {
	int	x, y, w, h;
	int	scale_width;
};

/* One combination: keysyms pressed in order, released in reverse. */
struct computer_combo {
	unsigned long	sym[COMPUTER_COMBO_MAX];
	int		n;
};

/*
 * Parse xdotool-style key names: combinations joined by '+', several
 * separated by spaces ("ctrl+shift+t", "ctrl+a BackSpace").  Names are
 * X keysym names (Return, F5, Page_Up), a few aliases (ctrl, alt, shift,
 * super, enter, esc, backspace, del, pageup, pagedown, up, down, left,
 * right, space, tab, case-insensitive) or one character (UTF-8).  Fills
 * out[0..max) and returns how many, or -EINVAL with why in err.
 */
int	computer_keys_parse(const char *s, struct computer_combo *out,
	    int max, char *err, size_t errlen);

/*
 * The keysyms that type n bytes of UTF-8 text: a newline is Return, a
 * tab Tab, other characters their Unicode keysyms.  Fills out[0..max)
 * and returns how many, or -EINVAL (not UTF-8, a NUL or another control
 * character, more than max) with why in err.
 */
int	computer_text_keysyms(const char *s, size_t n, uint32_t *out,
	    size_t max, char *err, size_t errlen);

/*
 * The display to drive: name (--display; NULL or "": $DISPLAY).  Call
 * before any worker runs.
 */
void	computer_set_display(const char *name);
/* The display execd uses (--display, else $DISPLAY), or NULL. */
const char *computer_display_name(void);

int	computer_screen(struct computer_screen *, char *err, size_t errlen);
/*
 * The region as a PNG into *png (malloc'd, *len bytes); -EINVAL when it
 * is empty or not inside the screen.
 */
int	computer_screenshot(const struct computer_shot *, unsigned char **png,
	    size_t *len, char *err, size_t errlen);
/* Coordinates off the screen are -EINVAL, and nothing is done. */
int	computer_mouse(const struct computer_mouse *, char *err,
	    size_t errlen);
/* Type n bytes of UTF-8 text into the focused window. */
int	computer_type(const char *s, size_t n, char *err, size_t errlen);
/* Press n combinations (from computer_keys_parse()). */
int	computer_keys(const struct computer_combo *, int n, char *err,
	    size_t errlen);
/*
 * The top-level windows, [{id, title, class, x, y, width, height,
 * focused}] into *out: the window manager's _NET_CLIENT_LIST when there
 * is one, else the mapped children of the root window.
 */
int	computer_windows(json_t **out, char *err, size_t errlen);
/* Raise and focus window id; -ENOENT when it does not exist. */
int	computer_focus(unsigned long id, char *err, size_t errlen);

/*
 * One of the calls above as data, for front ends that hand it to a
 * worker: fill kind and its inputs, run computer_op_run() on the worker,
 * read rc, err and the outputs back on the loop, computer_op_free().
 */
enum computer_op_kind {
	COMPUTER_OP_SCREEN, COMPUTER_OP_SHOT, COMPUTER_OP_MOUSE,
	COMPUTER_OP_TYPE, COMPUTER_OP_KEYS, COMPUTER_OP_WINDOWS,
	COMPUTER_OP_FOCUS
};

struct computer_op {
	enum computer_op_kind	 kind;
	/* inputs */
	struct computer_shot	 shot;
	struct computer_mouse	 mouse;
	/* type: the text; keys: the names, parsed on the worker into
	 * combo (400 before any key is pressed); malloc'd, taken */
	char			*text;
	size_t			 text_len;
	struct computer_combo	 combo[COMPUTER_COMBOS_MAX];
	int			 ncombo;
	unsigned long		 window;
	/* outputs */
	int			 rc;
	char			 err[COMPUTER_ERRLEN];
	struct computer_screen	 screen;
	unsigned char		*png;		/* shot */
	size_t			 png_len;
	json_t			*windows;
};

void	computer_op_run(struct computer_op *);
/* Free op, its text, PNG and windows (what the caller did not take). */
void	computer_op_free(struct computer_op *);

/* Close the connection (at exit). */
void	computer_close(void);

#endif
