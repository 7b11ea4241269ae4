#!/usr/bin/env bash
# `npm run demo` from a fresh clone: installs what the demo needs (the npm packages, and the Debian
# packages for the private D-Bus and etcd when they are missing and this user may install them), says
# whether the cluster half can run (the kube-apiserver that scripts/ensure-kube-apiserver.sh builds once,
# in about 5-9 minutes), then runs scripts/demo.ts. `npm run demo -- --build` builds the API server
# first when it is missing; without it the demo runs the node half and says how to get the cluster half.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
phase() { printf '[demo %3ss] %s\n' "$((SECONDS - START))" "$*"; }

build=0
for arg in "$@"; do
  case "$arg" in
    --build) build=1 ;;
    *) echo "usage: npm run demo [-- --build]" >&2; exit 2 ;;
  esac
done

if [ ! -x node_modules/.bin/tsx ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  phase "npm install (the packages in package-lock.json; about a minute on a fresh machine)"
  npm install --no-audit --no-fund --prefer-offline
fi

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else
    return 1
  fi
}
need=()
command -v dbus-daemon >/dev/null || need+=(dbus)
command -v etcd >/dev/null || need+=(etcd-server)
if [ ${#need[@]} -gt 0 ]; then
  phase "apt-get install ${need[*]} (the private D-Bus for the node's services, etcd for the cluster)"
  if ! { as_root apt-get update -qq &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; }; then
    phase "could not install ${need[*]} (needs root or sudo); the demo goes on without them"
  fi
fi

if [ "$build" = 1 ]; then
  phase "kube-apiserver: scripts/ensure-kube-apiserver.sh (built once in about 5-9 minutes, then cached)"
  bash scripts/ensure-kube-apiserver.sh >/dev/null
fi

phase "starting the demo"
exec node --import tsx scripts/demo.ts
