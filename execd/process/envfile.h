/*
 * envfile.h -- the KEY=VALUE file named by EXECD_ENVS, merged into the
 * environment of every command (as the upstream daemon's entrypoints
 * expect: they write variables there for commands to see).
 *
 * The file is read again for each command, so a change applies to the
 * next one.  Loop thread (it reads a small file synchronously).
 */
#ifndef EXECD_ENVFILE_H
#define EXECD_ENVFILE_H

#include <jansson.h>

#define ENVFILE_MAX	(1 << 20)	/* bytes read from the file at most */

/*
 * The variables of the file at path, as a JSON object of strings in file
 * order (a later line wins).  Blank lines and lines starting with '#' are
 * skipped, as are lines without '=' or whose name is not a shell name; a
 * line is split at its first '='; quotes are kept literally; $NAME and
 * ${NAME} in values expand from execd's environment (undefined: empty).
 * A "~/" at the start of path is the home directory.  A missing or
 * unreadable file gives an empty object.  Never NULL.
 */
json_t	*envfile_read(const char *path);

#endif
