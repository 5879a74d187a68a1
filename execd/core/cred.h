/*
 * cred.h -- running a stretch of execd's own code as another user: one
 * thread takes a uid, a gid and supplementary groups for a while, so that
 * the kernel decides every file access of that stretch as it would for
 * that user, then gives them back.
 *
 * Credentials are per thread here: cred_enter() changes only the calling
 * thread's (see cred.c for why, and what stays as it was).  A thread has
 * at most one identity at a time; a nested enter must name the same one.
 * The identity is also the thread's "current" one, which work.c carries
 * to the jobs a thread submits meanwhile (and their done callbacks).
 * Any thread.
 */
#ifndef EXECD_CRED_H
#define EXECD_CRED_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CRED_NGROUPS	1024	/* supplementary groups one identity may hold */

/*
 * A root directory to act in (cred_root()), or a mount namespace
 * (cred_view()): a descriptor shared, by count, by every copy of a cred
 * that names it.
 */
struct cred_root;

/*
 * An identity to act as.  Plain data but for root: copy it freely while
 * the original lives, and use cred_dup_current() / cred_free() for a
 * copy that outlives it.
 */
struct cred {
	uid_t	 uid;
	gid_t	 gid;
	size_t	 ngroups;
	gid_t	 groups[CRED_NGROUPS];	/* supplementary, as the account's */
	char	 home[PATH_MAX];	/* what "~" means; "/" when unknown */
	struct cred_root *root;		/* NULL: execd's own "/" */
};

/*
 * The identity of uid with gid as its group: the account's groups and
 * home from the user database; a uid the database does not know gets no
 * supplementary groups and "/" as its home.  0, or -errno with why in err
 * (the look-up failed, or the account has too many groups).  May block on
 * the user database.
 */
int	 cred_lookup(uid_t uid, gid_t gid, struct cred *out, char *err,
	    size_t errlen);
/*
 * The identity execd has now (its effective ids and groups, home from
 * $HOME or "/"), acting in the directory dirfd as its root: every path
 * the thread resolves while it holds the identity is looked up beneath
 * dirfd, as chroot(2) would ("/", "..", absolute symlinks all stay in
 * it), on this thread only.  dirfd is taken over (closed by the last
 * cred_free()).  0 or -errno.
 */
int	 cred_root(int dirfd, struct cred *out);
/*
 * The identity process pid has now, as the kernel checks its file
 * accesses (its filesystem uid and gid, its supplementary groups, read
 * from /proc/<pid>/status), with home from the user database as
 * cred_lookup() finds it.  0, or -errno with why in err (-ESRCH: no such
 * process).  May block on the user database.
 */
int	 cred_of_pid(pid_t pid, struct cred *out, char *err, size_t errlen);
/*
 * The ids of a /proc/<pid>/status text (len bytes, not NUL-terminated)
 * into out's uid, gid, ngroups and groups (the rest untouched): 0, or
 * -EINVAL (a line missing or malformed), -E2BIG (too many groups).
 */
int	 cred_parse_status(const char *text, size_t len, struct cred *out);
/*
 * The view of process pid's files with no procfs in it, as a root for
 * out (execd's identity, as cred_root() gives it): a private copy of
 * pid's mount namespace from which every procfs mount is detached, so
 * that no path a thread resolves in it can meet a "magic link" (a
 * /proc/<pid>/root, cwd, exe or fd/N, which the kernel follows to
 * wherever it points, past any root).  A thread holding out enters that
 * namespace (setns) instead of chrooting.  pid's root must be its
 * namespace's (no pivot_root or chroot), else -EXDEV.  0, or -errno with
 * why in err (-ESRCH: no such process).  The calling thread takes its own
 * filesystem context (unshare(CLONE_FS)) if it has not yet.
 */
int	 cred_view(pid_t pid, struct cred *out, char *err, size_t errlen);
/*
 * The mount points of the procfs mounts of a /proc/<pid>/mountinfo text
 * (len bytes), unescaped, to fn in order: their count, or -EINVAL (a
 * line malformed: fewer fields, no "-" separator, a mount point not
 * absolute, a bad escape) with fn called for those before it only.
 */
int	 cred_proc_mounts(const char *text, size_t len,
	    void (*fn)(const char *path, void *arg), void *arg);
/*
 * Take c on the calling thread (NULL: nothing).  0, or -errno with the
 * thread unchanged: not privileged to take it, or a non-root identity
 * that would keep an effective capability (-EPERM).
 */
int	 cred_enter(const struct cred *c);
/* Give back what the matching cred_enter(c) took (NULL: nothing). */
void	 cred_leave(const struct cred *c);
/* The calling thread's identity, NULL when it acts as execd. */
const struct cred *cred_current(void);
/* A heap copy of cred_current(), or NULL; cred_free() it. */
struct cred *cred_dup_current(void);
/* Free a heap copy, giving its root back (NULL: nothing). */
void	 cred_free(struct cred *);
/* Give up what cred_root() put in c (not c itself). */
void	 cred_root_drop(struct cred *);
/* Where "~" points for the calling thread's identity; NULL: execd's. */
const char *cred_home(void);

#endif
