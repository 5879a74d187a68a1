/*
 * t_computer.c -- unit tests for computer.c's parsers: xdotool-style key
 * names (combinations, lists, aliases, single characters, '+' as a key,
 * the caps, what is refused) and text turned into keysyms (Latin-1 as
 * itself, other Unicode as 0x01000000 + code point, newline and CRLF as
 * Return, tab as Tab, controls and broken UTF-8 refused).  No display is
 * needed; the X calls themselves are covered by test_computer.py.
 */
#include <errno.h>
#include <string.h>

#include <X11/keysym.h>

#include "../../execd/domain/computer.h"
#include "../t.h"

static void
test_keys(void)
{
	struct computer_combo c[COMPUTER_COMBOS_MAX];
	char err[COMPUTER_ERRLEN];

	T_EQ_INT(computer_keys_parse("ctrl+shift+t", c, COMPUTER_COMBOS_MAX,
	    err, sizeof(err)), 1);
	T_EQ_INT(c[0].n, 3);
	T_EQ_INT(c[0].sym[0], XK_Control_L);
	T_EQ_INT(c[0].sym[1], XK_Shift_L);
	T_EQ_INT(c[0].sym[2], XK_t);
	T_EQ_INT(computer_keys_parse(" CTRL+a  BackSpace Return ", c,
	    COMPUTER_COMBOS_MAX, err, sizeof(err)), 3);
	T_EQ_INT(c[0].sym[0], XK_Control_L);
	T_EQ_INT(c[0].sym[1], XK_a);
	T_EQ_INT(c[1].sym[0], XK_BackSpace);
	T_EQ_INT(c[2].sym[0], XK_Return);
	T_EQ_INT(computer_keys_parse("ctrl++ F5 Page_Up pagedown esc", c,
	    COMPUTER_COMBOS_MAX, err, sizeof(err)), 5);
	T_EQ_INT(c[0].n, 2);
	T_EQ_INT(c[0].sym[1], XK_plus);
	T_EQ_INT(c[1].sym[0], XK_F5);
	T_EQ_INT(c[2].sym[0], XK_Page_Up);
	T_EQ_INT(c[3].sym[0], XK_Page_Down);
	T_EQ_INT(c[4].sym[0], XK_Escape);
	T_EQ_INT(computer_keys_parse("\xc3\xa9 \xe2\x98\x83", c,
	    COMPUTER_COMBOS_MAX, err, sizeof(err)), 2);
	T_EQ_INT(c[0].sym[0], 0xe9);
	T_EQ_INT(c[1].sym[0], 0x01002603);

	T_EQ_INT(computer_keys_parse("ctrl+nosuch", c, COMPUTER_COMBOS_MAX,
	    err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "'nosuch'") != NULL);
	T_EQ_INT(computer_keys_parse("ctrl+", c, COMPUTER_COMBOS_MAX, err,
	    sizeof(err)), -EINVAL);
	T_EQ_INT(computer_keys_parse("", c, COMPUTER_COMBOS_MAX, err,
	    sizeof(err)), -EINVAL);
	T_EQ_INT(computer_keys_parse("   ", c, COMPUTER_COMBOS_MAX, err,
	    sizeof(err)), -EINVAL);
	T_EQ_INT(computer_keys_parse("a+b+c+d+e+f+g+h", c,
	    COMPUTER_COMBOS_MAX, err, sizeof(err)), 1);
	T_EQ_INT(computer_keys_parse("a+b+c+d+e+f+g+h+i", c,
	    COMPUTER_COMBOS_MAX, err, sizeof(err)), -EINVAL);
	T_EQ_INT(computer_keys_parse("a b c", c, 2, err, sizeof(err)),
	    -EINVAL);
	T_EQ_INT(computer_keys_parse("\xff", c, COMPUTER_COMBOS_MAX, err,
	    sizeof(err)), -EINVAL);
	T_EQ_INT(computer_keys_parse("\t", c, COMPUTER_COMBOS_MAX, err,
	    sizeof(err)), -EINVAL);
}

static void
test_text(void)
{
	uint32_t s[16];
	char err[COMPUTER_ERRLEN];
	const char *t = "a\xc3\xa9\xe6\x97\xa5\r\nb\t\n";

	T_EQ_INT(computer_text_keysyms(t, strlen(t), s, 16, err,
	    sizeof(err)), 7);
	T_EQ_INT(s[0], 'a');
	T_EQ_INT(s[1], 0xe9);
	T_EQ_INT(s[2], 0x010065e5);
	T_EQ_INT(s[3], XK_Return);
	T_EQ_INT(s[4], 'b');
	T_EQ_INT(s[5], XK_Tab);
	T_EQ_INT(s[6], XK_Return);
	T_EQ_INT(computer_text_keysyms("\n", 1, s, 16, err, sizeof(err)), 1);
	T_EQ_INT(s[0], XK_Return);
	T_EQ_INT(computer_text_keysyms("abc", 3, s, 2, err, sizeof(err)),
	    -EINVAL);
	T_EQ_INT(computer_text_keysyms("a\0b", 3, s, 16, err, sizeof(err)),
	    -EINVAL);
	T_EQ_INT(computer_text_keysyms("\x07", 1, s, 16, err, sizeof(err)),
	    -EINVAL);
	T_EQ_INT(computer_text_keysyms("\xc2\x85", 2, s, 16, err,
	    sizeof(err)), -EINVAL);
	T_EQ_INT(computer_text_keysyms("\xc3", 1, s, 16, err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "UTF-8") != NULL);
	T_EQ_INT(computer_text_keysyms("", 0, s, 16, err, sizeof(err)), 0);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "computer_keys", test_keys },
		{ "computer_text", test_text },
	};

	return T_RUN(cases);
}
