/*
 * t_rungate.c -- the run gate: waiters run in order when the last close
 * ends, a cancelled one never runs, and a waiter that closes the gate
 * again leaves the rest waiting, still in order.
 */
#include <stdio.h>
#include <string.h>

#include "../../execd/domain/rungate.h"
#include "../t.h"

static char			 trace[64];
static char			 A[] = "a", B[] = "b", C[] = "c", D[] = "d",
				 X[] = "x", Z[] = "z";
static struct rungate_wait	*victim;

static void
note(void *arg)
{
	strncat(trace, arg, sizeof(trace) - strlen(trace) - 1);
}

/* Closes the gate again, as a run that began a restore would. */
static void
closer(void *arg)
{
	note(arg);
	rungate_close();
}

/* Cancels another waiter (its client left meanwhile). */
static void
canceller(void *arg)
{
	note(arg);
	rungate_cancel(victim);
	victim = NULL;
}

static void
t_order(void)
{
	trace[0] = '\0';
	T_OK(!rungate_closed());
	rungate_close();
	rungate_close();		/* two restores */
	T_OK(rungate_closed());
	rungate_wait(note, A);
	rungate_cancel(rungate_wait(note, X));
	rungate_wait(note, B);
	rungate_open();
	T_EQ_STR(trace, "");		/* one restore still runs */
	rungate_open();
	T_EQ_STR(trace, "ab");
	T_OK(!rungate_closed());
	rungate_open();			/* more opens than closes: nothing */
	T_OK(!rungate_closed());
}

static void
t_closed_again(void)
{
	trace[0] = '\0';
	rungate_close();
	rungate_wait(note, A);
	rungate_wait(closer, B);
	rungate_wait(note, C);
	rungate_open();
	T_EQ_STR(trace, "ab");
	T_OK(rungate_closed());
	rungate_wait(note, D);	/* came after c */
	rungate_open();
	T_EQ_STR(trace, "abcd");
}

static void
t_cancel_from_a_go(void)
{
	trace[0] = '\0';
	rungate_close();
	rungate_wait(canceller, A);
	victim = rungate_wait(note, B);
	rungate_wait(note, C);
	rungate_open();
	T_EQ_STR(trace, "ac");
	rungate_close();
	rungate_wait(note, Z);
	rungate_shutdown();		/* forgotten, not run */
	T_OK(!rungate_closed());
	T_EQ_STR(trace, "ac");
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "waiters run in order once every close ended", t_order },
		{ "a waiter that closes the gate again", t_closed_again },
		{ "a waiter cancelled by another's go", t_cancel_from_a_go },
	};

	return T_RUN(cases);
}
