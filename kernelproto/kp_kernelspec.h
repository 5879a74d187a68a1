/*
 * kp_kernelspec.h -- kernelspec discovery and parsing, as Jupyter does it.
 *
 * Search path, first match of a name wins: each entry of $JUPYTER_PATH
 * (colon-separated), then $JUPYTER_DATA_DIR or ~/.local/share/jupyter (or
 * $XDG_DATA_HOME/jupyter), then ~/.local/share/jupyter if not yet listed,
 * then <prefix>/share/jupyter for each Python prefix ($VIRTUAL_ENV,
 * $CONDA_PREFIX, the parent of each <dir>/bin on $PATH holding python3 or
 * python), then /usr/local/share/jupyter, then /usr/share/jupyter;
 * kernels live in <dir>/kernels/<name>/kernel.json.  Names are directory
 * names (letters, digits, '-', '.', '_'), lowercased as Jupyter does.
 * No logging; any thread.
 */
#ifndef KP_KERNELSPEC_H
#define KP_KERNELSPEC_H

#include <stddef.h>

#include <jansson.h>

enum kp_interrupt { KP_INTERRUPT_SIGNAL, KP_INTERRUPT_MESSAGE };

struct kp_kernelspec {
	char			*name;
	char			*resource_dir;	/* the kernel's directory */
	char			**argv;		/* NULL-terminated */
	size_t			 argc;
	char			*display_name;
	char			*language;
	json_t			*env;		/* object of strings, owned */
	enum kp_interrupt	 interrupt_mode;
	json_t			*metadata;	/* object, owned */
};

/*
 * Parse kernel.json text for kernel name found in resource_dir.  argv must
 * be a non-empty array of strings; env an object of strings; language and
 * display_name strings; interrupt_mode "signal" (default) or "message".
 * 0 with *out set, or -EINVAL with a message in err.
 */
int	kp_kernelspec_parse(const char *text, size_t n, const char *name,
	    const char *resource_dir, struct kp_kernelspec **out, char *err,
	    size_t errlen);
void	kp_kernelspec_free(struct kp_kernelspec *);	/* NULL ok */

/*
 * The search path from the environment, as described above: a
 * NULL-terminated array of allocated strings; free with
 * kp_kernelspec_dirs_free.
 */
char	**kp_kernelspec_dirs(void);
void	  kp_kernelspec_dirs_free(char **);

/*
 * Every kernelspec under dirs (NULL-terminated), the first of each name
 * winning, sorted by name.  Unparsable kernel.json files and invalid names
 * are skipped (and counted in *skipped if not NULL).  0 with *out
 * (NULL-terminated array) set, or -errno.
 */
int	kp_kernelspec_find_all(char *const *dirs,
	    struct kp_kernelspec ***out, size_t *skipped);
void	kp_kernelspec_list_free(struct kp_kernelspec **);

/*
 * argv with {connection_file} and {resource_dir} replaced wherever they
 * occur: a NULL-terminated array of allocated strings (free each, then
 * the array), or NULL with errno set.
 */
char	**kp_kernelspec_argv(const struct kp_kernelspec *,
	    const char *connection_file);

#endif
