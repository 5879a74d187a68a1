/*
 * computer.c -- an X display driven for agents: screenshots, pointer,
 * keyboard, top-level windows.
 *
 * Dependencies, and why each:
 * - Xlib (libX11): the X connection, the screen's size, the pointer's
 *   position, the window tree and its properties, and XGetImage for the
 *   pixels; Debian ships it with a static archive, so `make static`
 *   links it too.
 * - XTEST (libXtst): input as if from the real devices, so every client
 *   (xterm, Chromium through XInput2) sees ordinary key and button
 *   events; XSendEvent's synthetic events are ignored by many clients.
 * - libpng: the PNG encoding of a screenshot, in memory.
 * Nothing is spawned (no xdotool, no xwd): one connection serves every
 * request, held under one lock.
 *
 * The connection: opened on first use from --display or $DISPLAY; an I/O error (the
 * server went away) marks it dead through Xlib's exit handler, which
 * returns instead of exiting; the call that met it fails with -ENXIO and
 * the next call opens a new one.  Protocol errors (a window that vanished)
 * are caught by an error handler and turned into return codes.
 *
 * Characters with no key on the keyboard map are typed as xdotool does:
 * a spare keycode (one with no keysym) is bound to the character's keysym
 * for the press.  Bindings stay until the spare is needed for another
 * character, so that a client that reads the keyboard map late still
 * finds the right one; before a spare is rebound the server is synced and
 * clients get a moment to read the events already sent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <X11/XKBlib.h>
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <png.h>

#include "../../util/utf8.h"
#include "../core/xmalloc.h"
#include "computer.h"

#define SPARE_MAX	16	/* spare keycodes kept for remapping */
#define DRAG_STEPS	12	/* pointer moves between press and release */
#define STEP_NS		8000000L	/* between drag steps, and clicks */
#define REBIND_NS	30000000L	/* before a spare keycode is rebound */
#define WINDOWS_MAX	4096
#define TITLE_MAX	1024

static pthread_mutex_t	 mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t	 parse_mu = PTHREAD_MUTEX_INITIALIZER; /* key names */
static Display		*dpy;
static bool		 dead;		/* the server went away */
static int		 xerr;		/* last protocol error code, or 0 */
static char		 dname[256];	/* the display dpy was opened on */
static char		 cfg_display[256]; /* --display, or "": $DISPLAY */
static KeyCode		 spare[SPARE_MAX];
static KeySym		 spare_sym[SPARE_MAX];
static int		 nspare, spare_next;

static const struct {
	const char	*alias;
	KeySym		 sym;
} aliases[] = {
	{ "ctrl", XK_Control_L }, { "control", XK_Control_L },
	{ "shift", XK_Shift_L }, { "alt", XK_Alt_L }, { "meta", XK_Meta_L },
	{ "super", XK_Super_L }, { "win", XK_Super_L }, { "cmd", XK_Super_L },
	{ "enter", XK_Return }, { "return", XK_Return }, { "esc", XK_Escape },
	{ "escape", XK_Escape }, { "backspace", XK_BackSpace },
	{ "del", XK_Delete }, { "delete", XK_Delete }, { "tab", XK_Tab },
	{ "space", XK_space }, { "pageup", XK_Page_Up },
	{ "pagedown", XK_Page_Down }, { "home", XK_Home }, { "end", XK_End },
	{ "insert", XK_Insert }, { "up", XK_Up }, { "down", XK_Down },
	{ "left", XK_Left }, { "right", XK_Right },
};

static void
pause_ns(long ns)
{
	struct timespec ts = { 0, ns };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* --- pure parsing ---------------------------------------------------- */

/* The keysym of one code point (0: none that can be typed). */
static KeySym
cp_keysym(uint32_t cp)
{
	if (cp == '\n' || cp == '\r')
		return XK_Return;
	if (cp == '\t')
		return XK_Tab;
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp > 0x10ffff)
		return 0;
	if (cp < 0x100)
		return cp;	/* Latin-1 keysyms are the code points */
	return 0x01000000UL | cp;
}

/* One code point of s[0..n): its length, 0 if not UTF-8. */
static size_t
utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k = utf8_len(p, n);

	switch (k) {
	case 1: *cp = p[0]; break;
	case 2: *cp = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f); break;
	case 3: *cp = (uint32_t)(p[0] & 0x0f) << 12 |
		    (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f); break;
	case 4: *cp = (uint32_t)(p[0] & 0x07) << 18 |
		    (uint32_t)(p[1] & 0x3f) << 12 |
		    (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f); break;
	default: return 0;
	}
	return k;
}

int
computer_text_keysyms(const char *s, size_t n, uint32_t *out, size_t max,
    char *err, size_t errlen)
{
	size_t i = 0, k, count = 0;
	uint32_t cp;
	KeySym sym;

	while (i < n) {
		if ((k = utf8_decode(s + i, n - i, &cp)) == 0) {
			snprintf(err, errlen, "text is not UTF-8 (byte %zu)",
			    i);
			return -EINVAL;
		}
		if ((sym = cp_keysym(cp)) == 0) {
			snprintf(err, errlen, "text holds a control character "
			    "(U+%04X) that no key types", (unsigned)cp);
			return -EINVAL;
		}
		if (cp == '\r' && i + 1 < n && s[i + 1] == '\n') {
			i += k;		/* CRLF: one Return */
			continue;
		}
		if (count == max) {
			snprintf(err, errlen, "text is longer than %zu "
			    "characters", max);
			return -EINVAL;
		}
		out[count++] = (uint32_t)sym;
		i += k;
	}
	return (int)count;
}

/* The keysym one key name stands for (0: none). */
static KeySym
name_keysym(const char *name, size_t n)
{
	char buf[64];
	uint32_t cp;
	KeySym sym;

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, name, n);
	buf[n] = '\0';
	if (memchr(buf, '\0', n) != NULL)
		return 0;
	/* One character names itself ("a", "é", "/"). */
	if (utf8_decode(buf, n, &cp) == n)
		return cp < 0x20 || cp == 0x7f ? 0 : cp_keysym(cp);
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcasecmp(aliases[i].alias, buf) == 0)
			return aliases[i].sym;
	sym = XStringToKeysym(buf);
	return sym == NoSymbol ? 0 : sym;
}

int
computer_keys_parse(const char *s, struct computer_combo *out, int max,
    char *err, size_t errlen)
{
	int count = 0;
	const char *p = s, *e, *k, *plus;
	KeySym sym;

	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e != '\0' && *e != ' '; e++)
			;
		if (count == max) {
			snprintf(err, errlen, "more than %d key combinations",
			    max);
			return -EINVAL;
		}
		out[count].n = 0;
		/* "ctrl++" is ctrl and '+': a '+' right after a '+' is a key. */
		for (k = p; k < e; k = plus + 1) {
			plus = k;
			if (*plus == '+')
				plus++;
			while (plus < e && *plus != '+')
				plus++;
			if ((sym = name_keysym(k, (size_t)(plus - k))) == 0) {
				snprintf(err, errlen, "unknown key name '%.*s'",
				    (int)(plus - k > 64 ? 64 : plus - k), k);
				return -EINVAL;
			}
			if (out[count].n == COMPUTER_COMBO_MAX) {
				snprintf(err, errlen, "more than %d keys in "
				    "one combination", COMPUTER_COMBO_MAX);
				return -EINVAL;
			}
			out[count].sym[out[count].n++] = sym;
			if (plus == e)
				break;
			if (plus + 1 == e) {
				snprintf(err, errlen, "key combination '%.*s' "
				    "ends with '+'", (int)(e - p > 64 ? 64 :
				    e - p), p);
				return -EINVAL;
			}
		}
		count++;
		p = e;
	}
	if (count == 0) {
		snprintf(err, errlen, "no key names");
		return -EINVAL;
	}
	return count;
}

/* --- the connection ---------------------------------------------------- */

static int
on_xerror(Display *d, XErrorEvent *e)
{
	xerr = e->error_code;
	return 0;
}

static int
on_ioerror(Display *d)
{
	return 0;	/* the exit handler below decides */
}

static void
on_ioexit(Display *d, void *arg)
{
	dead = true;	/* return: Xlib calls on d now fail at once */
}

void
computer_set_display(const char *name)
{
	snprintf(cfg_display, sizeof(cfg_display), "%s",
	    name != NULL ? name : "");
}

const char *
computer_display_name(void)
{
	const char *s = cfg_display[0] != '\0' ? cfg_display :
	    getenv("DISPLAY");

	return s != NULL && *s != '\0' ? s : NULL;
}

static void
drop_locked(void)
{
	if (dpy != NULL)
		XCloseDisplay(dpy);
	dpy = NULL;
	dead = false;
	nspare = spare_next = 0;
}

/* Keycodes with no keysym at any level: the spares. */
static void
find_spares(void)
{
	int lo, hi, per;
	KeySym *map;

	XDisplayKeycodes(dpy, &lo, &hi);
	map = XGetKeyboardMapping(dpy, (KeyCode)lo, hi - lo + 1, &per);
	if (map == NULL)
		return;
	for (int kc = hi; kc >= lo && nspare < SPARE_MAX; kc--) {
		int j;

		for (j = 0; j < per; j++)
			if (map[(kc - lo) * per + j] != NoSymbol)
				break;
		if (j == per) {
			spare[nspare] = (KeyCode)kc;
			spare_sym[nspare++] = NoSymbol;
		}
	}
	XFree(map);
}

/* The open connection, opened if need be: 0, or -ENXIO with why. */
static int
open_locked(char *err, size_t errlen)
{
	const char *name = computer_display_name();
	int ev, er, maj, min;

	if (dpy != NULL && dead)
		drop_locked();
	if (dpy != NULL && strcmp(dname, name != NULL ? name : "") != 0)
		drop_locked();		/* DISPLAY changed */
	if (dpy != NULL)
		return 0;
	if (name == NULL) {
		snprintf(err, errlen, "no X display: DISPLAY is not set "
		    "and no --display given");
		return -ENXIO;
	}
	XSetErrorHandler(on_xerror);
	XSetIOErrorHandler(on_ioerror);
	if ((dpy = XOpenDisplay(name)) == NULL) {
		snprintf(err, errlen, "cannot open X display '%s'", name);
		return -ENXIO;
	}
	XSetIOErrorExitHandler(dpy, on_ioexit, NULL);
	snprintf(dname, sizeof(dname), "%s", name);
	if (!XTestQueryExtension(dpy, &ev, &er, &maj, &min)) {
		drop_locked();
		snprintf(err, errlen, "X display '%s' has no XTEST extension",
		    name);
		return -ENXIO;
	}
	find_spares();
	return 0;
}

/* After a call's requests: sync, then whether the server went away. */
static int
sync_locked(char *err, size_t errlen)
{
	XSync(dpy, False);
	if (dead) {
		snprintf(err, errlen, "X display '%s' went away", dname);
		drop_locked();
		return -ENXIO;
	}
	return 0;
}

/* A worker stuck on a hung server holds the lock: then leave it be. */
void
computer_close(void)
{
	if (pthread_mutex_trylock(&mu) != 0)
		return;
	drop_locked();
	pthread_mutex_unlock(&mu);
}

/* --- screen and screenshot ------------------------------------------- */

static void
size_locked(int *w, int *h)
{
	*w = DisplayWidth(dpy, DefaultScreen(dpy));
	*h = DisplayHeight(dpy, DefaultScreen(dpy));
}

int
computer_screen(struct computer_screen *out, char *err, size_t errlen)
{
	Window root, child;
	int rx = 0, ry = 0, wx, wy, rc;
	unsigned int mask;

	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) == 0) {
		size_locked(&out->width, &out->height);
		XQueryPointer(dpy, DefaultRootWindow(dpy), &root, &child,
		    &rx, &ry, &wx, &wy, &mask);
		out->cursor_x = rx;
		out->cursor_y = ry;
		rc = sync_locked(err, errlen);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

struct pngbuf {
	unsigned char	*p;
	size_t		 len, cap;
};

static void
png_put(png_structp png, png_bytep data, png_size_t n)
{
	struct pngbuf *b = png_get_io_ptr(png);

	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void
png_noflush(png_structp png)
{
}

/* rgb (w x h, 3 bytes a pixel) as a PNG: 0, or -EIO. */
static int
encode_png(const unsigned char *rgb, int w, int h, unsigned char **out,
    size_t *len, char *err, size_t errlen)
{
	png_structp png;
	png_infop info;
	struct pngbuf b = { NULL, 0, 0 };
	struct pngbuf *volatile bp = &b;

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL,
	    NULL);
	if (png == NULL || (info = png_create_info_struct(png)) == NULL) {
		png_destroy_write_struct(&png, NULL);
		snprintf(err, errlen, "cannot start a PNG encoder");
		return -EIO;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		free(bp->p);
		snprintf(err, errlen, "PNG encoding failed");
		return -EIO;
	}
	png_set_write_fn(png, &b, png_put, png_noflush);
	/* Screens are flat areas and text: fast deflate does well. */
	png_set_compression_level(png, 1);
	png_set_filter(png, 0, PNG_FILTER_SUB);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
	    PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
	    PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (int y = 0; y < h; y++)
		png_write_row(png, (png_const_bytep)(rgb + (size_t)y * w * 3));
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	*out = b.p;
	*len = b.len;
	return 0;
}

static int
mask_shift(unsigned long m)
{
	int s = 0;

	if (m == 0)
		return 0;
	while (!(m & 1)) {
		m >>= 1;
		s++;
	}
	return s;
}

/* An 8-bit channel from a pixel and its mask. */
static unsigned char
channel(unsigned long px, unsigned long m, int shift)
{
	unsigned long v = (px & m) >> shift, max = m >> shift;

	return max == 0 ? 0 : (unsigned char)(v * 255 / max);
}

/* The image as RGB, 3 bytes a pixel, rows top to bottom. */
static unsigned char *
image_rgb(XImage *im)
{
	unsigned char *rgb = xmalloc((size_t)im->width * im->height * 3), *o;
	int rs = mask_shift(im->red_mask), gs = mask_shift(im->green_mask),
	    bs = mask_shift(im->blue_mask);
	bool fast = im->bits_per_pixel == 32 && im->byte_order == LSBFirst &&
	    im->red_mask == 0xff0000 && im->green_mask == 0xff00 &&
	    im->blue_mask == 0xff;

	o = rgb;
	for (int y = 0; y < im->height; y++) {
		const unsigned char *row = (const unsigned char *)im->data +
		    (size_t)y * im->bytes_per_line;

		for (int x = 0; x < im->width; x++) {
			if (fast) {
				o[0] = row[x * 4 + 2];
				o[1] = row[x * 4 + 1];
				o[2] = row[x * 4];
			} else {
				unsigned long px = XGetPixel(im, x, y);

				o[0] = channel(px, im->red_mask, rs);
				o[1] = channel(px, im->green_mask, gs);
				o[2] = channel(px, im->blue_mask, bs);
			}
			o += 3;
		}
	}
	return rgb;
}

/* Scale rgb (w x h) down to w2 x h2 by averaging each source box. */
static unsigned char *
scale_rgb(const unsigned char *rgb, int w, int h, int w2, int h2)
{
	unsigned char *out = xmalloc((size_t)w2 * h2 * 3), *o = out;

	for (int y = 0; y < h2; y++) {
		int y0 = (int)((long long)y * h / h2);
		int y1 = (int)((long long)(y + 1) * h / h2);

		if (y1 <= y0)
			y1 = y0 + 1;
		for (int x = 0; x < w2; x++) {
			int x0 = (int)((long long)x * w / w2);
			int x1 = (int)((long long)(x + 1) * w / w2);
			unsigned long sum[3] = { 0, 0, 0 }, n;

			if (x1 <= x0)
				x1 = x0 + 1;
			n = (unsigned long)(x1 - x0) * (unsigned long)(y1 - y0);
			for (int sy = y0; sy < y1; sy++)
				for (int sx = x0; sx < x1; sx++)
					for (int c = 0; c < 3; c++)
						sum[c] += rgb[((size_t)sy * w +
						    sx) * 3 + c];
			for (int c = 0; c < 3; c++)
				*o++ = (unsigned char)((sum[c] + n / 2) / n);
		}
	}
	return out;
}

int
computer_screenshot(const struct computer_shot *s, unsigned char **png,
    size_t *len, char *err, size_t errlen)
{
	int sw, sh, w, h, rc;
	XImage *im;
	unsigned char *rgb, *small;

	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) < 0)
		goto out;
	size_locked(&sw, &sh);
	w = s->w != 0 ? s->w : sw - s->x;
	h = s->h != 0 ? s->h : sh - s->y;
	if (s->x < 0 || s->y < 0 || w <= 0 || h <= 0 || s->x >= sw ||
	    s->y >= sh || w > sw - s->x || h > sh - s->y) {
		snprintf(err, errlen, "region %dx%d at %d,%d is not inside the "
		    "%dx%d screen", w, h, s->x, s->y, sw, sh);
		rc = -EINVAL;
		goto out;
	}
	xerr = 0;
	im = XGetImage(dpy, DefaultRootWindow(dpy), s->x, s->y,
	    (unsigned)w, (unsigned)h, AllPlanes, ZPixmap);
	if (im == NULL) {
		if ((rc = sync_locked(err, errlen)) == 0) {
			snprintf(err, errlen, "the X server refused the "
			    "screenshot (error %d)", xerr);
			rc = -EIO;
		}
		goto out;
	}
	rgb = image_rgb(im);
	XDestroyImage(im);
	pthread_mutex_unlock(&mu);	/* the rest needs no server */
	if (s->scale_width > 0 && s->scale_width < w) {
		int w2 = s->scale_width;
		int h2 = (int)(((long long)h * w2 + w / 2) / w);

		if (h2 < 1)
			h2 = 1;
		small = scale_rgb(rgb, w, h, w2, h2);
		free(rgb);
		rgb = small;
		w = w2;
		h = h2;
	}
	rc = encode_png(rgb, w, h, png, len, err, errlen);
	free(rgb);
	return rc;
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

/* --- pointer ------------------------------------------------------------ */

static int
on_screen(int x, int y, int sw, int sh, const char *what, char *err,
    size_t errlen)
{
	if (x >= 0 && y >= 0 && x < sw && y < sh)
		return 0;
	snprintf(err, errlen, "%s %d,%d is off the %dx%d screen", what, x, y,
	    sw, sh);
	return -EINVAL;
}

static void
move_locked(int x, int y)
{
	XTestFakeMotionEvent(dpy, DefaultScreen(dpy), x, y, CurrentTime);
}

static void
button_locked(unsigned b, int times)
{
	for (int i = 0; i < times; i++) {
		XTestFakeButtonEvent(dpy, b, True, CurrentTime);
		XTestFakeButtonEvent(dpy, b, False, CurrentTime);
		XFlush(dpy);
		if (i + 1 < times)
			pause_ns(STEP_NS);
	}
}

int
computer_mouse(const struct computer_mouse *m, char *err, size_t errlen)
{
	int sw, sh, rc;

	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) < 0)
		goto out;
	size_locked(&sw, &sh);
	if (m->has_xy && (rc = on_screen(m->x, m->y, sw, sh, "point", err,
	    errlen)) < 0)
		goto out;
	if (m->action == COMPUTER_DRAG && (rc = on_screen(m->to_x, m->to_y,
	    sw, sh, "drag end", err, errlen)) < 0)
		goto out;
	if (m->has_xy)
		move_locked(m->x, m->y);
	switch (m->action) {
	case COMPUTER_MOVE:
		break;
	case COMPUTER_CLICK:
		button_locked((unsigned)m->button, m->count);
		break;
	case COMPUTER_DRAG:
		XTestFakeButtonEvent(dpy, (unsigned)m->button, True,
		    CurrentTime);
		XFlush(dpy);
		for (int i = 1; i <= DRAG_STEPS; i++) {
			pause_ns(STEP_NS);
			move_locked(m->x + (m->to_x - m->x) * i / DRAG_STEPS,
			    m->y + (m->to_y - m->y) * i / DRAG_STEPS);
			XFlush(dpy);
		}
		pause_ns(STEP_NS);
		XTestFakeButtonEvent(dpy, (unsigned)m->button, False,
		    CurrentTime);
		break;
	case COMPUTER_SCROLL:
		/* Wheel buttons: 4 up, 5 down, 6 left, 7 right. */
		button_locked(m->dy < 0 ? 4 : 5, abs(m->dy));
		button_locked(m->dx < 0 ? 6 : 7, abs(m->dx));
		break;
	}
	rc = sync_locked(err, errlen);
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

/* --- keyboard ----------------------------------------------------------- */

/*
 * The keycode that types sym, and whether Shift is needed; a spare
 * keycode bound to sym when no key has it at the first two levels.
 * 0 when there is neither.
 */
static KeyCode
keycode_locked(KeySym sym, bool *shift)
{
	KeyCode kc = XKeysymToKeycode(dpy, sym);
	int i;

	*shift = false;
	if (kc != 0) {
		if (XkbKeycodeToKeysym(dpy, kc, 0, 0) == sym)
			return kc;
		if (XkbKeycodeToKeysym(dpy, kc, 0, 1) == sym) {
			*shift = true;
			return kc;
		}
	}
	for (i = 0; i < nspare; i++)
		if (spare_sym[i] == sym)
			return spare[i];
	if (nspare == 0)
		return 0;
	i = spare_next;
	spare_next = (spare_next + 1) % nspare;
	if (spare_sym[i] != NoSymbol) {
		/* Let clients read the events that used the old binding. */
		XSync(dpy, False);
		pause_ns(REBIND_NS);
	}
	{
		KeySym syms[2] = { sym, sym };

		XChangeKeyboardMapping(dpy, spare[i], 2, syms, 1);
	}
	XSync(dpy, False);
	spare_sym[i] = sym;
	return spare[i];
}

static void
key_locked(KeyCode kc, bool down)
{
	XTestFakeKeyEvent(dpy, kc, down, CurrentTime);
}

int
computer_type(const char *s, size_t n, char *err, size_t errlen)
{
	uint32_t *syms;
	int count, rc;
	KeyCode kc, shift_kc;
	bool shift;

	syms = xmalloc(sizeof(*syms) * (n > 0 ? n : 1));
	if ((count = computer_text_keysyms(s, n, syms, COMPUTER_TEXT_MAX, err,
	    errlen)) < 0) {
		free(syms);
		return count;
	}
	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) < 0)
		goto out;
	shift_kc = XKeysymToKeycode(dpy, XK_Shift_L);
	for (int i = 0; i < count && !dead; i++) {
		if ((kc = keycode_locked(syms[i], &shift)) == 0) {
			snprintf(err, errlen, "no keycode for U+%04X and no "
			    "spare keycode to bind it to", (unsigned)syms[i]);
			rc = -EIO;
			goto out;
		}
		if (shift && shift_kc != 0)
			key_locked(shift_kc, true);
		key_locked(kc, true);
		key_locked(kc, false);
		if (shift && shift_kc != 0)
			key_locked(shift_kc, false);
		if (i % 64 == 63)
			XSync(dpy, False);
	}
	rc = sync_locked(err, errlen);
out:
	pthread_mutex_unlock(&mu);
	free(syms);
	return rc;
}

int
computer_keys(const struct computer_combo *c, int n, char *err,
    size_t errlen)
{
	KeyCode kc[COMPUTER_COMBO_MAX], shift_kc;
	bool shift[COMPUTER_COMBO_MAX];
	int rc;

	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) < 0)
		goto out;
	shift_kc = XKeysymToKeycode(dpy, XK_Shift_L);
	for (int i = 0; i < n && !dead; i++) {
		for (int j = 0; j < c[i].n; j++)
			if ((kc[j] = keycode_locked(c[i].sym[j], &shift[j])) ==
			    0) {
				snprintf(err, errlen, "no keycode for keysym "
				    "0x%lx", c[i].sym[j]);
				rc = -EIO;
				goto out;
			}
		/* A key on the shifted level ("ctrl+T", "ctrl+?") gets Shift. */
		for (int j = 0; j < c[i].n; j++) {
			if (shift[j] && shift_kc != 0)
				key_locked(shift_kc, true);
			key_locked(kc[j], true);
		}
		for (int j = c[i].n - 1; j >= 0; j--) {
			key_locked(kc[j], false);
			if (shift[j] && shift_kc != 0)
				key_locked(shift_kc, false);
		}
		XFlush(dpy);
	}
	rc = sync_locked(err, errlen);
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

/* --- windows ------------------------------------------------------------ */

/* A window's title: _NET_WM_NAME (UTF-8), else WM_NAME. */
static json_t *
title_of(Window w)
{
	Atom net = XInternAtom(dpy, "_NET_WM_NAME", False);
	Atom utf8 = XInternAtom(dpy, "UTF8_STRING", False);
	Atom type;
	int fmt;
	unsigned long n, after;
	unsigned char *p = NULL;
	char *name = NULL;
	json_t *v = NULL;

	if (XGetWindowProperty(dpy, w, net, 0, TITLE_MAX / 4, False, utf8,
	    &type, &fmt, &n, &after, &p) == Success && p != NULL &&
	    type == utf8 && fmt == 8 && n > 0)
		v = json_stringn((const char *)p, n);	/* NULL when not UTF-8 */
	if (p != NULL)
		XFree(p);
	if (v != NULL)
		return v;
	if (XFetchName(dpy, w, &name) && name != NULL) {
		v = json_string(name);	/* NULL when not UTF-8 */
		XFree(name);
	}
	return v != NULL ? v : json_string("");
}

static bool
has_identity(Window w)
{
	XClassHint ch = { NULL, NULL };
	char *name = NULL;
	bool yes = false;

	if (XGetClassHint(dpy, w, &ch)) {
		yes = true;
		XFree(ch.res_name);
		XFree(ch.res_class);
	}
	if (!yes && XFetchName(dpy, w, &name) && name != NULL) {
		yes = true;
		XFree(name);
	}
	return yes;
}

/* The client window in a top-level frame: w, or a child with a name. */
static Window
client_of(Window w)
{
	Window root, parent, *kids = NULL, found = w;
	unsigned int n = 0;

	if (has_identity(w))
		return w;
	if (XQueryTree(dpy, w, &root, &parent, &kids, &n) && kids != NULL) {
		for (unsigned int i = 0; i < n; i++)
			if (has_identity(kids[i])) {
				found = kids[i];
				break;
			}
		XFree(kids);
	}
	return found;
}

static json_t *
window_json(Window w, Window focus)
{
	XWindowAttributes a;
	XClassHint ch = { NULL, NULL };
	Window child;
	int x = 0, y = 0;
	json_t *o;

	xerr = 0;
	if (!XGetWindowAttributes(dpy, w, &a) || xerr != 0)
		return NULL;
	XTranslateCoordinates(dpy, w, DefaultRootWindow(dpy), 0, 0, &x, &y,
	    &child);
	o = json_pack("{s:I, s:o, s:s, s:i, s:i, s:i, s:i, s:b, s:b}",
	    "id", (json_int_t)w, "title", title_of(w), "class", "",
	    "x", x, "y", y, "width", a.width, "height", a.height,
	    "mapped", a.map_state == IsViewable, "focused", w == focus);
	if (o != NULL && XGetClassHint(dpy, w, &ch)) {
		json_t *c = ch.res_class != NULL ? json_string(ch.res_class) :
		    NULL;

		if (c != NULL)
			json_object_set_new(o, "class", c);
		XFree(ch.res_name);
		XFree(ch.res_class);
	}
	return o;
}

int
computer_windows(json_t **out, char *err, size_t errlen)
{
	Window root, parent, *kids = NULL, focus;
	Atom list = None, type;
	int fmt, revert, rc;
	unsigned long n = 0, after;
	unsigned char *p = NULL;
	unsigned int nk = 0;
	json_t *arr, *o;

	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) < 0)
		goto out;
	arr = json_array();
	XGetInputFocus(dpy, &focus, &revert);
	list = XInternAtom(dpy, "_NET_CLIENT_LIST", True);
	if (list != None && XGetWindowProperty(dpy, DefaultRootWindow(dpy),
	    list, 0, WINDOWS_MAX, False, XA_WINDOW, &type, &fmt, &n, &after,
	    &p) == Success && p != NULL && type == XA_WINDOW && fmt == 32 &&
	    n > 0) {
		const unsigned long *w = (const unsigned long *)p;

		for (unsigned long i = 0; i < n; i++)
			if ((o = window_json(w[i], focus)) != NULL)
				json_array_append_new(arr, o);
	} else if (XQueryTree(dpy, DefaultRootWindow(dpy), &root, &parent,
	    &kids, &nk) && kids != NULL) {
		for (unsigned int i = 0; i < nk && i < WINDOWS_MAX; i++) {
			XWindowAttributes a;

			xerr = 0;
			if (!XGetWindowAttributes(dpy, kids[i], &a) ||
			    xerr != 0 || a.map_state != IsViewable ||
			    a.override_redirect)
				continue;
			if ((o = window_json(client_of(kids[i]), focus)) !=
			    NULL)
				json_array_append_new(arr, o);
		}
	}
	if (p != NULL)
		XFree(p);
	if (kids != NULL)
		XFree(kids);
	if ((rc = sync_locked(err, errlen)) < 0)
		json_decref(arr);
	else
		*out = arr;
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

int
computer_focus(unsigned long id, char *err, size_t errlen)
{
	XWindowAttributes a;
	XEvent ev;
	Atom active;
	int rc;

	pthread_mutex_lock(&mu);
	if ((rc = open_locked(err, errlen)) < 0)
		goto out;
	xerr = 0;
	if (id == 0 || !XGetWindowAttributes(dpy, (Window)id, &a) ||
	    xerr != 0) {
		if ((rc = sync_locked(err, errlen)) == 0) {
			snprintf(err, errlen, "no window 0x%lx", id);
			rc = -ENOENT;
		}
		goto out;
	}
	if (a.map_state != IsViewable) {
		snprintf(err, errlen, "window 0x%lx is not mapped", id);
		rc = -EINVAL;
		goto out;
	}
	/* Ask a window manager, if one listens, and do it ourselves. */
	active = XInternAtom(dpy, "_NET_ACTIVE_WINDOW", False);
	memset(&ev, 0, sizeof(ev));
	ev.xclient.type = ClientMessage;
	ev.xclient.window = (Window)id;
	ev.xclient.message_type = active;
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = 2;	/* from a pager: always honoured */
	ev.xclient.data.l[1] = CurrentTime;
	XSendEvent(dpy, DefaultRootWindow(dpy), False,
	    SubstructureRedirectMask | SubstructureNotifyMask, &ev);
	XRaiseWindow(dpy, (Window)id);
	XSetInputFocus(dpy, (Window)id, RevertToParent, CurrentTime);
	if ((rc = sync_locked(err, errlen)) == 0 && xerr != 0) {
		snprintf(err, errlen, "the X server refused to focus window "
		    "0x%lx (error %d)", id, xerr);
		rc = -EIO;
	}
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

/* --- as data, for workers ------------------------------------------------ */

void
computer_op_run(struct computer_op *op)
{
	char *e = op->err;
	size_t el = sizeof(op->err);

	switch (op->kind) {
	case COMPUTER_OP_SCREEN:
		op->rc = computer_screen(&op->screen, e, el);
		break;
	case COMPUTER_OP_SHOT:
		op->rc = computer_screenshot(&op->shot, &op->png,
		    &op->png_len, e, el);
		break;
	case COMPUTER_OP_MOUSE:
		op->rc = computer_mouse(&op->mouse, e, el);
		break;
	case COMPUTER_OP_TYPE:
		op->rc = computer_type(op->text, op->text_len, e, el);
		break;
	case COMPUTER_OP_KEYS:
		/*
		 * Names are resolved here, on the worker: a name Xlib does
		 * not know makes it read its keysym database from disk.
		 * One parse at a time, since that load is not thread-safe.
		 */
		if (op->text != NULL) {
			pthread_mutex_lock(&parse_mu);
			op->ncombo = computer_keys_parse(op->text, op->combo,
			    COMPUTER_COMBOS_MAX, e, el);
			pthread_mutex_unlock(&parse_mu);
			if (op->ncombo < 0) {
				op->rc = op->ncombo;
				break;
			}
		}
		op->rc = computer_keys(op->combo, op->ncombo, e, el);
		break;
	case COMPUTER_OP_WINDOWS:
		op->rc = computer_windows(&op->windows, e, el);
		break;
	case COMPUTER_OP_FOCUS:
		op->rc = computer_focus(op->window, e, el);
		break;
	}
}

void
computer_op_free(struct computer_op *op)
{
	if (op == NULL)
		return;
	free(op->text);
	free(op->png);
	json_decref(op->windows);
	free(op);
}
