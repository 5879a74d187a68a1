/*
 * forksrv.c -- fork servers for ipykernel (multiprocessing's forkserver,
 * Android's zygote): see forksrv.h.
 *
 * Wire, over a SOCK_SEQPACKET pair (the server's end is its fd 3): the
 * server sends a 4-byte 0 once its imports are done.  A request is one
 * JSON message, {"argv": [the kernel's], "cwd": s|null, "rlimits": [[res, cur,
 * max], ...], "ppid": n} (-1: no limit), with two fds in SCM_RIGHTS: the
 * kernel's stdout and stderr, and the read end of a "go" pipe; the reply
 * is a 4-byte int, the kernel's pid or -errno; the server's own
 * datagram pair carries the written pages a learning kernel reports at
 * its exit, which execd never sees.  The kernel blocks on the
 * go pipe until execd has registered it (so it cannot end unseen) and
 * moved it into its cgroup; execd then writes "g".  Closing the pipe
 * instead makes it exit.  Requests are answered in order, one at a
 * time.  execd does not wait for an answer: the server's fd is watched
 * on the loop for as long as it runs, and each answer, when it comes,
 * goes to the oldest request; so a server slow to answer delays only
 * the kernels it owes, which are launched instead after ANSWER_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/cgroup.h"
#include "../process/child.h"
#include "../process/limits.h"
#include "../process/spawn.h"
#include "forksrv.h"

#define NSERVERS	8	/* kernelspecs with a server at once */
/*
 * The wait for a fork's pid: a fork takes milliseconds, and a server
 * that leaves a request unanswered this long is stopped and the kernels
 * it owes are launched instead.
 */
#define ANSWER_MS	10000
#define MAX_FAILS	3	/* starts in a row that died unready */
#define REQ_MAX		65536	/* the server's receive buffer */

/* The server's program; its argv: -c, "execd-forkserver", spec, preloads. */
static const char server_py[] =
	"import sys\n"
	"def _serve():\n"
	"    import os, json, signal, socket, struct\n"
	"    import array, atexit, ctypes, datetime, pathlib, resource, select\n"
	"    import base64, builtins, io, threading, time\n"
	"    if sys.path and sys.path[0] == \"\":\n"
	"        del sys.path[0]\n"
	"    for m in sys.argv[3:]:\n"
	"        try:\n"
	"            __import__(m)\n"
	"        except Exception as e:\n"
	"            print(\"execd-forkserver: preload\", m, e,\n"
	"                  file=sys.stderr)\n"
	"    from ipykernel import kernelapp\n"
	"    import importlib.util\n"
	"    launcher = importlib.util.find_spec(\"ipykernel_launcher\")\n"
	"    argv0 = launcher.origin if launcher else kernelapp.__file__\n"
	"    import ipykernel.ipkernel, ipykernel.zmqshell\n"
	"    import IPython.core.completerlib, faulthandler  # each kernel's\n"
	"    import gc\n"
	"    from traitlets.config import Config\n"
	"    from IPython.core import magic_arguments as ma\n"
	"    from IPython.core.magics import script\n"
	"    from IPython.core.error import StdinNotImplementedError\n"
	"    # ScriptMagics builds one parser per script magic (bash, sh, perl,\n"
	"    # ...) in each new shell, all alike (a nameless, docless function\n"
	"    # with script_args' options): built once here, shared read-only.\n"
	"    build, memo = ma.construct_parser, {}\n"
	"    def construct_parser(f):\n"
	"        if f.__qualname__ != memo.get(\"q\") or f.__doc__ is not None \\\n"
	"                or hasattr(f, \"argcmd_kwds\"):\n"
	"            return build(f)\n"
	"        f.__doc__ = memo[\"doc\"]\n"
	"        return memo[\"p\"]\n"
	"    def named_script_magic(line, cell):\n"
	"        pass\n"
	"    f = ma.magic_arguments()(script.script_args(named_script_magic))\n"
	"    memo[\"p\"], memo[\"doc\"] = f.parser, f.__doc__\n"
	"    memo[\"q\"] = \"ScriptMagics._make_script_magic.<locals>.\" \\\n"
	"        \"named_script_magic\"\n"
	"    ma.construct_parser = construct_parser\n"
	"    # IPKernelApp's instance (a singleton) and its logging set up,\n"
	"    # alike for every kernel until its initialize()\n"
	"    app = kernelapp.IPKernelApp.instance()\n"
	"    app.log\n"
	"    from ipykernel.zmqshell import ZMQInteractiveShell\n"
	"    def drop_shell(sh):\n"
	"        # a kernel that builds its own shell: none left over\n"
	"        ZMQInteractiveShell.clear_instance()\n"
	"        atexit.unregister(sh.atexit_operations)\n"
	"    # IPython's shell (a singleton too: IPythonKernel's __init__ takes\n"
	"    # shell_class.instance()), built here as every kernel would build it,\n"
	"    # on the profile and config files each would read; unless the config\n"
	"    # names another kernel or shell class.  Nothing has run in it: its\n"
	"    # namespace is a new kernel's.  A kernel sets anew what is its own\n"
	"    # (history, _dh, the kernel the shell reports to): see kernel().\n"
	"    shell = None\n"
	"    try:\n"
	"        app.init_profile_dir()\n"
	"        app.init_config_files()\n"
	"        app.load_config_file()\n"
	"        cfg = app.config\n"
	"        if \"kernel_class\" not in cfg.IPKernelApp and \\\n"
	"                \"shell_class\" not in cfg.IPythonKernel:\n"
	"            from ipykernel.compiler import XCachingCompiler\n"
	"            cfg.HistoryManager.hist_file = \":memory:\"\n"
	"            shell = ZMQInteractiveShell.instance(\n"
	"                parent=app, profile_dir=app.profile_dir, kernel=None,\n"
	"                compiler_class=XCachingCompiler)\n"
	"            # IPython's default extension, which each kernel would load\n"
	"            # (unless it restores stored variables: that at its start)\n"
	"            if not cfg.StoreMagics.get(\"autorestore\", False):\n"
	"                shell.extension_manager.load_extension(\"storemagic\")\n"
	"    except Exception as e:\n"
	"        print(\"execd-forkserver: no shell built:\", repr(e),\n"
	"              file=sys.stderr)\n"
	"        if ZMQInteractiveShell.initialized():\n"
	"            drop_shell(ZMQInteractiveShell.instance())\n"
	"        shell = None\n"
	"    # what the imports made, kept out of the children's collections\n"
	"    # (and so never written to: shared pages stay shared)\n"
	"    gc.collect()\n"
	"    gc.freeze()\n"
	"    # no thread at all, C libraries' included, may exist at a fork\n"
	"    if len(os.listdir(\"/proc/self/task\")) != 1:\n"
	"        print(\"execd-forkserver: threads after the imports\",\n"
	"              file=sys.stderr)\n"
	"        os._exit(3)\n"
	"    libc = ctypes.CDLL(None, use_errno=True)\n"
	"    # One fork per kernel, whose parent is execd (CLONE_PARENT), as a\n"
	"    # launched kernel's is; done as os.fork() does it, around the GIL and\n"
	"    # the at-fork hooks, and with glibc's record of the thread's id set\n"
	"    # in the child as fork() sets it, when that record can be found.\n"
	"    # Where this cannot be (another architecture or C library, a clone\n"
	"    # refused), a middle process forks the kernel and exits.\n"
	"    gil = ctypes.PyDLL(None, use_errno=True)\n"
	"    gil.syscall.restype = ctypes.c_long\n"
	"    nr = {\"x86_64\": 56, \"aarch64\": 220}.get(os.uname().machine)\n"
	"    tid = None\n"
	"    try:\n"
	"        # glibc's struct pthread, whose first 1 KiB holds the tid field\n"
	"        if nr is not None and os.confstr(\"CS_GNU_LIBC_VERSION\"):\n"
	"            libc.pthread_self.restype = ctypes.c_void_p\n"
	"            me = libc.pthread_self()\n"
	"            words = (ctypes.c_int * 256).from_address(me)\n"
	"            hits = [i for i in range(256) if words[i] == os.getpid()]\n"
	"            if len(hits) == 1:\n"
	"                tid = me + 4 * hits[0]\n"
	"    except Exception:\n"
	"        pass\n"
	"    if tid is None:\n"
	"        nr = None\n"
	"    def clone():\n"
	"        flags = 0x8000 | signal.SIGCHLD          # CLONE_PARENT\n"
	"        flags |= 0x01000000                      # CLONE_CHILD_SETTID\n"
	"        a = [0, 0, 0, 0]          # stack, ptid, then ctid and tls (x86)\n"
	"        a[2 if nr == 56 else 3] = tid\n"
	"        ctypes.pythonapi.PyOS_BeforeFork()\n"
	"        pid = gil.syscall(ctypes.c_long(nr), ctypes.c_ulong(flags),\n"
	"                          *(ctypes.c_void_p(x) for x in a))\n"
	"        if pid == 0:\n"
	"            ctypes.pythonapi.PyOS_AfterFork_Child()\n"
	"            return 0\n"
	"        e = ctypes.get_errno()\n"
	"        ctypes.pythonapi.PyOS_AfterFork_Parent()\n"
	"        if pid < 0:\n"
	"            raise OSError(e, os.strerror(e))\n"
	"        return pid\n"
	"    # The pages a kernel or a run once writes, copied at once: each\n"
	"    # copy-on-write fault taken alone costs several times its share of one\n"
	"    # madvise (MADV_POPULATE_WRITE, Linux 5.14) over a run of pages.\n"
	"    # Which pages is learnt, for each kind (0: kernels, 1: runs once),\n"
	"    # from the first of that kind: each, as it exits, reads which pages\n"
	"    # of the server's private writable memory it no longer shares\n"
	"    # (/proc/self/pagemap) and sends them here.\n"
	"    PAGE = os.sysconf(\"SC_PAGE_SIZE\")\n"
	"    POPULATE_WRITE = 23\n"
	"    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t,\n"
	"                             ctypes.c_int)\n"
	"    spans = []\n"
	"    with open(\"/proc/self/maps\") as f:\n"
	"        for line in f:\n"
	"            m = line.split()\n"
	"            if m[1].startswith(\"rw\") and m[1][3] == \"p\" and \\\n"
	"                    (len(m) < 6 or m[5] == \"[heap]\"):\n"
	"                lo, hi = (int(x, 16) for x in m[0].split(\"-\"))\n"
	"                spans.append((lo, hi))\n"
	"    learn = bool(spans) and libc.madvise(spans[0][0], PAGE,\n"
	"                                         POPULATE_WRITE) == 0\n"
	"    hot = [[], []]          # per kind: (address, bytes) to populate\n"
	"    seen = [set(), set()]   # ... the pages reported\n"
	"    reports = [0, 0]\n"
	"    asked = [0, 0]\n"
	"    lr, lw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
	"\n"
	"    def written(kind):\n"
	"        # kind, then runs (address, pages) of the spans' pages this\n"
	"        # process wrote\n"
	"        runs = array.array(\"Q\", [kind])\n"
	"        with open(\"/proc/self/pagemap\", \"rb\", buffering=0) as f:\n"
	"            for lo, hi in spans:\n"
	"                ent = array.array(\"Q\")\n"
	"                ent.frombytes(os.pread(f.fileno(), (hi - lo) // PAGE * 8,\n"
	"                                       lo // PAGE * 8))\n"
	"                start = -1\n"
	"                for i, e in enumerate(ent):\n"
	"                    mine = e >> 63 and e >> 56 & 1\n"
	"                    if mine and start < 0:\n"
	"                        start = i\n"
	"                    elif not mine and start >= 0:\n"
	"                        runs.extend((lo + start * PAGE, i - start))\n"
	"                        start = -1\n"
	"                if start >= 0:\n"
	"                    runs.extend((lo + start * PAGE, len(ent) - start))\n"
	"        return runs[:8192 * 2 + 1]\n"
	"\n"
	"    def learnt(data):\n"
	"        runs = array.array(\"Q\")\n"
	"        runs.frombytes(data[:(len(data) - 8) // 16 * 16 + 8])\n"
	"        kind = runs[0] if runs and runs[0] < 2 else None\n"
	"        if kind is None or reports[kind] >= 3:\n"
	"            return\n"
	"        for i in range(1, len(runs), 2):\n"
	"            a, n = runs[i], runs[i + 1]\n"
	"            if any(lo <= a and a + n * PAGE <= hi for lo, hi in spans):\n"
	"                seen[kind].update(range(a, a + n * PAGE, PAGE))\n"
	"        reports[kind] += 1\n"
	"        # runs of the pages seen, a one-page gap bridged\n"
	"        new, prev = [], None\n"
	"        for p in sorted(seen[kind]):\n"
	"            if prev is not None and p - prev <= 2 * PAGE and \\\n"
	"                    any(lo <= prev and p < hi for lo, hi in spans):\n"
	"                new[-1][1] = p + PAGE - new[-1][0]\n"
	"            else:\n"
	"                new.append([p, PAGE])\n"
	"            prev = p\n"
	"        hot[kind] = [tuple(r) for r in new]\n"
	"\n"
	"    srv = socket.socket(fileno=3)\n"
	"    srv.send(struct.pack(\"i\", 0 if shell is None else 1))\n"
	"\n"
	"    def retitle(argv):\n"
	"        # /proc/PID/cmdline as a launched kernel's: argv over ours\n"
	"        with open(\"/proc/self/stat\") as f:\n"
	"            st = f.read()\n"
	"        st = st[st.rindex(\")\") + 2:].split()\n"
	"        start, end = int(st[45]), int(st[46])\n"
	"        b = b\"\\0\".join(a.encode() for a in argv)\n"
	"        b = b[:end - start - 1].ljust(end - start, b\"\\0\")\n"
	"        ctypes.memmove(start, b, len(b))\n"
	"\n"
	"    def child(out, err, go, teach):\n"
	"        # a new session, its output into execd's pipes, waiting for its\n"
	"        # go: registered by execd, in its cgroup\n"
	"        srv.close()\n"
	"        lr.close()\n"
	"        if not teach:\n"
	"            lw.close()\n"
	"        os.setsid()\n"
	"        os.dup2(out, 1)\n"
	"        os.dup2(err, 2)\n"
	"        os.close(out)\n"
	"        if err != out:\n"
	"            os.close(err)\n"
	"        null = os.open(\"/dev/null\", os.O_RDONLY)\n"
	"        os.dup2(null, 0)\n"
	"        os.close(null)\n"
	"        if os.read(go, 1) != b\"g\":\n"
	"            os._exit(0)\n"
	"        os.close(go)\n"
	"\n"
	"    def settle(req, mid):\n"
	"        # with a middle process: adopted by execd once it is gone\n"
	"        # (the server answers without waiting for its end)\n"
	"        while mid and os.getppid() == mid:\n"
	"            time.sleep(0.0005)\n"
	"        libc.prctl(1, signal.SIGKILL)\n"
	"        if os.getppid() != req[\"ppid\"]:\n"
	"            os._exit(1)\n"
	"        inf = resource.RLIM_INFINITY\n"
	"        for res, cur, hard in req[\"rlimits\"]:\n"
	"            cur = inf if cur < 0 else cur\n"
	"            hard = inf if hard < 0 else hard\n"
	"            try:\n"
	"                resource.setrlimit(res, (cur, hard))\n"
	"            except (ValueError, OSError):\n"
	"                have = resource.getrlimit(res)[1]\n"
	"                if have == inf or cur < have:\n"
	"                    raise\n"
	"        if req[\"cwd\"] is not None:\n"
	"            os.chdir(req[\"cwd\"])\n"
	"        # python -m puts its cwd first on the path, as here\n"
	"        sys.path.insert(0, os.getcwd())\n"
	"\n"
	"    def kernel(req, out, go, mid, teach):\n"
	"        child(out, out, go, teach)\n"
	"        # in its cgroup now, which the copies are charged to\n"
	"        for a, n in hot[0]:\n"
	"            libc.madvise(a, n, POPULATE_WRITE)\n"
	"        settle(req, mid)\n"
	"        become(req[\"argv\"])\n"
	"\n"
	"    def become(argv):\n"
	"        # IPKernelApp on argv's connection file, to the kernel's end\n"
	"        retitle(argv)\n"
	"        sys.argv = [argv0] + argv[3:]\n"
	"        args = argv[3:]\n"
	"        usual = len(args) == 2 and args[0] == \"-f\"\n"
	"        if shell is not None and usual:\n"
	"            # The server's shell, and the profile and config it was\n"
	"            # built on.  Its history is in memory, empty, session 1\n"
	"            # as in any new kernel (kernels.md): this copy is the\n"
	"            # kernel's alone, given its start and its cwd (_dh is\n"
	"            # the same list)\n"
	"            def done():\n"
	"                pass\n"
	"            app.init_profile_dir = app.init_config_files = done\n"
	"            app.load_config_file = done\n"
	"            hm = shell.history_manager\n"
	"            with hm.db:\n"
	"                hm.db.execute(\"UPDATE sessions SET start=? WHERE \"\n"
	"                              \"session=?\", (datetime.datetime.now(),\n"
	"                                            hm.session_number))\n"
	"            hm.dir_hist[:] = [pathlib.Path.cwd()]\n"
	"            shell.starting_dir = os.getcwd()\n"
	"            init_kernel = app.init_kernel\n"
	"            atexit.unregister(shell.atexit_operations)\n"
	"            def adopt():\n"
	"                # where a launched kernel builds its shell: its exit\n"
	"                # steps ordered as theirs (before the iopub thread\n"
	"                # stops), the streams it restores at exit its own\n"
	"                init_kernel()\n"
	"                shell.kernel = shell.parent = app.kernel\n"
	"                atexit.register(shell.atexit_operations)\n"
	"                main = shell._orig_sys_modules_main_mod\n"
	"                shell.save_sys_module_state()\n"
	"                shell._orig_sys_modules_main_mod = main\n"
	"            app.init_kernel = adopt\n"
	"        elif shell is not None:\n"
	"            # options of its own may configure the shell: built anew\n"
	"            drop_shell(shell)\n"
	"        parse_argv = app.parse_command_line\n"
	"        def parse(argv=None):\n"
	"            if usual:\n"
	"                # a spec's usual argv: its one option set directly,\n"
	"                # without building traitlets' command-line parser\n"
	"                app.argv = list(args)\n"
	"                app.extra_args = []\n"
	"                app.cli_config = Config(\n"
	"                    {\"IPKernelApp\": {\"connection_file\": args[1]}})\n"
	"            else:\n"
	"                parse_argv(argv)\n"
	"            # its history its own, in memory (kernels.md): no\n"
	"            # database to open and commit, no saving thread\n"
	"            app.cli_config.HistoryManager.hist_file = \":memory:\"\n"
	"            app.update_config(app.cli_config)\n"
	"        app.parse_command_line = parse\n"
	"        app.initialize(args)\n"
	"        app.start()\n"
	"        # The control thread may still be ending a shutdown_request:\n"
	"        # its last flush of stdout waits on the iopub thread, which\n"
	"        # the app's close() (an exit step) stops before it joins the\n"
	"        # control thread, and then that flush waits its whole 10 s.\n"
	"        # Ended here first, while the iopub thread still runs.\n"
	"        ct = getattr(app, \"control_thread\", None)\n"
	"        if ct is not None and ct.is_alive():\n"
	"            ct.stop()\n"
	"            ct.join(5)\n"
	"\n"
	"    def once(req, out, err, ev, src, go, mid, teach):\n"
	"        # Code run in the server's shell, as a new kernel's cells: once,\n"
	"        # the code in the file src, then the process ends; or, asked to\n"
	"        # stay, each code file src (a socket) sends, until it closes or\n"
	"        # sends a connection file to become a kernel on.  Streams,\n"
	"        # results, displays and errors go to ev as they come, in order,\n"
	"        # each an iopub message's type and content as one JSON line,\n"
	"        # then a staying one's execute_reply and status idle per run;\n"
	"        # what is written to fds 1 and 2 (by its children, say) to the\n"
	"        # pipes out and err.\n"
	"        os.set_inheritable(ev, False)\n"
	"        os.set_inheritable(src, False)\n"
	"        child(out, err, go, teach)\n"
	"        for a, n in hot[1]:\n"
	"            libc.madvise(a, n, POPULATE_WRITE)\n"
	"        settle(req, mid)\n"
	"        atexit.unregister(shell.atexit_operations)\n"
	"        # SIGINT interrupts a run only, and never a line half written\n"
	"        st = {\"run\": False, \"send\": False, \"held\": False}\n"
	"\n"
	"        def on_int(sig, frame):\n"
	"            if not st[\"run\"]:\n"
	"                return\n"
	"            if st[\"send\"]:\n"
	"                st[\"held\"] = True\n"
	"                return\n"
	"            raise KeyboardInterrupt\n"
	"        signal.signal(signal.SIGINT, on_int)\n"
	"\n"
	"        def plain(o):\n"
	"            if isinstance(o, (bytes, bytearray)):\n"
	"                return base64.b64encode(o).decode()\n"
	"            return repr(o)\n"
	"\n"
	"        lock, main = threading.Lock(), threading.get_ident()\n"
	"\n"
	"        def send(msg_type, content):\n"
	"            # one whole line, whichever thread prints; an interrupt of\n"
	"            # the main thread waits for the end of its line\n"
	"            b = json.dumps({\"msg_type\": msg_type, \"content\": content},\n"
	"                           default=plain).encode() + b\"\\n\"\n"
	"            b = memoryview(b)\n"
	"            mine = threading.get_ident() == main\n"
	"            with lock:\n"
	"                st[\"send\"] = mine\n"
	"                try:\n"
	"                    while b:\n"
	"                        b = b[os.write(ev, b):]\n"
	"                finally:\n"
	"                    st[\"send\"] = False\n"
	"            if mine and st[\"held\"] and st[\"run\"]:\n"
	"                st[\"held\"] = False\n"
	"                raise KeyboardInterrupt\n"
	"\n"
	"        class Stream(io.TextIOBase):\n"
	"            # sys.stdout or sys.stderr: a stream message per line\n"
	"            def __init__(self, name, fd):\n"
	"                self.name, self.fd, self.parts = name, fd, []\n"
	"\n"
	"            def writable(self):\n"
	"                return True\n"
	"\n"
	"            def fileno(self):\n"
	"                return self.fd\n"
	"\n"
	"            @property\n"
	"            def encoding(self):\n"
	"                return \"utf-8\"\n"
	"\n"
	"            def write(self, s):\n"
	"                if not isinstance(s, str):\n"
	"                    raise TypeError(\"write() argument must be str, \"\n"
	"                                    \"not \" + type(s).__name__)\n"
	"                self.parts.append(s)\n"
	"                if \"\\n\" in s:\n"
	"                    self.flush()\n"
	"                return len(s)\n"
	"\n"
	"            def flush(self):\n"
	"                if self.parts:\n"
	"                    text, self.parts = \"\".join(self.parts), []\n"
	"                    send(\"stream\", {\"name\": self.name, \"text\": text})\n"
	"\n"
	"        def emit(msg_type, content):\n"
	"            sys.stdout.flush()\n"
	"            sys.stderr.flush()\n"
	"            send(msg_type, content)\n"
	"\n"
	"        def nothing(*a, **k):\n"
	"            pass\n"
	"\n"
	"        def result(data, md=None):\n"
	"            emit(\"execute_result\", {\"data\": data, \"metadata\": md or {},\n"
	"                                    \"execution_count\":\n"
	"                                    shell.execution_count})\n"
	"\n"
	"        def publish(data, metadata=None, *a, transient=None,\n"
	"                    update=False, **k):\n"
	"            emit(\"update_display_data\" if update else \"display_data\",\n"
	"                 {\"data\": data, \"metadata\": metadata or {},\n"
	"                  \"transient\": transient or {}})\n"
	"\n"
	"        def showtb(etype, evalue, stb):\n"
	"            emit(\"error\", {\"ename\": getattr(etype, \"__name__\", \"Error\"),\n"
	"                           \"evalue\": str(evalue), \"traceback\": stb})\n"
	"\n"
	"        def no_input(prompt=\"\"):\n"
	"            raise StdinNotImplementedError(\n"
	"                \"raw_input was called, but this frontend does not support \"\n"
	"                \"input requests.\")\n"
	"        dh, dp = shell.displayhook, shell.display_pub\n"
	"        hooks = ((dh, \"start_displayhook\", nothing),\n"
	"                 (dh, \"write_output_prompt\", nothing),\n"
	"                 (dh, \"finish_displayhook\", nothing),\n"
	"                 (dh, \"write_format_data\", result),\n"
	"                 (dp, \"publish\", publish), (dp, \"clear_output\", nothing),\n"
	"                 (shell, \"_showtraceback\", showtb))\n"
	"        for o, name, fn in hooks:\n"
	"            setattr(o, name, fn)\n"
	"        std, builtin_input = (sys.stdout, sys.stderr), builtins.input\n"
	"        sys.stdout = Stream(\"stdout\", 1)\n"
	"        sys.stderr = Stream(\"stderr\", 2)\n"
	"        builtins.input = no_input\n"
	"\n"
	"        def read(fd):\n"
	"            cell = []\n"
	"            while True:\n"
	"                b = os.pread(fd, 1 << 20, sum(map(len, cell)))\n"
	"                if not b:\n"
	"                    break\n"
	"                cell.append(b)\n"
	"            os.close(fd)\n"
	"            return b\"\".join(cell).decode(\"utf-8\", \"replace\")\n"
	"\n"
	"        def run(cell):\n"
	"            st[\"run\"] = True\n"
	"            try:\n"
	"                r = shell.run_cell(cell, store_history=True)\n"
	"            finally:\n"
	"                st[\"run\"] = st[\"held\"] = False\n"
	"            sys.stdout.flush()\n"
	"            sys.stderr.flush()\n"
	"            return r\n"
	"\n"
	"        if not req.get(\"stay\"):\n"
	"            run(read(src))\n"
	"            return\n"
	"\n"
	"        def promote(path, fd):\n"
	"            # a kernel from now on: the hooks gone, its output to the\n"
	"            # pipe fd, no pages reported at its end (not a run once's)\n"
	"            for o, name, fn in hooks:\n"
	"                vars(o).pop(name, None)\n"
	"            sys.stdout, sys.stderr = std\n"
	"            builtins.input = builtin_input\n"
	"            signal.signal(signal.SIGINT, signal.default_int_handler)\n"
	"            os.dup2(fd, 1)\n"
	"            os.dup2(fd, 2)\n"
	"            os.close(fd)\n"
	"            os.close(ev)\n"
	"            ctl.close()\n"
	"            teaching[\"on\"] = False\n"
	"            become(req[\"argv\"][:4] + [path])\n"
	"\n"
	"        ctl = socket.socket(fileno=src)\n"
	"        send(\"status\", {\"execution_state\": \"idle\"})\n"
	"        while True:\n"
	"            msg, fds, _, _ = socket.recv_fds(ctl, 1 << 16, 1)\n"
	"            if not msg:\n"
	"                return\n"
	"            if msg[:1] == b\"k\" and len(fds) == 1:\n"
	"                promote(os.fsdecode(msg[1:]), fds[0])\n"
	"                return\n"
	"            reply = {\"status\": \"error\", \"ename\": \"ValueError\",\n"
	"                     \"evalue\": \"not a run\", \"traceback\": []}\n"
	"            try:\n"
	"                if msg[:1] == b\"r\" and len(fds) == 1:\n"
	"                    r = run(read(fds.pop()))\n"
	"                    reply = {\"status\": \"ok\"}\n"
	"                    e = r.error_before_exec or r.error_in_exec\n"
	"                    if e is not None:\n"
	"                        reply = {\"status\": \"error\",\n"
	"                                 \"ename\": type(e).__name__,\n"
	"                                 \"evalue\": str(e), \"traceback\": []}\n"
	"            except KeyboardInterrupt:\n"
	"                # after its cell's end, before it was told: an error\n"
	"                # all the same\n"
	"                showtb(KeyboardInterrupt, \"\", [])\n"
	"                reply = {\"status\": \"error\", \"ename\": \"KeyboardInterrupt\",\n"
	"                         \"evalue\": \"\", \"traceback\": []}\n"
	"            for fd in fds:\n"
	"                os.close(fd)\n"
	"            reply[\"execution_count\"] = shell.execution_count - 1\n"
	"            send(\"execute_reply\", reply)\n"
	"            send(\"status\", {\"execution_state\": \"idle\"})\n"
	"            if teaching[\"on\"]:\n"
	"                # its pages after a run, as a run once's at its end (a\n"
	"                # staying one is seldom let end)\n"
	"                teaching[\"on\"] = False\n"
	"                try:\n"
	"                    lw.send(written(1), socket.MSG_DONTWAIT)\n"
	"                except OSError:\n"
	"                    pass\n"
	"\n"
	"    teaching = {\"on\": False}\n"
	"\n"
	"    def ended(fn, kind, teach):\n"
	"        # fn run, then the process's exit steps and its end, with the\n"
	"        # exit status a launched interpreter would have; its pages\n"
	"        # reported when it teaches (and is still of its kind)\n"
	"        teaching[\"on\"] = teach\n"
	"        code = 1\n"
	"        try:\n"
	"            fn()\n"
	"            code = 0\n"
	"        except SystemExit as e:\n"
	"            c = e.code\n"
	"            code = c if isinstance(c, int) else int(c is not None)\n"
	"        except BaseException:\n"
	"            import traceback\n"
	"            traceback.print_exc()\n"
	"        try:\n"
	"            atexit._run_exitfuncs()\n"
	"            sys.stdout.flush()\n"
	"            sys.stderr.flush()\n"
	"            if teaching[\"on\"]:\n"
	"                lw.send(written(kind), socket.MSG_DONTWAIT)\n"
	"        finally:\n"
	"            os._exit(code)\n"
	"\n"
	"    def forked(req, fds, mid, teach):\n"
	"        if len(fds) == 5:\n"
	"            ended(lambda: once(req, *fds, mid, teach), 1, teach)\n"
	"        ended(lambda: kernel(req, fds[0], fds[1], mid, teach), 0, teach)\n"
	"\n"
	"    while True:\n"
	"        if learn and min(reports) >= 3:\n"
	"            learn = False       # learnt: later reports go unread\n"
	"            lr.close()\n"
	"        if learn and select.select([srv, lr], [], [])[0] == [lr]:\n"
	"            try:\n"
	"                learnt(lr.recv(1 << 18))\n"
	"            except Exception as e:\n"
	"                print(\"execd-forkserver: learning:\", e, file=sys.stderr)\n"
	"            continue\n"
	"        msg, fds, _, _ = socket.recv_fds(srv, 1 << 16, 5)\n"
	"        if not msg:\n"
	"            os._exit(0)\n"
	"        pid, mid, teach = -22, 0, False\n"
	"        try:\n"
	"            req = json.loads(msg)\n"
	"            kind = int(bool(req.get(\"once\")))\n"
	"            if len(fds) != 2 + 3 * kind:\n"
	"                raise ValueError(\"two fds wanted, or five to run once\")\n"
	"            if kind and shell is None:\n"
	"                raise ValueError(\"no shell to run code once in\")\n"
	"            teach = learn and reports[kind] < 3 and asked[kind] < 16\n"
	"            if nr is not None:\n"
	"                try:\n"
	"                    pid = clone()\n"
	"                except OSError as e:\n"
	"                    print(\"execd-forkserver: clone:\", e,\n"
	"                          \"(forking twice from now on)\", file=sys.stderr)\n"
	"                    nr = None\n"
	"                if pid == 0:\n"
	"                    forked(req, fds, 0, teach)\n"
	"            if nr is None:\n"
	"                r, w = os.pipe()\n"
	"                mid = os.fork()\n"
	"                if mid == 0:\n"
	"                    try:\n"
	"                        os.close(r)\n"
	"                        me = os.getpid()\n"
	"                        g = os.fork()\n"
	"                        if g == 0:\n"
	"                            os.close(w)\n"
	"                            forked(req, fds, me, teach)\n"
	"                        os.write(w, struct.pack(\"i\", g))\n"
	"                    finally:\n"
	"                        os._exit(0)\n"
	"                os.close(w)\n"
	"                got = os.read(r, 4)\n"
	"                os.close(r)\n"
	"                if len(got) == 4:\n"
	"                    pid = struct.unpack(\"i\", got)[0]\n"
	"            asked[kind] += teach and pid > 0\n"
	"        except OSError as e:\n"
	"            pid = -e.errno\n"
	"        except Exception as e:\n"
	"            print(\"execd-forkserver:\", e, file=sys.stderr)\n"
	"        for fd in fds:\n"
	"            os.close(fd)\n"
	"        srv.send(struct.pack(\"i\", pid))\n"
	"        # reaped after the answer: the middle one's exit (unmapping a\n"
	"        # copy of the server) need not delay the kernel's go\n"
	"        if mid > 0:\n"
	"            os.waitpid(mid, 0)\n"
	"_serve()\n"
	;

/* A request sent, its answer awaited. */
struct forksrv_req {
	struct forksrv_req *next;
	int		 go;		/* our end of the go pipe */
	struct cgroup	*cg;		/* made for it; or NULL */
	const struct limits *limits;
	child_exit_cb	*cb;		/* its kernel's exit */
	void		*arg;
	forksrv_done_cb	*done;		/* NULL: cancelled */
	void		*done_arg;
};

struct server {
	char		*key;		/* spec name, NUL, interpreter */
	size_t		 keylen;
	pid_t		 pid;		/* 0: none */
	int		 fd;		/* ours of the pair; -1: none */
	bool		 ready;		/* its imports are done */
	bool		 once;		/* ... and it can run code once */
	struct loop	*loop;		/* fd watched there while it runs */
	unsigned	 gen;		/* spawn_generation() at its start */
	unsigned	 fails;		/* died before ready, in a row */
	struct forksrv_req *reqs;		/* sent, oldest first */
	uint64_t	 t_answer;	/* the oldest one's deadline */
};

static struct server	servers[NSERVERS];
static size_t		nservers;

/* Whether spec's kernel, run as argv, is ipykernel and may be forked. */
bool
forksrv_fits(const struct kp_kernelspec *spec, char *const *argv)
{
	json_t *ex = json_object_get(spec->metadata, "execd");
	json_t *f = json_object_get(ex, "fork");

	if (f != NULL && json_is_false(f))
		return false;
	return argv != NULL && argv[0] != NULL && argv[1] != NULL &&
	    argv[2] != NULL && strcmp(argv[1], "-m") == 0 &&
	    (strcmp(argv[2], "ipykernel_launcher") == 0 ||
	    strcmp(argv[2], "ipykernel") == 0);
}

/* Orphans come to execd: it can reap the kernels and hear how they end. */
static bool
adopts_orphans(void)
{
	int v = 0;

	if (getpid() == 1)
		return true;
	return prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) == 0 && v != 0;
}

/* Free r; a kernel forked for it and waiting for its go exits. */
static void
req_free(struct forksrv_req *r)
{
	if (r->go >= 0)
		close(r->go);
	if (r->cg != NULL)
		cgroup_free(r->cg);
	free(r);
}

/*
 * Forget s's process (kill it unless gone) and close our end; the
 * kernels it owes hear rc (launched instead, by their owners).
 */
static void
server_drop(struct server *s, bool kill_it, int rc)
{
	struct forksrv_req *r, *list = s->reqs;
	char msg[160];

	if (s->pid > 0) {
		child_forget(s->pid);	/* reaped silently from now on */
		if (kill_it)
			kill(-s->pid, SIGKILL);
	}
	if (s->loop != NULL && s->fd >= 0)
		loop_del(s->loop, s->fd, NULL);
	if (s->loop != NULL)
		loop_timer_cancel(s->loop, s->t_answer);
	s->t_answer = 0;
	s->loop = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->pid = 0;
	s->fd = -1;
	s->ready = s->once = false;
	s->reqs = NULL;
	/* After s is reset: a callback may start a server again. */
	snprintf(msg, sizeof(msg), "fork server for %s: %s", s->key,
	    strerror(-rc));
	while ((r = list) != NULL) {
		list = r->next;
		if (r->done != NULL)
			r->done(0, rc, msg, r->done_arg);
		req_free(r);
	}
}

/* The reaper: a server ended on its own. */
static void
server_reaped(pid_t pid, int st, void *arg)
{
	struct server *s = arg;

	log_warnx("fork server pid=%ld for %s ended (status %d)%s",
	    (long)pid, s->key, st, s->ready ? "" : " before serving");
	if (!s->ready)
		s->fails++;
	s->pid = 0;		/* child.c has forgotten it */
	server_drop(s, false, -EPIPE);
}

static bool	server_ready(struct server *);
static void	on_answers(struct server *);

/* The server's fd is readable: its ready, an answer, or its end. */
static void
on_server(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct server *s = arg;

	if (!s->ready)
		server_ready(s);
	else
		on_answers(s);
}

/* The oldest request has waited ANSWER_MS. */
static void
on_answer_late(struct loop *l, uint64_t id, void *arg)
{
	struct server *s = arg;

	s->t_answer = 0;
	log_warnx("fork server pid=%ld for %s: no answer within %d ms, "
	    "stopping it", (long)s->pid, s->key, ANSWER_MS);
	server_drop(s, true, -ETIMEDOUT);
}

/* Start s's process for spec, with the kernel's interpreter argv[0]. */
static int
server_run(struct server *s, const struct forksrv_job *job, char *err,
    size_t errlen)
{
	json_t *pre = json_object_get(json_object_get(job->spec->metadata,
	    "execd"), "preload"), *v;
	struct spawn_opts so = { .stdin_fd = -1, .stdout_fd = -1,
	    .stderr_fd = STDERR_FILENO, .has_fd3 = 1,
	    .keep_ids = job->keep_ids, .envp = job->envp };
	char **argv;
	size_t n = 0, i;
	int sv[2], rc;

	argv = xcalloc(6 + json_array_size(pre), sizeof(*argv));
	argv[n++] = xstrdup(job->argv[0]);
	argv[n++] = xstrdup("-c");
	argv[n++] = xstrdup(server_py);
	argv[n++] = xstrdup("execd-forkserver");
	argv[n++] = xstrdup(job->spec->name);
	json_array_foreach(pre, i, v)
		if (json_is_string(v))
			argv[n++] = xstrdup(json_string_value(v));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(-rc));
		for (i = 0; i < n; i++)
			free(argv[i]);
		free(argv);
		return rc;
	}
	so.argv = argv;
	so.path = job->argv[0][0] == '/' ? job->argv[0] : NULL;
	so.fd3 = sv[1];
	rc = spawn_start(&so, &s->pid, err, errlen);
	close(sv[1]);
	for (i = 0; i < n; i++)
		free(argv[i]);
	free(argv);
	if (rc < 0) {
		close(sv[0]);
		s->pid = 0;
		s->fails++;
		return rc;
	}
	s->fd = sv[0];
	s->ready = false;
	s->gen = spawn_generation();
	child_add(s->pid, s->pid, server_reaped, s);
	/* Its ready, its answers and its end are heard when they come. */
	if (loop_add_fd(job->loop, s->fd, LOOP_READ, on_server, s) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot watch the fork server");
		server_drop(s, true, rc);
		s->fails++;
		return rc;
	}
	s->loop = job->loop;
	log_info("fork server pid=%ld for %s started", (long)s->pid,
	    job->spec->name);
	return 0;
}

/* The server of job's spec and interpreter, found or made; or NULL. */
static struct server *
server_for(const struct forksrv_job *job)
{
	size_t nl = strlen(job->spec->name), pl = strlen(job->argv[0]);
	struct server *s;

	for (size_t i = 0; i < nservers; i++) {
		s = &servers[i];
		if (s->keylen == nl + 1 + pl &&
		    memcmp(s->key, job->spec->name, nl + 1) == 0 &&
		    memcmp(s->key + nl + 1, job->argv[0], pl) == 0)
			return s;
	}
	if (nservers == NSERVERS)
		return NULL;
	s = &servers[nservers++];
	s->keylen = nl + 1 + pl;
	s->key = xmalloc(s->keylen + 1);
	memcpy(s->key, job->spec->name, nl + 1);
	memcpy(s->key + nl + 1, job->argv[0], pl + 1);
	s->fd = -1;
	return s;
}

/* Whether s has said it is ready (its 4-byte 0), without waiting. */
static bool
server_ready(struct server *s)
{
	int32_t v;
	ssize_t n;

	if (s->ready)
		return true;
	n = recv(s->fd, &v, sizeof(v), MSG_DONTWAIT);
	if (n == (ssize_t)sizeof(v) && (v == 0 || v == 1)) {
		s->ready = true;
		s->once = v == 1;
		s->fails = 0;
		log_info("fork server pid=%ld for %s: imports done, serving%s",
		    (long)s->pid, s->key, s->once ? "" : " (kernels only)");
	} else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
	    n > 0) {
		server_drop(s, true, -EPIPE);
		s->fails++;
	}
	return s->ready;
}

/*
 * The request's JSON: the kernel's argv (shown as its command line; what
 * follows "-m module" goes to IPKernelApp), cwd, rlimits, our pid; and
 * whether it is a run once.
 */
static char *
request(const struct forksrv_job *job, bool in_cgroup)
{
	json_t *r = json_object(), *a = json_array(), *rl = json_array();
	uint64_t cur, max;
	int res, got;
	char *txt;

	for (size_t i = 0; job->argv[i] != NULL; i++)
		json_array_append_new(a, json_string(job->argv[i]));
	for (size_t i = 0; job->limits != NULL && (got = spawn_rlimit(
	    job->limits, in_cgroup, i, &res, &cur, &max)) >= 0; i++)
		if (got > 0)
			json_array_append_new(rl, json_pack("[iII]", res,
			    cur == UINT64_MAX ? (json_int_t)-1 :
			    (json_int_t)cur, max == UINT64_MAX ?
			    (json_int_t)-1 : (json_int_t)max));
	json_object_set_new(r, "argv", a);
	json_object_set_new(r, "cwd", job->cwd != NULL ?
	    json_string(job->cwd) : json_null());
	json_object_set_new(r, "rlimits", rl);
	json_object_set_new(r, "ppid", json_integer(getpid()));
	if (job->code != NULL || job->stay)
		json_object_set_new(r, "once", json_true());
	if (job->stay)
		json_object_set_new(r, "stay", json_true());
	txt = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return txt;
}

/*
 * Send txt with nfd fds (2 or 5) to s, without waiting: a server whose
 * buffer is full has stopped reading, and this kernel is launched.
 */
static int
send_req(struct server *s, char *txt, const int *fds, size_t nfd)
{
	struct iovec iov = { txt, strlen(txt) };
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(5 * sizeof(int))];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = u.buf,
	    .msg_controllen = CMSG_SPACE(nfd * sizeof(int)) };
	struct cmsghdr *c;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	if (iov.iov_len >= REQ_MAX)
		return -E2BIG;
	do
		n = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

/* The answer v to r (a pid, or the server's -errno): r's kernel told. */
static void
answered(struct server *s, struct forksrv_req *r, int32_t v)
{
	char msg[160];
	int rc;

	if (r->done == NULL) {
		/* Cancelled: a kernel forked for it exits at the go's EOF. */
		req_free(r);
		return;
	}
	if (v < 0) {
		/* Its fork failed (no memory, a process limit): it serves on. */
		rc = v;
		snprintf(msg, sizeof(msg), "fork server for %s: fork: %s",
		    s->key, strerror(-rc));
	} else if (r->cg != NULL && (rc = cgroup_move(r->cg, v)) < 0) {
		/* Registered and in its cgroup before it may run (or end). */
		snprintf(msg, sizeof(msg), "cgroup for pid %ld: %s", (long)v,
		    strerror(-rc));
	} else {
		child_add(v, v, r->cb, r->arg);
		if (r->limits != NULL)
			cgroup_track(v, r->limits, r->cg);
		r->cg = NULL;
		if (write(r->go, "g", 1) != 1)	/* gone: the reaper says how */
			log_warnx("fork server for %s: pid %ld: %s", s->key,
			    (long)v, strerror(errno));
		r->done(v, 0, NULL, r->done_arg);
		req_free(r);
		return;
	}
	r->done(0, rc, msg, r->done_arg);
	req_free(r);
}

/* Read every answer that has come, each for the oldest request. */
static void
on_answers(struct server *s)
{
	int fd = s->fd;
	struct forksrv_req *r;
	int32_t v;
	ssize_t n;

	while (s->fd == fd) {
		n = recv(fd, &v, sizeof(v), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n == 0) {
			/*
			 * Its end: the reaper reports it (with its status)
			 * and drops it; until then nothing more to read.
			 */
			loop_del(s->loop, fd, NULL);
			return;
		}
		if (n != (ssize_t)sizeof(v) || v == 0 || s->reqs == NULL) {
			/* an answer to nothing asked, or not an answer */
			int rc = n < 0 ? -errno : -EPROTO;

			log_warnx("fork server pid=%ld for %s: a bad answer, "
			    "stopping it", (long)s->pid, s->key);
			server_drop(s, true, rc);
			return;
		}
		r = s->reqs;
		s->reqs = r->next;
		loop_timer_cancel(s->loop, s->t_answer);
		s->t_answer = s->reqs != NULL ? loop_timer_add(s->loop,
		    ANSWER_MS, on_answer_late, s) : 0;
		answered(s, r, v);
	}
}

/* A memory file holding code: its fd, or -errno with why in err. */
int
forksrv_code_file(const char *code, char *err, size_t errlen)
{
	size_t len = strlen(code), off = 0;
	ssize_t n;
	int fd, rc;

	if ((fd = memfd_create("execd-code", MFD_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "memfd_create: %s", strerror(-rc));
		return rc;
	}
	while (off < len) {
		if ((n = write(fd, code + off, len - off)) < 0 &&
		    errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			snprintf(err, errlen, "the code's file: %s",
			    strerror(-rc));
			close(fd);
			return rc;
		}
		off += (size_t)n;
	}
	return fd;
}

/* Fork job's kernel; see forksrv.h. */
int
forksrv_start(const struct forksrv_job *job, struct forksrv_req **out,
    char *err, size_t errlen)
{
	struct cgroup *cg = NULL;
	struct server *s;
	struct forksrv_req *r, **tail;
	int go[2] = { -1, -1 }, fds[5], src = -1, rc;
	size_t nfd = 2;
	char *txt = NULL;

	if (!adopts_orphans() || (s = server_for(job)) == NULL ||
	    s->fails >= MAX_FAILS)
		return -ENOTSUP;
	if (s->pid > 0 && s->gen != spawn_generation()) {
		/* Its filter is an older policy's. */
		log_info("fork server pid=%ld for %s: the policy changed, "
		    "starting it anew", (long)s->pid, s->key);
		server_drop(s, true, -ESTALE);
	}
	if (s->pid == 0) {
		if ((rc = server_run(s, job, err, errlen)) < 0) {
			log_warnx("fork server for %s: %s", s->key, err);
			return -ENOTSUP;
		}
		return -EAGAIN;
	}
	if (!server_ready(s))
		return -EAGAIN;
	if ((job->code != NULL || job->stay) && !s->once)
		return -ENOTSUP;
	if (job->limits != NULL && cgroup_wanted(job->limits) &&
	    (rc = cgroup_new_empty(job->limits, &cg, err, errlen)) < 0)
		return rc;
	if (pipe2(go, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-rc));
		goto fail;
	}
	txt = request(job, cg != NULL);
	fds[0] = job->out_fd;
	if (job->code != NULL || job->stay) {
		/* The code, of any size, in a file of its own. */
		if (job->code != NULL &&
		    (src = forksrv_code_file(job->code, err, errlen)) < 0) {
			rc = src;
			goto fail;
		}
		fds[1] = job->err_fd;
		fds[2] = job->ev_fd;
		fds[3] = job->stay ? job->ctl_fd : src;
		nfd = 5;
	}
	fds[nfd - 1] = go[0];
	if ((rc = send_req(s, txt, fds, nfd)) < 0) {
		snprintf(err, errlen, "fork server for %s: %s", s->key,
		    strerror(-rc));
		if (rc != -E2BIG)
			server_drop(s, true, rc);  /* the next call starts one */
		goto fail;
	}
	free(txt);
	close(go[0]);
	if (src >= 0)
		close(src);
	r = xcalloc(1, sizeof(*r));
	r->go = go[1];
	r->cg = cg;
	r->limits = job->limits;
	r->cb = job->cb;
	r->arg = job->arg;
	r->done = job->done;
	r->done_arg = job->done_arg;
	for (tail = &s->reqs; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = r;
	if (s->t_answer == 0)
		s->t_answer = loop_timer_add(s->loop, ANSWER_MS,
		    on_answer_late, s);
	*out = r;
	return 0;
fail:
	if (cg != NULL)
		cgroup_free(cg);
	if (src >= 0)
		close(src);
	spawn_pipe_close(go);
	free(txt);
	return rc;
}

/* Whether job's code can be run once now; see forksrv.h. */
bool
forksrv_can_run(const struct forksrv_job *job)
{
	struct server *s;

	if (!adopts_orphans() || (s = server_for(job)) == NULL)
		return false;
	return s->pid > 0 && s->gen == spawn_generation() &&
	    server_ready(s) && s->once;
}

/* Its answer is not wanted any more; see forksrv.h. */
void
forksrv_cancel(struct forksrv_req *fr)
{
	fr->done = NULL;
}

/* Stop every server. */
void
forksrv_shutdown(void)
{
	for (size_t i = 0; i < nservers; i++) {
		server_drop(&servers[i], true, -ESHUTDOWN);
		free(servers[i].key);
		servers[i].key = NULL;
	}
	nservers = 0;
}
