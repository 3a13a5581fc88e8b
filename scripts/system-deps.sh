#!/usr/bin/env bash
# Install the Debian packages the test suite needs when a command they provide is
# missing (a fresh CI machine). Each line below is "command-to-check package...".
# Root runs apt-get directly; others go through sudo when it works without a password.
# Then build the pgvector extension from the vendored source when the server lacks it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
need=()
check() {  # check <command, or an absolute path glob> <debian package>...
  local probe=$1; shift
  if [[ $probe == /* ]]; then compgen -G "$probe" >/dev/null && return 0
  else command -v "$probe" >/dev/null 2>&1 && return 0; fi
  need+=("$@")
}

SUDO=()
sudo_or_fail() {  # sets SUDO for apt-get / make install, or exits naming what is missing
  if [[ $(id -u) == 0 ]]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
    echo "system-deps: need $* but cannot install it (not root, no passwordless sudo)" >&2
    exit 1
  fi
}
apt_install() {
  sudo_or_fail "$@"
  echo "installing Debian packages: $*"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# PostgreSQL server binaries for the records-store suites (issue 14).
check "/usr/lib/postgresql/*/bin/pg_ctl" postgresql
# Chromium for the dashboard's end-to-end tests (tests/ui, Playwright; issue 18).
check /usr/bin/chromium chromium
# Add further lines here: check <command> <package>...

((${#need[@]} == 0)) || apt_install "${need[@]}"

# pgvector for the vector.provider: pgvector suites (issue 30): built from the vendored
# source (../shared/vendor/README.md) for every installed server major version that
# lacks it, against that version's postgresql-server-dev package. No network but apt.
PGVECTOR_TARBALL=${PGVECTOR_TARBALL:-$here/../../shared/vendor/pgvector-0.8.6.tar.gz}
for bindir in /usr/lib/postgresql/*/bin; do
  [[ -x $bindir/postgres ]] || continue
  major=$(basename "$(dirname "$bindir")")
  [[ -f /usr/share/postgresql/$major/extension/vector.control ]] && continue
  if [[ ! -f $PGVECTOR_TARBALL ]]; then
    echo "system-deps: pgvector missing for PostgreSQL $major and no source at $PGVECTOR_TARBALL" >&2
    exit 1
  fi
  pg_config=/usr/lib/postgresql/$major/bin/pg_config
  [[ -x $pg_config ]] && [[ -d /usr/include/postgresql/$major/server ]] \
    || apt_install "postgresql-server-dev-$major" make gcc
  sudo_or_fail "pgvector for PostgreSQL $major"
  build=$(mktemp -d)
  trap 'rm -rf "$build"' EXIT
  tar xzf "$PGVECTOR_TARBALL" -C "$build"
  src=$build; [[ -f $src/Makefile ]] || src=$(dirname "$(ls "$build"/*/Makefile | head -1)")
  echo "building pgvector for PostgreSQL $major in $src"
  # with_llvm=no: no clang needed for the JIT bitcode; the server loads the .so alone
  make -s -C "$src" PG_CONFIG="$pg_config" with_llvm=no -j"$(nproc)" >/dev/null
  "${SUDO[@]}" make -s -C "$src" PG_CONFIG="$pg_config" with_llvm=no install >/dev/null
  rm -rf "$build"; trap - EXIT
done
