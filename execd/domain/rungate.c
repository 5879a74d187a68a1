/*
 * rungate.c -- the run gate: a count of restores that run and the list of
 * work that waits for their end.  See rungate.h.
 */
#include <stdlib.h>

#include "../core/xmalloc.h"
#include "rungate.h"

struct rungate_wait {
	rungate_fn		*go;
	void			*arg;
	struct rungate_wait	*next;
};

static unsigned			 closes;
static struct rungate_wait	*head, **tail = &head;

void
rungate_close(void)
{
	closes++;
}

bool
rungate_closed(void)
{
	return closes > 0;
}

struct rungate_wait *
rungate_wait(rungate_fn *go, void *arg)
{
	struct rungate_wait *w = xcalloc(1, sizeof(*w));

	w->go = go;
	w->arg = arg;
	*tail = w;		/* first come, first run */
	tail = &w->next;
	return w;
}

void
rungate_cancel(struct rungate_wait *w)
{
	struct rungate_wait **pp;

	if (w == NULL)
		return;
	for (pp = &head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			if (tail == &w->next)
				tail = pp;
			free(w);
			return;
		}
}

/*
 * Waiters run one at a time from the head, so that one cancelled by
 * another's go is simply gone; a go that closes the gate again (it began
 * a restore) leaves the rest waiting, in their order, and whoever asks
 * meanwhile waits behind them.
 */
void
rungate_open(void)
{
	struct rungate_wait *w;

	if (closes == 0 || --closes > 0)
		return;
	while (closes == 0 && (w = head) != NULL) {
		head = w->next;
		if (head == NULL)
			tail = &head;
		w->go(w->arg);
		free(w);
	}
}

void
rungate_shutdown(void)
{
	struct rungate_wait *w;

	while ((w = head) != NULL) {
		head = w->next;
		free(w);
	}
	tail = &head;
	closes = 0;
}
