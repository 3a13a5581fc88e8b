#!/usr/bin/env bash
# Install the Debian packages the test suite needs when a command they provide is
# missing (a fresh CI machine). Each line below is "command-to-check package...".
# Root runs apt-get directly; others go through sudo when it works without a password.
set -euo pipefail

need=()
check() {  # check <command, or an absolute path glob> <debian package>...
  local probe=$1; shift
  if [[ $probe == /* ]]; then compgen -G "$probe" >/dev/null && return 0
  else command -v "$probe" >/dev/null 2>&1 && return 0; fi
  need+=("$@")
}

# PostgreSQL server binaries for the records-store suites (issue 14).
check "/usr/lib/postgresql/*/bin/pg_ctl" postgresql
# Chromium for the dashboard's end-to-end tests (tests/ui, Playwright; issue 18).
check /usr/bin/chromium chromium
# Add further lines here: check <command> <package>...

((${#need[@]})) || exit 0
echo "installing Debian packages: ${need[*]}"
if [[ $(id -u) == 0 ]]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
  echo "system-deps: need ${need[*]} but cannot run apt-get (not root, no passwordless sudo)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
