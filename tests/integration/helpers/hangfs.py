"""A FUSE file system that never answers under one directory.

    hangfs.py MOUNTPOINT

The root holds ok.txt ("fine\\n") and the directory stuck/.  Any request
for stuck/ itself or for a path under it (lookup, getattr, open, read,
readdir, create, mkdir, unlink, rename, chmod ...) waits forever, as a
network or bucket mount does when its server stops answering.  Only
ending this process (SIGKILL) ends those requests: the kernel then fails
them with ENOTCONN.  Written for the tests, against libfuse through
Debian's python3-fusepy; it knows nothing of execd.
"""
import errno
import stat
import sys
import threading
import time

import fusepy

OK = b"fine\n"
NOW = time.time()


def stuck(path):
    return path == "/stuck" or path.startswith("/stuck/")


class HangFS(fusepy.Operations):
    def __init__(self):
        self.never = threading.Event()

    def hang(self, path):
        if stuck(path):
            self.never.wait()
            raise fusepy.FuseOSError(errno.EIO)

    def getattr(self, path, fh=None):
        self.hang(path)
        if path == "/":
            mode = stat.S_IFDIR | 0o755
            size = 0
        elif path == "/ok.txt":
            mode = stat.S_IFREG | 0o644
            size = len(OK)
        else:
            raise fusepy.FuseOSError(errno.ENOENT)
        return {"st_mode": mode, "st_nlink": 2 if mode & stat.S_IFDIR else 1,
                "st_size": size, "st_mtime": NOW, "st_atime": NOW,
                "st_ctime": NOW, "st_uid": 0, "st_gid": 0}

    def readdir(self, path, fh):
        self.hang(path)
        return [".", "..", "ok.txt", "stuck"]

    def read(self, path, size, offset, fh):
        self.hang(path)
        return OK[offset:offset + size]

    def open(self, path, flags):
        self.hang(path)
        return 0

    def access(self, path, amode):
        self.hang(path)
        return 0

    def statfs(self, path):
        self.hang(path)
        return {"f_bsize": 4096, "f_blocks": 1, "f_bavail": 0,
                "f_bfree": 0, "f_files": 2, "f_ffree": 0, "f_namemax": 255}

    def _refuse(self, path, *args):
        self.hang(path)
        raise fusepy.FuseOSError(errno.EROFS)

    create = mkdir = unlink = rmdir = chmod = chown = truncate = _refuse
    write = utimens = _refuse

    def rename(self, old, new):
        self.hang(old)
        self.hang(new)
        raise fusepy.FuseOSError(errno.EROFS)


if __name__ == "__main__":
    # Attributes and entries are never cached, so every request reaches
    # this process; each is served on a thread of its own.
    fusepy.FUSE(HangFS(), sys.argv[1], foreground=True, nothreads=False,
                attr_timeout=0, entry_timeout=0, negative_timeout=0,
                fsname="hangfs")
