"""Command line: --help, --version, bad options, environment equivalents."""
import re
import subprocess

from lib import EXECD, ROOT, Execd


def run(*args, env=None):
    return subprocess.run([EXECD] + list(args), capture_output=True,
                          text=True, timeout=10, env=env)


def test_help_lists_every_option_with_its_environment_variable():
    r = run("--help")
    assert r.returncode == 0, r
    with open(ROOT + "/execd/config/conf.c") as f:
        src = f.read()
    table = src[src.index("static const struct opt opts[]"):]
    table = table[:table.index("};")]
    names = re.findall(r'\{ "([a-z-]+)", O_', table)
    envs = re.findall(r'"(EXECD_[A-Z_]+)"', table)
    assert len(names) >= 12 and envs, (names, envs)
    for n in names:
        assert "--" + n in r.stdout, n
    for e in envs:
        assert e in r.stdout, e
    for upstream in ("--port", "--access-token", "--log-level",
                     "--listen", "EXECD_ACCESS_TOKEN"):
        assert upstream in r.stdout, upstream


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("execd "), r


def test_bad_option_and_bad_values_exit_2_with_a_message():
    for args in (["--no-such-option"], ["--port", "70000"],
                 ["--listen", "127.0.0.1"], ["--log-level", "loud"],
                 ["--max-body-size", "lots"]):
        r = run(*args)
        assert r.returncode == 2, (args, r)
        assert r.stderr.startswith("execd: "), (args, r.stderr)


def test_bad_environment_value_is_an_error():
    import os
    env = dict(os.environ, EXECD_PORT="http")
    r = run(env=env)
    assert r.returncode == 2 and "EXECD_PORT" in r.stderr, r


def test_upstream_flag_syntax_and_ignored_flags():
    with Execd("-listen=127.0.0.1:0", "-log-level", "7",
               "--jupyter-host", "http://127.0.0.1:1") as d:
        assert d.request("GET", "/ping")[0] == 200
        assert " debug " in d.read_log() or "debug" in d.read_log()


def test_arguments_after_the_options_are_ignored_with_a_warning():
    """The platform starts the injection image as `execd tail -f
    /dev/null`: upstream's flag parsing stops at the first argument that
    is not an option, and so does ours, with a warning."""
    for args, first, n in ((["tail", "-f", "/dev/null"], "tail", 3),
                           (["--", "--port", "1"], "--port", 2),
                           (["stray"], "stray", 1)):
        with Execd("--listen", "127.0.0.1:0", *args) as d:
            assert d.request("GET", "/ping")[0] == 200, args
            log = d.read_log()
            want = "ignoring %d argument%s after the options, from '%s'" \
                % (n, "s" if n > 1 else "", first)
            assert want in log, (args, log)
    # What follows them is not read: a bad option there is no error.
    with Execd("--listen", "127.0.0.1:0", "sleep", "--no-such-option") as d:
        assert d.request("GET", "/ping")[0] == 200
    # A lone "--" ends the options and ignores nothing.
    with Execd("--listen", "127.0.0.1:0", "--") as d:
        assert d.request("GET", "/ping")[0] == 200
        assert "ignoring" not in d.read_log()


def test_environment_listen_and_log_level():
    with Execd(env={"EXECD_LISTEN": "127.0.0.1:0",
                    "EXECD_LOG_LEVEL": "warn"}) as d:
        d.request("GET", "/ping")
        d.stop()
        assert "GET /ping" not in d.read_log()


def test_address_in_use_is_a_clear_error():
    with Execd() as d:
        r = run("--listen", "127.0.0.1:%d" % d.port)
        assert r.returncode == 1, r
        assert "cannot listen" in r.stderr, r.stderr


def test_ipv6_listen():
    with open("/proc/net/if_inet6") as f:
        has_v6 = any(line.split()[0] == "0" * 31 + "1" for line in f)
    if not has_v6:
        r = run("--listen", "[::1]:0")
        assert r.returncode == 1 and "cannot listen" in r.stderr, r
        return
    with Execd("--listen", "[::1]:0") as d:
        assert d.host == "::1"
        assert d.request("GET", "/ping")[0] == 200


def test_kernels_lists_installed_kernelspecs():
    import json
    import os
    import shutil
    import tempfile
    top = tempfile.mkdtemp()
    try:
        os.makedirs(top + "/kernels/mykernel")
        with open(top + "/kernels/mykernel/kernel.json", "w") as f:
            json.dump({"argv": ["/bin/true", "{connection_file}"],
                       "display_name": "Mine", "language": "mylang"}, f)
        os.makedirs(top + "/kernels/broken")
        with open(top + "/kernels/broken/kernel.json", "w") as f:
            f.write("{not json")
        env = dict(os.environ, JUPYTER_PATH=top)
        r = run("--kernels", env=env)
        assert r.returncode == 0, r
        rows = [line.split() for line in r.stdout.splitlines()]
        assert ["mykernel", "mylang", top + "/kernels/mykernel"] in rows, \
            rows
        names = [row[0] for row in rows]
        assert "python3" in names, rows   # Debian's ipykernel
        assert names == sorted(names)
        assert "1 kernel directories skipped" in r.stderr, r.stderr
    finally:
        shutil.rmtree(top)
