/*
 * pseudofile.h -- a file of a kernel (pseudo) file system -- procfs,
 * sysfs, debugfs and the like -- read for a response without ever
 * waiting in read().
 *
 * Such a file's size says nothing (0, or a fake 4096), and a read of it
 * may wait for the kernel forever (/proc/kmsg waits for the next log
 * message).  Its fd stays O_NONBLOCK; a read that finds nothing returns
 * HTTP_READ_WAIT and watches the fd and a timer on the loop, which wake
 * the response's reader when there is more.  What is read is bounded in
 * bytes and in time, so that a file that never ends gives a snapshot,
 * not a stream.  Loop thread only.
 */
#ifndef EXECD_PSEUDOFILE_H
#define EXECD_PSEUDOFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct loop;
struct http_reader;
struct pseudofile;		/* opaque */

/*
 * True for a file of a kernel filesystem (procfs, sysfs and the like),
 * whose size says nothing of what a read gives.
 */
bool	 pseudofile_is(int fd);
/*
 * The reader of fd, a pseudo file opened O_NONBLOCK; takes ownership of
 * fd.  Never NULL.  Give it the response's reader before the first read.
 */
struct pseudofile *pseudofile_new(struct loop *, int fd);
/* The response reader that a wait wakes (http_resp_reader_of()). */
void	 pseudofile_set_reader(struct pseudofile *, struct http_reader *);
/*
 * Up to max bytes of the file (> 0), 0 at its end or once a bound is
 * reached, -1 on an error (errno set), or HTTP_READ_WAIT with the fd and
 * a timer watched on the loop, which wake the reader again.
 */
ssize_t	 pseudofile_read(struct pseudofile *, char *out, size_t max);
/* Stop waiting: the fd off the loop, the timer cancelled. */
void	 pseudofile_unwait(struct pseudofile *);
/* Stop waiting and close the file; NULL ok. */
void	 pseudofile_free(struct pseudofile *);

#endif
