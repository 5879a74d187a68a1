/*
 * envfile.h -- the environment of the processes execd starts for clients:
 * the dotenv file named by EXECD_ENVS, the overlay of a request's envs
 * over it, the environment array made from execd's own with an overlay on
 * top, and the expansion of $NAME, ${NAME} and ~ in a path (a command's
 * cwd) against that same environment.
 *
 * The file is read again each time it is asked for, so that a line
 * appended to it (an SDK's setEnv) reaches the next command at once.  Its
 * format is upstream's (1.1) dotenv, entry after entry:
 *   - blank lines and lines whose first non-blank is '#' are skipped;
 *   - NAME=value: the name is what comes before the first '=', blanks
 *     around it trimmed; "export NAME" is NAME; a name that is not a shell
 *     name ([A-Za-z_][A-Za-z0-9_]*) skips the line;
 *   - a value starting (after blanks) with a single quote is literal up to
 *     the next single quote, lines and all;
 *   - one starting with a double quote ends at the first double quote not
 *     escaped by a backslash, may span lines, and has \n \r \t \\ \"
 *     decoded (any other backslash pair is kept as it is), then $NAME and
 *     ${NAME} expanded;
 *   - after a closing quote only blanks may follow on that line, or the
 *     entry is skipped and reading goes on at its second line; a quote
 *     that is never closed skips its one line;
 *   - any other value is the rest of the line, blanks around it trimmed,
 *     with $NAME and ${NAME} expanded; '#' and quotes inside are kept;
 *   - expansion follows Go's os.ExpandEnv, from execd's environment: an
 *     undefined name is empty, "$1" and the like are empty, "${}" and an
 *     unclosed "${" vanish, a '$' before anything else stays;
 *   - a later entry for a name wins.
 * Values are bytes: they need not be UTF-8 (they are stored with
 * json_stringn_nocheck and must never be dumped as JSON), and a NUL in
 * one ends it in the environment.  Loop thread (it reads a small file
 * synchronously); envfile_parse and envfile_expand_path are pure apart
 * from reading execd's environment.
 */
#ifndef EXECD_ENVFILE_H
#define EXECD_ENVFILE_H

#include <stddef.h>

#include <jansson.h>

#define ENVFILE_MAX	(1 << 20)	/* bytes read from the file at most */

struct buf;

/*
 * The variables of a file's text p[0..n), as a JSON object of strings in
 * the order their names first appear.  Never NULL.
 */
json_t	*envfile_parse(const char *p, size_t n);
/*
 * The variables of the file at path, its $NAME, ${NAME} and leading ~
 * expanded from execd's environment.  A path naming an undefined
 * variable, or a missing or unreadable file, gives an empty object
 * (said in the log at debug level).  Never NULL.
 */
json_t	*envfile_read(const char *path);
/*
 * The overlay a process gets over execd's environment: the variables of
 * the file named by EXECD_ENVS, with over's (an object of strings, may be
 * NULL) over them.  A new object, never NULL.
 */
json_t	*envfile_overlay(const json_t *over);
/*
 * A function every overlay passes through last: it takes the overlay and
 * returns the one to use (the runtime binding's variables under it, the
 * sandbox id over it; domain/runtime.h), so that commands, sessions and
 * the expansion of a cwd all see them.  NULL: none.  Set once, at start.
 */
typedef json_t *envfile_wrap_fn(json_t *overlay);
void	 envfile_set_wrap(envfile_wrap_fn *);
/*
 * execd's environment with over's variables (may be NULL) replacing or
 * adding to it, and PWD=pwd when pwd is not NULL (under over): a
 * NULL-ended array to free with envfile_env_free().
 */
char	**envfile_env(const json_t *over, const char *pwd);
void	 envfile_env_free(char **);
/*
 * Expand path as upstream expands a working directory, into out (a
 * path, NUL-ended, without the NUL counted in out->len): every $NAME and
 * ${NAME} must be defined in execd's environment overlaid by over (may be
 * NULL), else -ENOENT with "path references undefined environment
 * variables: A,B" (sorted, each once) in err; then the expansion is
 * Go's os.Expand over that environment.  A leading "~" is not touched
 * here (fs_path_resolve's).  0 or -ENOENT; out->full when the path
 * did not fit under out's cap.
 */
int	 envfile_expand_path(const char *path, const json_t *over,
	    struct buf *out, char *err, size_t errlen);

#endif
