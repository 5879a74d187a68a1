"""The isolation configuration file (--isolation-config, upstream's TOML):
its keys take effect, the command line goes over them, --print-config
shows the result, what execd does not do is refused at start with the
file's line (or, where it would only loosen or observe, warned about)."""
import json
import os
import subprocess
import urllib.parse

from lib import EXECD, expect_error, wait_for
from test_isolated import ISO, Iso


def run(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("EXECD_")}
    e.update(env or {})
    return subprocess.run([EXECD] + list(args), capture_output=True,
                          text=True, timeout=20, env=e)


class Conf(Iso):
    """An Iso whose execd reads an isolation configuration of text."""

    def __init__(self, text, *args):
        Iso.__init__(self, *args)
        self.conf = os.path.join(self.base, "isolation.toml")
        self.write(text)
        # The file, not --isolation-upper-root, says where uppers go.
        a = self.d.args
        i = a.index("--isolation-upper-root")
        del a[i:i + 2]
        a += ["--isolation-config", self.conf]

    def write(self, text):
        with open(self.conf, "w") as f:
            f.write(text.replace("@BASE@", self.base))


def test_upper_root_allowed_writable_and_diff_max_take_effect():
    text = ('# the isolation configuration\n'
            'upper_root = "@BASE@/cfg-upper"\n'
            'allowed_writable = ["@BASE@/shared"]\n'
            'diff_max_bytes = 16\n'
            'upper_max_bytes = 65536\n')
    with Conf(text) as t:
        os.mkdir(os.path.join(t.base, "shared"))
        os.mkdir(os.path.join(t.base, "shared", "src"))
        os.mkdir(os.path.join(t.base, "dest"))
        sid = t.create()
        assert os.path.isdir(os.path.join(t.base, "cfg-upper", sid))
        assert not os.path.exists(t.upper)
        # A bind from outside allowed_writable: upstream's 400.
        body = {"workspace": {"path": t.ws}, "binds": [
            {"source": t.ws, "dest": t.base + "/dest"}]}
        st, h, data = t.d.request("POST", ISO + "/session", body=body)
        obj = expect_error(st, data, 400, "RUNTIME_ERROR")
        assert "not in allowlist" in obj["message"], obj
        # /workspace and the like are no longer allowed either.
        body["binds"][0]["source"] = "/data" if os.path.isdir(
            "/data") else "/workspace"
        if os.path.exists(body["binds"][0]["source"]):
            st, h, data = t.d.request("POST", ISO + "/session", body=body)
            assert b"not in allowlist" in data, data
        # One from inside it is bound.
        body["binds"][0]["source"] = t.base + "/shared/src"
        sid2 = t.create(body)
        with open(os.path.join(t.base, "shared", "src", "f"), "w") as f:
            f.write("seen\n")
        out, evs = t.run(sid2, "cat %s/dest/f" % t.base)
        assert out == ["seen"], evs
        # diff_max_bytes: contents past it are left out.
        out, evs = t.run(sid, "echo short > s.txt; "
                         "echo a-line-longer-than-16 > l.txt")
        q = ISO + "/session/%s/diff?path=" % sid
        st, h, data = t.d.request("GET", q + urllib.parse.quote(
            t.ws + "/s.txt"))
        obj = json.loads(data)
        assert obj["new_content"] == "short\n" and obj["text"], obj
        st, h, data = t.d.request("GET", q + urllib.parse.quote(
            t.ws + "/l.txt"))
        obj = json.loads(data)
        assert st == 200 and obj["change"] == "added", obj
        assert "new_content" not in obj and obj["text"] is False, obj
        # upper_max_bytes: the overlay's upper holds no more.
        out, evs = t.run(sid, "head -c 200000 /dev/zero > big; "
                         "echo rc=$?")
        assert "rc=1" in out, out
        assert any("No space left" in o for o in out), out
        for s in (sid, sid2):
            st, h, data = t.d.request("DELETE", ISO + "/session/" + s)
            assert st == 200, data
        assert wait_for(lambda: os.listdir(
            os.path.join(t.base, "cfg-upper")) == [])


def test_command_line_goes_over_the_file_and_print_config_shows_it():
    with Conf('upper_root = "/var/tmp/from-file"\n'
              'upper_max_bytes = 1048576\n'
              'allowed_writable = ["/srv"]\n'
              '[hardening]\nenabled = true\n'
              'keep_capabilities = ["chown", "cap_kill"]\n'
              '[landlock]\nenabled = false\n'
              'extra_readable = ["/x"]\n') as t:
        r = run("--isolation-config", t.conf, "--print-config")
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert 'isolation_upper_root: "/var/tmp/from-file"' in out or \
            "isolation_upper_root: /var/tmp/from-file" in out, out
        assert "isolation_upper_max: 1048576" in out, out
        assert "capabilities: chown,cap_kill" in out, out
        assert '#   allowed_writable = ["/srv"]' in out, out
        assert "#   not applied: %s:9: [landlock] extra_readable" % \
            t.conf in out, out
        r = run("--isolation-config", t.conf, "--isolation-upper-root",
                "/var/tmp/from-flag", "--capabilities", "none",
                "--print-config", env={"EXECD_ISOLATION_UPPER_MAX": "8192"})
        assert r.returncode == 0, r.stderr
        assert "isolation_upper_root: /var/tmp/from-flag" in r.stdout or \
            'isolation_upper_root: "/var/tmp/from-flag"' in r.stdout
        assert "isolation_upper_max: 8192" in r.stdout, r.stdout
        assert "capabilities: none" in r.stdout, r.stdout
        # The environment names the file too.
        r = run("--print-config", env={"EXECD_ISOLATION_CONFIG": t.conf})
        assert "isolation_upper_max: 1048576" in r.stdout, r.stdout
        # The warning reaches the log of the running execd.
        assert wait_for(lambda: "isolation config: %s:9: [landlock] "
                        "extra_readable is not applied" % t.conf
                        in t.d.read_log()), t.d.read_log()
        # keep_capabilities is the children's bounding set.
        sid = t.create({"workspace": {"path": t.ws},
                        "profile": "balanced"})
        out, evs = t.run(sid, "grep CapBnd /proc/self/status")
        # chown is 0, kill is 5.
        assert out == ["CapBnd:\t0000000000000021"], out


def test_bad_files_stop_execd_with_the_line():
    with Conf("") as t:
        cases = [
            ('upper_root = "relative"\n', 1, "absolute path"),
            ('\n\nupper_max_bytes = "8G"\n', 3, "number of bytes"),
            ("upper_max_bytes = 100\n", 1, "at least 4096"),
            ("allowed_writable = [\"/a\",\n  \"b\"]\n", 1,
             "allowed_writable[1] must be an absolute path"),
            ("diff_max_bytes = -1\n", 1, "number of bytes"),
            ("upper_rot = \"/x\"\n", 1, "unknown key upper_rot"),
            ('# c\n[seccomp]\ndeny = ["ptrace"]\n', 3,
             "[seccomp] deny is not supported"),
            ("[hardening]\nenabled = 1\n", 2, "enabled must be true"),
            ("[landlock]\n\n  enabled = true\n", 3,
             "[landlock] enabled = true is not supported"),
            ("[ebpf]\nenabled = true\n", 2,
             "[ebpf] enabled = true is not supported"),
            ("[ebpf]\nenabled = false\nprobe = 1\n", 3,
             "unknown key probe in [ebpf]"),
            ("[apparmor]\n", 1, "unknown table [apparmor]"),
            ("a = 1.5\n", 1, "floats and dates are not supported"),
            ("x = 1\ny = [\n", 3, "unterminated array"),
            ("[hardening]\nenabled = true\n"
             "keep_capabilities = [\"no_such_cap\"]\n", None,
             "no_such_cap"),
        ]
        for text, line, why in cases:
            t.write(text)
            r = run("--isolation-config", t.conf)
            assert r.returncode == 2, (text, r.returncode, r.stderr)
            want = "%s:%d: " % (t.conf, line) if line else t.conf + ": "
            assert want in r.stderr and why in r.stderr, (text, r.stderr)
        r = run("--isolation-config", t.base + "/missing.toml")
        assert r.returncode == 2 and "missing.toml: No such file" in \
            r.stderr, r.stderr
