#!/bin/sh
# The Docker stage: build every image under images/ and run them the way
# the OpenSandbox server's two runtimes run an execd image.
#
# Usage: sh tests/docker.sh        (as root; from any directory)
#
# 1. Installs Debian's docker.io and debootstrap when missing (apt-get,
#    as scripts/deps.sh does) and starts a dockerd of its own: private
#    socket, data root (a new temporary directory, removed at the end, or
#    $EXECD_DOCKER_DATA to keep images between runs; not under build/,
#    which make searches for *.d files), exec root, --bridge=none
#    --iptables=false, so containers use the host network and every port
#    they open is on 127.0.0.1.  That dockerd is stopped by its pid at the
#    end.
# 2. A Debian base image from debootstrap + docker import, from the mirror
#    this machine's apt configuration names (read now, written nowhere);
#    the tarball is cached in build/docker so reruns skip debootstrap.
# 3. `make static`, then every images/*/Dockerfile, built against that base.
# 4. The Docker flow: the execd image started with `tail -f /dev/null`,
#    /execd and /bootstrap.sh copied out, a user container started with
#    /opt/opensandbox/bootstrap.sh and the user's command.  The Kubernetes
#    flow: the init container's `sh -c "cp ... && chmod ..."` into a shared
#    volume mounted at /opt/opensandbox, then the user's container running
#    from it.  The code-interpreter image started on its own; a data
#    task in it (tests/datastack.py) and its DATA_STACK=0 variant (4d).
#    The desktop image started on its own (4f): the viewer through /proxy
#    (the page, the WebSocket to the VNC server), a screenshot, its
#    services, and headless Chromium viewing it (tests/sdk/desktop-view.mjs).
# 5. An SDK smoke test (tests/sdk/smoke.mjs, the real TypeScript SDK)
#    against each running execd.
#
# Containers get EXECD_LISTEN=127.0.0.1:PORT: with the host network, the
# drop-in default 0.0.0.0:44772 would open a port without a token to the
# whole network; tests/integration/test_bootstrap.py checks that default.
# The code-interpreter image's get a free EXECD_JUPYTER_LISTEN too: its
# fixed 127.0.0.1:44771 is taken while another run of this stage is up.
#
# When docker cannot run here (not root, no apt, dockerd does not start)
# it prints "SKIPPED: <reason>" and "0 passed, 0 failed", unless
# EXECD_REQUIRE_DOCKER=1 (CI), which makes that a failure.  Otherwise one
# PASS or FAIL line per check and, last, "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
W=$top/build/docker
mkdir -p "$W"
passed=0
failed=0
t0=$(date +%s)
tag=execd-test
run=
dpid=

pass() { echo "PASS docker: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL docker: $1"; failed=$((failed + 1)); }
note() { echo "== $* ($(($(date +%s) - t0)) s)"; }

finish() {
	cleanup
	note "done"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# skip REASON: the stage cannot run here.
skip() {
	cleanup
	if [ "${EXECD_REQUIRE_DOCKER:-0}" = 1 ]; then
		echo "FAIL docker: cannot run the Docker stage: $1"
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "SKIPPED: $1"
	echo "0 passed, 0 failed"
	exit 0
}

dk() { docker -H "unix://$run/docker.sock" "$@"; }

cleanup() {
	if [ -n "$dpid" ]; then
		dk ps -aq 2>/dev/null | while read -r c; do
			dk rm -f "$c" >/dev/null 2>&1
		done
		kill "$dpid" 2>/dev/null
		i=0
		while kill -0 "$dpid" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.2
			i=$((i + 1))
		done
		kill -9 "$dpid" 2>/dev/null
		dpid=
	fi
	if [ -n "$run" ]; then
		# What dockerd leaves mounted there (its network namespace),
		# deepest first.
		awk -v r="$run/" 'index($2, r) == 1 { print $2 }' /proc/mounts |
		    sort -r | while read -r m; do umount "$m"; done
		rm -rf "$run"
		run=
	fi
}
trap 'cleanup; exit 1' INT TERM

# mirror: the Debian archive this machine's apt uses (the first "deb"
# source of the release itself, not -security or -updates).
mirror() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v rel="$1" '
		    /^[ \t]*$/ { if (deb && uri && ok) { print uri; exit }
			deb = uri = ok = 0; next }
		    /^Types:/ && / deb( |$)/ { deb = 1 }
		    /^URIs:/ { uri = $2 }
		    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == rel) ok = 1 }
		    END { if (deb && uri && ok) print uri }' "$f"
	done
	[ -f /etc/apt/sources.list ] &&
	    awk -v rel="$1" '$1 == "deb" && $0 !~ /\[/ && $3 == rel { print $2 }
		$1 == "deb" && $2 ~ /^\[/ && $4 == rel { print $3 }' \
		/etc/apt/sources.list
}

# 1. Docker.
[ "$(id -u)" = 0 ] || skip "needs root to start dockerd"
missing=
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
if [ -n "$missing" ]; then
	note "installing$missing"
	command -v apt-get >/dev/null 2>&1 || skip "no apt-get to install$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	{ apt-get update -q && apt-get install -y -q --no-install-recommends \
	    $missing; } >"$W/apt.log" 2>&1 ||
	    { tail -n 20 "$W/apt.log"; skip "cannot install$missing"; }
fi
# The docker client of the same package as dockerd.
PATH=/usr/bin:$PATH
export DOCKER_BUILDKIT=0

run=$(mktemp -d)
data=${EXECD_DOCKER_DATA:-$run/data}
mkdir -p "$run/exec" "$data"
note "starting dockerd"
dockerd --host "unix://$run/docker.sock" --data-root "$data" \
    --exec-root "$run/exec" --pidfile "$run/dockerd.pid" \
    --bridge=none --iptables=false --ip6tables=false \
    >"$W/dockerd.log" 2>&1 &
dpid=$!
i=0
until dk version >/dev/null 2>&1; do
	if ! kill -0 "$dpid" 2>/dev/null || [ $i -ge 150 ]; then
		tail -n 20 "$W/dockerd.log"
		dpid=
		skip "dockerd does not start (its log: build/docker/dockerd.log)"
	fi
	sleep 0.2
	i=$((i + 1))
done
pass "dockerd started ($(dk version -f '{{.Server.Version}}'))"

# 2. The base image (the root file system is built outside build/, where
# make looks for *.d files).
# shellcheck disable=SC1091
rel=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$rel" ] || rel=bookworm
base=$tag-base:$rel
tarball=$W/$rel.tar
if [ ! -s "$tarball" ]; then
	url=$(mirror "$rel" | head -n 1)
	[ -n "$url" ] || { fail "no Debian mirror for $rel in apt's sources"
		finish; }
	note "debootstrap $rel from $url"
	if ! debootstrap --variant=minbase "$rel" "$run/rootfs" "$url" \
	    >"$W/debootstrap.log" 2>&1; then
		tail -n 20 "$W/debootstrap.log"
		fail "debootstrap $rel"
		finish
	fi
	rm -rf "$run/rootfs/var/cache/apt/archives/"*.deb
	tar -C "$run/rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
	rm -rf "$run/rootfs"
fi
if dk image inspect "$base" >/dev/null 2>&1 ||
    dk import "$tarball" "$base" >/dev/null; then
	pass "base image $base"
else
	fail "docker import $tarball"
	finish
fi

# 3. The static binary and the images.
note "make static"
if ! make -s -j"$(nproc 2>/dev/null || echo 2)" static >"$W/static.log" 2>&1
then
	tail -n 30 "$W/static.log"
	fail "make static"
	finish
fi
# build NAME: images/NAME/Dockerfile as $tag-NAME, the repository as context.
build() {
	note "building images/$1"
	if dk build --network host -q -f "images/$1/Dockerfile" \
	    --build-arg BASE="$base" --build-arg EXECD_IMAGE="$tag-execd" \
	    -t "$tag-$1" . >"$W/build-$1.log" 2>&1; then
		pass "image images/$1 built ($(dk image inspect -f \
		    '{{.Size}}' "$tag-$1") bytes)"
	else
		tail -n 30 "$W/build-$1.log"
		fail "image images/$1 does not build"
	fi
}
# tslab for the code-interpreter image, installed here as the test suite
# installs it (npm ci from the lockfile), so the image build needs no npm.
if ! sh tests/kernels/setup.sh "$run/kernels" >"$W/tslab.log" 2>&1; then
	tail -n 20 "$W/tslab.log"
	fail "tests/kernels/setup.sh (tslab for the code-interpreter image)"
fi
# playwright-core for the code-interpreter image, likewise from its
# lockfile when node_modules is missing or older than it.
b=images/code-interpreter/browser
if [ ! -f "$b/node_modules/.package-lock.json" ] || [ -n "$(find \
    "$b/package.json" "$b/package-lock.json" \
    -newer "$b/node_modules/.package-lock.json")" ]; then
	if ! (cd "$b" && npm ci --no-audit --no-fund) >"$W/browser.log" 2>&1
	then
		tail -n 20 "$W/browser.log"
		fail "npm ci in $b (playwright-core for the code-interpreter image)"
	fi
fi
# The SDK's modules: the smoke tests', and playwright-core, which the
# desktop image takes from the context.
if [ ! -d tests/sdk/node_modules ]; then
	(cd tests/sdk && npm ci --no-audit --no-fund) >"$W/npm.log" 2>&1 ||
	    fail "npm ci in tests/sdk"
fi
# execd first: code-interpreter and desktop start from it.
build execd
for d in images/*/; do
	d=${d%/}
	d=${d#images/}
	[ "$d" = execd ] || build "$d"
done

# port: a free TCP port on 127.0.0.1.
port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# status PORT [TOKEN]: the status of one GET /metrics there (0: no
# answer); /ping answers without the token, as probes send none.
status() {
	/usr/bin/python3 - "$1" "${2:-}" <<'EOF' 2>/dev/null || echo 0
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=2)
h = {"X-EXECD-ACCESS-TOKEN": sys.argv[2]} if sys.argv[2] else {}
c.request("GET", "/metrics", headers=h)
print(c.getresponse().status)
EOF
}

# ping PORT [TOKEN]: wait up to 30 s for a 200 from execd there.
ping() {
	i=0
	while [ $i -lt 150 ]; do
		[ "$(status "$@")" = 200 ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# smoke NAME PORT [TOKEN [code]]: the SDK smoke test against execd there.
smoke() {
	if EXECD_URL="127.0.0.1:$2" EXECD_TOKEN="${3:-}" SMOKE_CODE="${4:-}" \
	    timeout 300 node tests/sdk/smoke.mjs >"$W/smoke-$1.log" 2>&1
	then
		pass "$1: SDK smoke test ($(tail -n 1 "$W/smoke-$1.log"))"
	else
		cat "$W/smoke-$1.log"
		fail "$1: SDK smoke test"
	fi
}

# 4a. The Docker runtime's flow.
note "Docker flow"
out=$W/out
rm -rf "$out"
mkdir -p "$out"
if dk run -d --name installer "$tag-execd" tail -f /dev/null >/dev/null &&
    dk cp installer:/execd "$out/execd" &&
    dk cp installer:/bootstrap.sh "$out/bootstrap.sh"; then
	pass "execd image runs tail -f /dev/null; /execd, /bootstrap.sh copied"
else
	dk logs installer 2>&1 | tail -n 20
	fail "execd image as the Docker runtime's installer"
fi
dk rm -f installer >/dev/null 2>&1
if [ -x "$out/execd" ] && [ -x "$out/bootstrap.sh" ]; then
	p=$(port)
	# Both files in one directory copied as /opt/opensandbox, which the
	# user's image need not have.
	mkdir -p "$out/opensandbox"
	cp "$out/execd" "$out/bootstrap.sh" "$out/opensandbox/"
	if ! dk create --name user --network host \
	    -e EXECD_LISTEN="127.0.0.1:$p" \
	    --entrypoint /opt/opensandbox/bootstrap.sh "$base" \
	    sh -c 'echo user-command-ran; exec sleep 3600' >/dev/null ||
	    ! dk cp "$out/opensandbox" user:/opt/ ||
	    ! dk start user >/dev/null; then
		fail "Docker flow: the user's container does not start"
	elif ping "$p"; then
		pass "Docker flow: execd answers /ping in the user's container"
		smoke docker "$p"
	else
		dk logs user 2>&1 | tail -n 20
		fail "Docker flow: execd does not answer in the user's container"
	fi
	if dk logs user 2>&1 | grep -q user-command-ran; then
		pass "Docker flow: the user's command ran"
		s=$(date +%s)
		dk stop -t 20 user >/dev/null
		st=$(dk inspect -f '{{.State.ExitCode}}' user)
		if [ $(($(date +%s) - s)) -lt 15 ]; then
			pass "Docker flow: docker stop ends it promptly (status $st)"
		else
			fail "Docker flow: SIGTERM not passed on (stop waited)"
		fi
	else
		fail "Docker flow: the user's command did not run"
	fi
	dk rm -f user >/dev/null 2>&1
fi

# 4b. The Kubernetes runtime's flow: an init container and an emptyDir.
note "Kubernetes flow"
dk volume create opensandbox-bin >/dev/null
# The pod's "command" replaces the image's entrypoint: --entrypoint.
if dk run --rm -v opensandbox-bin:/opt/opensandbox -w / \
    --entrypoint /bin/sh "$tag-execd" -c 'cp ./execd /opt/opensandbox/execd && cp ./bootstrap.sh /opt/opensandbox/bootstrap.sh && chmod +x /opt/opensandbox/execd /opt/opensandbox/bootstrap.sh' \
    >"$W/init.log" 2>&1; then
	pass "Kubernetes flow: the init container copied both files"
	p=$(port)
	tok=k8s-token-$$
	dk run -d --name pod --network host -v opensandbox-bin:/opt/opensandbox \
	    -e EXECD=/opt/opensandbox/execd -e EXECD_LISTEN="127.0.0.1:$p" \
	    -e EXECD_ACCESS_TOKEN="$tok" \
	    --entrypoint /opt/opensandbox/bootstrap.sh "$base" \
	    sleep 3600 >/dev/null
	if ping "$p" "$tok"; then
		pass "Kubernetes flow: execd answers, with the access token"
		for t in wrong-token ""; do
			st=$(status "$p" "$t")
			if [ "$st" = 401 ]; then
				pass "Kubernetes flow: ${t:-no} token: 401"
			else
				fail "Kubernetes flow: ${t:-no} token: $st"
			fi
		done
		smoke kubernetes "$p" "$tok"
	else
		dk logs pod 2>&1 | tail -n 20
		fail "Kubernetes flow: execd does not answer"
	fi
	dk rm -f pod >/dev/null 2>&1
else
	cat "$W/init.log"
	fail "Kubernetes flow: the init container failed"
fi
dk volume rm opensandbox-bin >/dev/null 2>&1

# 4c. The code-interpreter image, execd as its main process.
if dk image inspect "$tag-code-interpreter" >/dev/null 2>&1; then
	note "code-interpreter"
	p=$(port)
	dk run -d --name ci --network host -e EXECD_LISTEN="127.0.0.1:$p" \
	    -e EXECD_JUPYTER_LISTEN="127.0.0.1:$(port)" \
	    "$tag-code-interpreter" >/dev/null
	if ping "$p"; then
		pass "code-interpreter: execd answers"
		if dk exec ci /opt/opensandbox/execd --kernels \
		    >"$W/kernels.log" 2>&1; then
			for l in python javascript typescript r; do
				if awk '{ print tolower($2) }' "$W/kernels.log" |
				    grep -qx "$l"; then
					pass "code-interpreter: a $l kernelspec"
				else
					cat "$W/kernels.log"
					fail "code-interpreter: no $l kernelspec"
				fi
			done
		else
			cat "$W/kernels.log"
			fail "code-interpreter: execd --kernels"
		fi
		smoke code-interpreter "$p" "" code
	else
		dk logs ci 2>&1 | tail -n 20
		fail "code-interpreter: execd does not answer"
	fi
	dk rm -f ci >/dev/null 2>&1
fi

# 4d. The code-interpreter image's data stack: a data task through the
# API (tests/datastack.py: Chromium driven by playwright-core from Node
# scrapes a page on the container's loopback into a CSV, a Python context
# fits and plots it, the PNG in the stream; the data libraries import;
# Selenium reads the page); then the variant without the data stack
# (--build-arg DATA_STACK=0).  That build reuses every layer of the full
# one up to the data stack's, so it costs seconds.
if dk image inspect "$tag-code-interpreter" >/dev/null 2>&1; then
	note "code-interpreter: data stack"
	p=$(port)
	dk run -d --name ds --network host -e EXECD_LISTEN="127.0.0.1:$p" \
	    -e EXECD_JUPYTER_LISTEN="127.0.0.1:$(port)" \
	    "$tag-code-interpreter" >/dev/null
	if ping "$p"; then
		if timeout 600 /usr/bin/python3 tests/datastack.py "$p" "$(port)" \
		    >"$W/datastack.log" 2>&1; then
			sed 's/^ok: /  /' "$W/datastack.log"
			pass "code-interpreter: a data task (browser, CSV, fit, PNG)"
		else
			cat "$W/datastack.log"
			fail "code-interpreter: a data task (browser, CSV, fit, PNG)"
		fi
	else
		dk logs ds 2>&1 | tail -n 20
		fail "code-interpreter (data stack): execd does not answer"
	fi
	dk rm -f ds >/dev/null 2>&1
	note "building images/code-interpreter with DATA_STACK=0"
	slim=$tag-code-interpreter-slim
	if dk build --network host -q -f images/code-interpreter/Dockerfile \
	    --build-arg BASE="$base" --build-arg EXECD_IMAGE="$tag-execd" \
	    --build-arg DATA_STACK=0 -t "$slim" . >"$W/build-slim.log" 2>&1
	then
		full=$(dk image inspect -f '{{.Size}}' "$tag-code-interpreter")
		size=$(dk image inspect -f '{{.Size}}' "$slim")
		if [ "$size" -lt "$full" ] &&
		    dk run --rm --entrypoint /opt/opensandbox/execd "$slim" \
		    --kernels 2>&1 | awk '{ print $2 }' | grep -qx python &&
		    ! dk run --rm --entrypoint python3 "$slim" \
		    -c 'import numpy' >/dev/null 2>&1; then
			pass "code-interpreter DATA_STACK=0: $size bytes (full: $full), kernels, no numpy"
		else
			fail "code-interpreter DATA_STACK=0: $size bytes (full: $full), or kernels missing, or numpy there"
		fi
	else
		tail -n 30 "$W/build-slim.log"
		fail "code-interpreter DATA_STACK=0 does not build"
	fi
fi

# 4e. Isolated sessions (/v1/isolated, docs/isolation.md).  In the execd
# image without extra capabilities the host cannot make them, and says
# why (capabilities) and 503 to create.  With CAP_SYS_ADMIN and an upper
# root that is not on the container's overlay root (a tmpfs here), the
# least this needs under Docker's default seccomp profile, a session is
# made and runs: in the Debian base image with the execd the Docker flow
# copied out of the execd image (a session's shell is bash, which the
# execd image has not).  Self-contained: its own containers, removed here.
if dk image inspect "$tag-execd" >/dev/null 2>&1 &&
    [ -x "$out/opensandbox/execd" ]; then
	note "isolated sessions"
	# iso_check PORT WANT: WANT "none" (503 and a reason) or "works".
	iso_check() {
		/usr/bin/python3 - "$1" "$2" <<'EOF'
import http.client, json, sys
port, want = int(sys.argv[1]), sys.argv[2]
def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()
st, caps = req("GET", "/v1/isolated/capabilities")
caps = json.loads(caps)
if want == "none":
    st2, body = req("POST", "/v1/isolated/session",
                    {"workspace": {"path": "/"}})
    ok = (st == 200 and caps["available"] is False and caps.get("message")
          and st2 == 503 and json.loads(body)["code"] ==
          "SERVICE_UNAVAILABLE")
    print("%s; create %d" % (caps.get("message"), st2))
    sys.exit(0 if ok else 1)
req("POST", "/directories", {"/ws": {"mode": 755}})
st, body = req("POST", "/v1/isolated/session", {"workspace": {"path": "/ws"}})
if st != 201 or not caps["available"]:
    print("capabilities %r; create %d %r" % (caps, st, body))
    sys.exit(1)
sid = json.loads(body)["session_id"]
st, body = req("POST", "/v1/isolated/session/%s/run" % sid,
               {"code": "echo in-session > /ws/f; cat /ws/f"})
st2, _ = req("GET", "/v1/isolated/session/%s/files/download?path=/ws/f" % sid)
st3, _ = req("GET", "/files/info?path=/ws/f")
print("run %d %r; file in the session %d, outside %d" % (
    st, body[:200], st2, st3))
sys.exit(0 if st == 200 and b"in-session" in body and st2 == 200 and
         st3 == 404 else 1)
EOF
	}
	for v in none works; do
		p=$(port)
		extra=""
		img=$tag-execd
		what="execd image, no extra capabilities"
		if [ "$v" = works ]; then
			what="Debian image, SYS_ADMIN, upper root on a tmpfs"
			extra="--cap-add SYS_ADMIN --tmpfs /var/lib/execd/isolation"
			extra="$extra -v $out/opensandbox:/opt/opensandbox:ro"
			extra="$extra --entrypoint /opt/opensandbox/execd"
			img=$base
		fi
		# shellcheck disable=SC2086
		dk run -d --name "iso-$v" --network host $extra \
		    -e EXECD_LISTEN="127.0.0.1:$p" "$img" >/dev/null
		if ! ping "$p"; then
			dk logs "iso-$v" 2>&1 | tail -n 20
			fail "isolated ($what): execd does not answer"
		elif iso_check "$p" "$v" >"$W/iso-$v.log" 2>&1; then
			pass "isolated ($what): $(tail -n 1 "$W/iso-$v.log")"
		else
			cat "$W/iso-$v.log"
			dk logs "iso-$v" 2>&1 | tail -n 20
			fail "isolated ($what)"
		fi
		dk rm -f "iso-$v" >/dev/null 2>&1
	done
fi

# 4f. The desktop image: its services, the noVNC viewer through execd's
# /proxy (the page, and the websockify WebSocket to the VNC server's RFB
# greeting, for control on 6080 and view only on 6081), a screenshot
# through the API, and headless Chromium opening the viewer as a person
# would (the token in the URL, no header: execd trades it for a cookie);
# its screenshot is kept as build/docker/desktop-view.png.  With
# the host network the image's loopback ports (5900, 5901, 6080, 6081)
# are the host's: they must be free here.
if dk image inspect "$tag-desktop" >/dev/null 2>&1; then
	note "desktop"
	p=$(port)
	tok=desktop-token-$$
	dk run -d --name desktop --network host --shm-size 256m \
	    -e EXECD_LISTEN="127.0.0.1:$p" -e EXECD_ACCESS_TOKEN="$tok" \
	    "$tag-desktop" >/dev/null
	if ping "$p" "$tok"; then
		pass "desktop: execd answers, with the access token"
		/usr/bin/python3 - "$p" "$tok" <<'PY' >"$W/desktop.log" 2>&1
import base64, http.client, json, os, socket, struct, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
H = {"X-EXECD-ACCESS-TOKEN": tok}


def get(path, hdrs=H):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path, headers=hdrs)
    r = c.getresponse()
    return r.status, r.read()


def check(ok, what):
    print(("PASS docker: " if ok else "FAIL docker: ") + what, flush=True)


def rfb(vport):
    """The first WebSocket message through /proxy/VPORT/websockify."""
    s = socket.create_connection(("127.0.0.1", port), 30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /proxy/%d/websockify HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: binary\r\n"
               "X-EXECD-ACCESS-TOKEN: %s\r\n\r\n" % (vport, key, tok))
              .encode())
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(4096)
        if not b:
            break
        data += b
    head, _, rest = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        s.close()
        return head.decode("latin1")[:80]
    while len(rest) < 14:
        b = s.recv(4096)
        if not b:
            break
        rest += b
    s.close()
    # One binary frame from the server (unmasked): the RFB greeting.
    return rest[2:14].decode("latin1") if rest[:1] == b"\x82" else repr(rest)


# The services come up after execd: wait (bounded) for the viewer page.
end = time.monotonic() + 60
while True:
    st, body = get("/proxy/6080/vnc.html")
    if st == 200 or time.monotonic() > end:
        break
    time.sleep(0.5)
check(st == 200 and b"noVNC" in body,
      "desktop: vnc.html through /proxy/6080 (%d, %d bytes)" % (st, len(body)))
check(get("/proxy/6080/vnc.html", {})[0] == 401,
      "desktop: the viewer without the token is 401")
for vport in (6080, 6081):
    v = ""
    for _ in range(60):
        v = rfb(vport)
        if v.startswith("RFB "):
            break
        time.sleep(0.5)
    check(v.startswith("RFB 003."), "desktop: websockify handshake through "
          "/proxy/%d, the VNC server's greeting %r" % (vport, v))
st, png = get("/computer/screenshot")
w, h = struct.unpack(">II", png[16:24]) if png[:4] == b"\x89PNG" else (0, 0)
check(st == 200 and (w, h) == (1280, 800),
      "desktop: GET /computer/screenshot (%d, %dx%d PNG)" % (st, w, h))
st, body = get("/services")
sv = {s["name"]: s for s in json.loads(body)["services"]} if st == 200 else {}
up = [n for n in ("xvfb", "wm", "vnc", "vnc-view", "novnc", "novnc-view")
      if sv.get(n, {}).get("state") == "running"]
bg = sv.get("background", {}).get("last_exit")
check(len(up) == 6 and bg == "exit status 0", "desktop: GET /services: "
      "running %s; background: %s" % (",".join(up), bg))
PY
		cat "$W/desktop.log"
		passed=$((passed + $(grep -c '^PASS ' "$W/desktop.log")))
		failed=$((failed + $(grep -c '^FAIL ' "$W/desktop.log")))
		grep -q 'desktop: GET /services' "$W/desktop.log" ||
		    fail "desktop: the checks did not finish (build/docker/desktop.log)"
		rm -f "$W/desktop-view.png"
		if EXECD_URL="127.0.0.1:$p" EXECD_TOKEN="$tok" VIEW_PORT=6080 \
		    VIEW_SHOT="$W/desktop-view.png" VIEW_RGB=2e6f8e \
		    timeout 300 node tests/sdk/desktop-view.mjs \
		    >"$W/desktop-view.log" 2>&1; then
			pass "desktop: Chromium shows the desktop through /proxy/6080 ($(tail -n 1 "$W/desktop-view.log"))"
		else
			cat "$W/desktop-view.log"
			fail "desktop: Chromium through /proxy/6080 (build/docker/desktop-view.png)"
		fi
	else
		dk logs desktop 2>&1 | tail -n 20
		fail "desktop: execd does not answer"
	fi
	dk logs desktop >"$W/desktop-container.log" 2>&1
	dk rm -f desktop >/dev/null 2>&1
fi
finish
