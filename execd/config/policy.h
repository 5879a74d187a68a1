/*
 * policy.h -- the policy file (--config) as a view of conf.h's table of
 * options: printed back for --print-config, in a form conf.c's reader
 * accepts, and read under the names this module has always had.
 *
 * The file's shape and its errors are conf.h's (conf_file_load): conf.c
 * reads every source of options, and this module depends on it, never the
 * reverse.  Main thread.
 */
#ifndef EXECD_POLICY_H
#define EXECD_POLICY_H

#include <stddef.h>
#include <stdio.h>

#include "conf.h"

#define POLICY_MAX	CONF_FILE_MAX	/* largest file read, in bytes */

/* conf_file_load: read the file at path over what c holds; see conf.h. */
int	policy_load(struct conf *c, const char *path, char *err,
	    size_t errlen);
/* conf_file_parse: the same from len bytes at text, named name. */
int	policy_parse(struct conf *c, const char *name, const char *text,
	    size_t len, char *err, size_t errlen);
/*
 * Print c's options in force as a commented policy file.  The access
 * token is never printed (a comment says so); options with no value
 * are printed as comments.  Reading the output back and printing again
 * gives the same text.
 */
void	policy_print(const struct conf *c, FILE *f);

#endif
