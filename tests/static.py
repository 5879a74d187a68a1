"""The static build (`make static`): one binary that runs in any root.

Usage: /usr/bin/python3 tests/static.py [BINARY]   (default build/static/execd)

Checks that BINARY is static-pie, then runs it as PID 1 of new mount and
pid namespaces (unshare), listening on 127.0.0.1 only:
  - chrooted into an empty root holding only the binary, /tmp, /proc, a
    /dev/null and Debian's static busybox as /bin/sh;
  - chrooted into a busybox root (applets, /etc/passwd and /etc/group
    with a user of its own, found by uid and as a file's owner);
  - in this machine's own (Debian) root, with an nsswitch.conf naming a
    service that lives in a shared library (libnss_compat), bound over
    /etc/nsswitch.conf in the private mount namespace only.
In both it serves /ping, /command and the file API, and answers a lookup
of an unknown user (uid in /command) with a 400 instead of crashing.
Needs root.  Prints one PASS or FAIL line per check and, last,
"N passed, N failed".
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "integration"))
import lib  # noqa: E402

BUSYBOX = "/bin/busybox"
NOBODY_UID = 54321      # no such user in either root
# Runs "$@" as PID 1 of the namespaces unshare made: binds the files given
# as SRC:DST pairs in $2 (space separated), then, if $1 is not "/",
# chroots into $1.
JAIL_SH = """#!/bin/sh
root=$1 binds=$2
shift 2
for b in $binds; do
	mount --bind "${b%%:*}" "${b#*:}" || exit 97
done
[ "$root" = / ] && exec "$@"
exec chroot "$root" "$@"
"""


class Jailed(lib.Execd):
    """execd as PID 1 of its own mount and pid namespaces."""

    def __init__(self, tmp, root, binary, binds=(), args=()):
        jail = os.path.join(tmp, "jail.sh")
        with open(jail, "w") as f:
            f.write(JAIL_SH)
        wrapper = ("exec unshare -m -p -f --kill-child "
                   "--mount-proc=%s/proc /bin/sh %s "
                   "%s '%s'" % (root.rstrip("/"), jail, root,
                                " ".join("%s:%s" % b for b in binds)))
        super().__init__(*args, wrapper=wrapper, env={"HOME": "/tmp"})
        self.binary = binary

    def start(self, timeout=10):
        saved, lib.EXECD = lib.EXECD, self.binary
        try:
            return super().start(timeout)
        finally:
            lib.EXECD = saved

    def __exit__(self, etype, *exc):
        if etype is not None:
            print("execd log (%s):\n%s" % (self.binary,
                                            self.read_log()[-3000:]))
        return super().__exit__(etype, *exc)

    def pid(self):
        """execd's pid in our namespace: unshare's only child."""
        kids = lib.wait_for(lambda: lib.children_of(self.proc.pid), 5)
        assert len(kids) == 1, kids
        return kids[0][0]

    def stop(self, sig=signal.SIGTERM, timeout=15):
        # unshare ignores SIGTERM while it waits; signal execd itself.
        kids = lib.children_of(self.proc.pid)
        if self.proc.poll() is None and kids:
            os.kill(kids[0][0], sig)
        return super().stop(sig=0, timeout=timeout)


def nspid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return []


def serve_checks(d, where):
    """What the static binary must do wherever it runs."""
    ids = nspid(d.pid())
    assert ids and ids[-1] == 1, "execd is not PID 1 in %s: NSpid %s" % (
        where, ids)
    st, _, body = d.request("GET", "/ping")
    assert st == 200, (st, body)

    st, h, body = d.request("POST", "/command", body={
        "command": "echo static-$((6 * 7)); echo oops >&2; exit 3"},
        timeout=30)
    assert st == 200, (st, body)
    evs = lib.events(body)
    out = "".join(e.get("text", "") for e in evs if e.get("type") == "stdout")
    err = "".join(e.get("text", "") for e in evs if e.get("type") == "stderr")
    assert "static-42" in out, evs
    assert "oops" in err, evs

    # A uid no user has: getpwuid misses, which must be a 400, not a crash.
    st, _, body = d.request("POST", "/command",
                            body={"command": "id", "uid": NOBODY_UID})
    obj = lib.expect_error(st, body, 400)
    assert str(NOBODY_UID) in obj["message"], obj
    st, _, body = d.request("GET", "/ping")
    assert st == 200, "no /ping after an unknown uid: %s %r" % (st, body)

    # Files: upload, info (owner names: lookups that miss in an empty
    # root), download, search, delete.
    data = bytes(range(256)) * 64
    bnd = "----static-0123456789"
    path = "/tmp/static-files/a.bin"
    form = (b"--%s\r\nContent-Disposition: form-data; name=\"metadata\"\r\n"
            b"Content-Type: application/json\r\n\r\n%s\r\n"
            b"--%s\r\nContent-Disposition: form-data; name=\"file\"; "
            b"filename=\"blob\"\r\nContent-Type: application/octet-stream"
            b"\r\n\r\n%s\r\n--%s--\r\n" % (
                bnd.encode(), json.dumps({"path": path}).encode(),
                bnd.encode(), data, bnd.encode()))
    st, _, body = d.request("POST", "/files/upload", body=form, headers={
        "Content-Type": "multipart/form-data; boundary=" + bnd})
    assert st == 200, (st, body)
    st, info = d.get_json("/files/info?path=" + path)
    assert st == 200, (st, info)
    assert info[path]["size"] == len(data), info
    assert isinstance(info[path]["owner"], str), info
    st, _, body = d.request("GET", "/files/download?path=" + path)
    assert st == 200 and body == data, (st, len(body))
    st, found = d.get_json("/files/search?path=/tmp/static-files"
                           "&pattern=*.bin")
    assert st == 200 and [e["path"] for e in found] == [path], (st, found)
    st, _, body = d.request("DELETE", "/files?path=" + path)
    assert st == 200, (st, body)
    st, _, body = d.request("GET", "/files/info?path=" + path)
    lib.expect_error(st, body, 404)


def empty_root(tmp, binary):
    root = os.path.join(tmp, "root")
    for sub in ("bin", "tmp", "proc", "dev"):
        os.makedirs(os.path.join(root, sub))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    open(os.path.join(root, "dev", "null"), "w").close()
    shutil.copy2(binary, os.path.join(root, "execd"))
    shutil.copy2(BUSYBOX, os.path.join(root, "bin", "sh"))
    return root


def check_file(binary):
    out = subprocess.run(["file", "-b", binary], capture_output=True,
                         text=True, check=True).stdout
    assert "static-pie linked" in out, out


def check_ldd(binary):
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    out = r.stdout + r.stderr
    # glibc's ldd says "statically linked" of static-pie (it has a dynamic
    # section but no interpreter), "not a dynamic executable" of static.
    assert ("statically linked" in out or
            "not a dynamic executable" in out), out
    assert "=>" not in out, out


def check_busybox():
    out = subprocess.run(["file", "-b", BUSYBOX], capture_output=True,
                         text=True, check=True).stdout
    assert "statically linked" in out, "%s is not static: %s" % (
        BUSYBOX, out)


def check_empty_root(binary):
    tmp = tempfile.mkdtemp(prefix="execd-static-")
    try:
        root = empty_root(tmp, binary)
        with Jailed(tmp, root, "/execd",
                    binds=[("/dev/null", root + "/dev/null")]) as d:
            serve_checks(d, "an empty root")
            st, h, body = d.request("POST", "/command", body={
                "command": "ls /"}, timeout=30)
            assert st == 200, (st, body)
            out = "\n".join(e.get("text", "") for e in lib.events(body)
                          if e.get("type") == "stdout")
            assert sorted(out.split()) == ["bin", "dev", "execd", "proc",
                                           "tmp"], out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_busybox_root(binary):
    """A root with busybox's applets and its own /etc/passwd and group."""
    tmp = tempfile.mkdtemp(prefix="execd-static-")
    try:
        root = empty_root(tmp, binary)
        os.rename(os.path.join(root, "bin", "sh"),
                  os.path.join(root, "bin", "busybox"))
        for app in ("sh", "id", "ls", "cat", "stat"):
            os.symlink("busybox", os.path.join(root, "bin", app))
        os.makedirs(os.path.join(root, "etc"))
        with open(os.path.join(root, "etc", "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n"
                    "app:x:1234:1234:app:/tmp:/bin/sh\n")
        with open(os.path.join(root, "etc", "group"), "w") as f:
            f.write("root:x:0:\napp:x:1234:\nextra:x:4321:app\n")
        with Jailed(tmp, root, "/execd",
                    binds=[("/dev/null", root + "/dev/null")]) as d:
            serve_checks(d, "a busybox root")
            st, h, body = d.request("POST", "/command", body={
                "command": "id -u; id -G; echo > /tmp/by-app",
                "uid": 1234}, timeout=30)
            assert st == 200, (st, body)
            out = "\n".join(e.get("text", "") for e in lib.events(body)
                            if e.get("type") == "stdout").split()
            assert out[:1] == ["1234"] and "4321" in out, out
            st, info = d.get_json("/files/info?path=/tmp/by-app")
            assert st == 200, info
            f = info["/tmp/by-app"]
            assert f["owner"] == "app" and f["group"] == "app", f
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_debian_root(binary):
    tmp = tempfile.mkdtemp(prefix="execd-static-")
    try:
        ns = os.path.join(tmp, "nsswitch.conf")
        with open(ns, "w") as f:
            f.write("passwd: compat\ngroup: compat\nshadow: compat\n"
                    "hosts: files dns\n")
        binds = [(ns, "/etc/nsswitch.conf")]
        with Jailed(tmp, "/", os.path.abspath(binary), binds=binds) as d:
            serve_checks(d, "the machine's root")
            # A user that does exist is still found, through "files".
            st, h, body = d.request("POST", "/command", body={
                "command": "id -u", "uid": 0}, timeout=30)
            assert st == 200, (st, body)
            out = "\n".join(e.get("text", "") for e in lib.events(body)
                          if e.get("type") == "stdout")
            assert out.strip() == "0", out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/static/execd"
    checks = [("file says static-pie", lambda: check_file(binary)),
              ("ldd finds no shared library", lambda: check_ldd(binary)),
              ("busybox is static", check_busybox),
              ("PID 1 in an empty root", lambda: check_empty_root(binary)),
              ("PID 1 in a busybox root with its own users",
               lambda: check_busybox_root(binary)),
              ("PID 1 in a Debian root, nsswitch compat",
               lambda: check_debian_root(binary))]
    passed = failed = 0
    for name, fn in checks:
        try:
            if os.geteuid() != 0 and "root" in name:
                raise AssertionError("needs root (unshare, chroot)")
            fn()
        except Exception:
            failed += 1
            print("FAIL static: %s" % name)
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print("PASS static: %s" % name)
        lib.kill_all()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
