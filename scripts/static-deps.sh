#!/bin/sh
# Build the two libraries `make static` needs and Debian ships no usable
# static archive for, from Debian's own source packages:
#   sh scripts/static-deps.sh DIR
# installs libmicrohttpd.a and libzmq.a with their headers and pkg-config
# files under DIR/prefix, once; a second run finds them and does nothing.
#
# Debian does ship libmicrohttpd.a and libzmq.a, but built with everything
# on: HTTPS (gnutls, which needs p11-kit, a shared library only) and
# curve, GSSAPI, PGM and NORM (libgssapi_krb5 has no static archive).  So
# both are rebuilt here with those off: execd serves plain HTTP and talks
# ZMTP to local kernels with HMAC-signed messages.
#
# The sources come through a private apt configuration under DIR/apt: the
# machine's own Debian mirrors, read from its apt sources at run time, as
# deb-src entries in a list of our own.  The machine's sources and its
# package lists are never touched.
#
# As root it installs what it needs with apt-get; otherwise it prints the
# command, like scripts/deps.sh.
set -eu

dir=${1:?usage: sh scripts/static-deps.sh DIR}
# Run from make: the builds below bring their own -j.
unset MAKEFLAGS MFLAGS MAKELEVEL
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
prefix=$dir/prefix
# The stamp holds this script's checksum: a changed recipe builds again.
stamp=$prefix/.built
sum=$(cksum <"$0")
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && exit 0

# Each package, and why:
#   dpkg-dev        dpkg-source, which apt-get source unpacks with
#   build-essential gcc, make and libc6-dev (libc.a) for the build itself
#   g++             libzmq is C++; brings libstdc++.a, linked statically
#   cmake           libzmq's build (its tarball has no configure script)
#   pkg-config      how the Makefile finds the archives
#   xz-utils        the source tarballs are .tar.xz
#   libjansson-dev libssl-dev libseccomp-dev libyaml-dev
#                   the static archives of the other four libraries
#   libx11-dev libxtst-dev libpng-dev
#                   the computer-use API's X client, XTEST and PNG
#                   encoder, with the archives they pull in (libxcb,
#                   libXau, libXdmcp, libXext, libXi, libXfixes, zlib)
#   file            the static build's test checks "static-pie linked"
#   busybox-static  /bin/sh in the empty root the static binary is tested in
pkgs="dpkg-dev build-essential g++ cmake pkg-config xz-utils libjansson-dev
libssl-dev libseccomp-dev libyaml-dev libx11-dev libxtst-dev libpng-dev
file busybox-static"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	cmd="apt-get install -y --no-install-recommends$missing"
	if [ "$(id -u)" != 0 ]; then
		echo "make static needs these Debian packages:$missing" >&2
		echo "run as root: apt-get update && $cmd" >&2
		exit 1
	fi
	echo "installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing >&2
fi

# --- a private apt configuration with deb-src entries ----------------------

. /etc/os-release
code=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
apt=$dir/apt
rm -rf "$apt"
mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
: >"$apt/none.list"

# One-line sources ("deb [opts] URI SUITE COMP..."): the same line as
# deb-src, for the release's own suites only (codename, codename-*).
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] || continue
	awk -v code="$code" '
	$1 == "deb" {
		i = 2
		if ($2 ~ /^\[/)
			while (i <= NF && $i !~ /\]$/)
				i++
		if ($2 ~ /^\[/)
			i++
		s = $(i + 1)
		if (s == code || index(s, code "-") == 1) {
			sub(/^deb/, "deb-src")
			print
		}
	}' "$f"
done >"$apt/parts/src.list"

# deb822 sources: every stanza of type deb whose suites are the release's
# own becomes the same stanza of type deb-src.
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	awk -v code="$code" '
	function flush() {
		if (n > 0 && deb && ours && !off)
			for (j = 1; j <= n; j++)
				print (j == tline ? "Types: deb-src" : st[j])
		if (n > 0 && deb && ours && !off)
			print ""
		n = 0; deb = 0; ours = 0; off = 0; tline = 0
	}
	/^[ \t]*$/ { flush(); next }
	/^#/ { next }
	{
		st[++n] = $0
		if (tolower($1) == "types:") {
			tline = n
			for (k = 2; k <= NF; k++)
				if ($k == "deb")
					deb = 1
		} else if (tolower($1) == "suites:") {
			for (k = 2; k <= NF; k++)
				if ($k == code || index($k, code "-") == 1)
					ours = 1
		} else if (tolower($1) == "enabled:" && tolower($2) == "no")
			off = 1
	}
	END { flush() }' "$f"
done >"$apt/parts/src.sources"

if ! grep -q . "$apt/parts/src.list" "$apt/parts/src.sources"; then
	echo "static-deps: no $code entry in the apt sources to take" \
	    "deb-src from" >&2
	exit 1
fi

set -- -o "Dir::Etc::SourceList=$apt/none.list" \
    -o "Dir::Etc::SourceParts=$apt/parts" \
    -o "Dir::State::Lists=$apt/lists" \
    -o "Dir::Cache=$apt/cache" \
    -o "APT::Sandbox::User=root"
echo "static-deps: fetching the source indexes" >&2
apt-get "$@" -q update >&2

# --- fetch, configure, build, install --------------------------------------

src=$dir/src
rm -rf "$src" "$prefix"
mkdir -p "$src" "$prefix"
cd "$src"
echo "static-deps: apt-get source libmicrohttpd zeromq3" >&2
apt-get "$@" -q source libmicrohttpd zeromq3 >&2

jobs=$(nproc 2>/dev/null || echo 2)
# One section per function and object, so that the link drops what execd
# never calls (the idle RSS of the static binary).
flags="-O2 -g -fPIE -fstack-protector-strong -D_FORTIFY_SOURCE=2"
flags="$flags -ffunction-sections -fdata-sections"

mhd=$(find "$src" -maxdepth 1 -type d -name 'libmicrohttpd-*' | head -n 1)
[ -n "$mhd" ] || { echo "static-deps: no libmicrohttpd source" >&2; exit 1; }
echo "static-deps: building $(basename "$mhd")" >&2
(
	cd "$mhd"
	./configure -q --prefix="$prefix" --libdir="$prefix/lib" \
	    --enable-static --disable-shared --with-pic \
	    --disable-https --without-gnutls --disable-doc \
	    --disable-examples --disable-curl \
	    CFLAGS="$flags" >&2
	make -s -j"$jobs" -C src/microhttpd >&2
	make -s -C src/microhttpd install >&2
	make -s -C src/include install >&2
	make -s install-pkgconfigDATA >&2
) || { echo "static-deps: libmicrohttpd failed" >&2; exit 1; }

zmq=$(find "$src" -maxdepth 1 -type d -name 'zeromq3-*' | head -n 1)
[ -n "$zmq" ] || { echo "static-deps: no zeromq3 source" >&2; exit 1; }
echo "static-deps: building $(basename "$zmq")" >&2
# The orig tarball has no configure script; its CMake build needs no
# autotools.  Drafts, curve (libsodium), libbsd, PGM and NORM off; CMake
# has no GSSAPI at all.
(
	cmake -S "$zmq" -B "$zmq/obj" -DCMAKE_BUILD_TYPE=Release \
	    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
	    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
	    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
	    -DBUILD_SHARED=OFF -DBUILD_STATIC=ON -DBUILD_TESTS=OFF \
	    -DENABLE_DRAFTS=OFF -DENABLE_CURVE=OFF -DWITH_LIBSODIUM=OFF \
	    -DWITH_LIBBSD=OFF -DWITH_OPENPGM=OFF -DWITH_NORM=OFF \
	    -DWITH_VMCI=OFF -DWITH_DOCS=OFF \
	    -DENABLE_CPACK=OFF -DENABLE_PRECOMPILED=OFF >&2
	cmake --build "$zmq/obj" -j "$jobs" >&2
	cmake --install "$zmq/obj" >&2
) || { echo "static-deps: libzmq failed" >&2; exit 1; }

# The sources and indexes are not needed again (and CMake's *.d files in
# the build tree would be read by make as dependency files).
cd "$dir"
rm -rf "$src" "$apt"
echo "$sum" >"$stamp"
echo "static-deps: done, in $prefix" >&2
