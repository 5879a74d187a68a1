#!/bin/sh
# Install the Debian packages execd needs, when some are missing.
#   sh scripts/deps.sh build    what building execd (and `make static`) needs
#   sh scripts/deps.sh run      that, and Python contexts (`make run`)
#   sh scripts/deps.sh          that, and everything the tests use
#   sh scripts/deps.sh bench    also what `make bench` compares against
# As root it runs apt-get itself; otherwise it prints the exact command.
set -eu

# libx11-dev, libxtst-dev, libpng-dev: the computer-use API (Xlib, XTEST,
# the PNG encoder of screenshots; execd/domain/computer.c).
build="build-essential pkg-config libmicrohttpd-dev libzmq3-dev
libjansson-dev libssl-dev libseccomp-dev libyaml-dev libx11-dev libxtst-dev
libpng-dev"
run="python3 python3-ipykernel"
# fuse3 and python3-fusepy: the mount that never answers of
# tests/integration/test_fs_hang.py.
# python3-jupyter-server: Jupyter Server's gateway client, in
# tests/integration/test_jupyter_gateway.py; python3-notebook and
# chromium: a notebook page in a browser, tests/sdk/notebook.test.js.
# Kernels for tests/integration/test_kernels.py: IRkernel (R draws PNGs
# with cairo, a dependency of r-base-core), octave_kernel (plots through
# gnuplot, with the font octave asks for).  jshell (the JDK) and sqlite3:
# REPLs behind execd-repl-kernel, test_java.py and test_repl_kernel.py;
# yaegi: the Go interpreter behind its "program" mode, test_go.py;
# python3-jupyter-kernel-test checks that kernel, test_*_conformance.py.
# xvfb, xterm and x11-xserver-utils (xsetroot): the X server, the client
# typed into and the drawn background of tests/integration/test_computer.py
# and tests/sdk/computer.test.js.
tests="clang cppcheck valgrind curl python3-yaml python3-pyflakes util-linux
python3-zmq python3-jupyter-client python3-websocket busybox-static fuse3
python3-fusepy python3-jupyter-server python3-notebook chromium
r-cran-irkernel octave python3-octave-kernel gnuplot-nox fonts-freefont-otf
openjdk-17-jdk-headless sqlite3 python3-jupyter-kernel-test yaegi xvfb
xterm x11-xserver-utils"
case "${1:-}" in
build) pkgs="$build" ;;
run) pkgs="$build $run" ;;
# xvfb, xterm, x11-xserver-utils, x11-apps (xwd), netpbm and xdotool:
# the desktop rows' display and the shell's screenshot and click.
bench) pkgs="wrk nginx-light python3-jupyter-server python3-websocket xvfb
xterm x11-xserver-utils x11-apps netpbm xdotool" ;;
*) pkgs="$build $run $tests" ;;
esac

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
	echo "execd needs these Debian packages:$missing" >&2
	echo "run as root: apt-get update && $cmd" >&2
	exit 1
fi
echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >&2
