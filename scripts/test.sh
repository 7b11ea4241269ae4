#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need (npm packages, Debian
# packages, the kube-apiserver build, the VM image), builds the agent, then runs every tier.
# Ends with one line summing all suites: "N passed, N failed".
# VM_E2E=0 skips the virtual-machine suite (and says so).
set -uo pipefail
cd "$(dirname "$0")/.."
ART=.artifacts
mkdir -p "$ART"
rm -f "$ART"/vitest-*.json "$ART"/hooks-*.json "$ART/summary.txt"
phase() { printf '\n=== [%4ss] %s\n' "$SECONDS" "$*"; }
failures=0

phase "npm packages"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund || exit 1
fi

phase "Debian packages for the tests (openssl, dbus, etcd, systemd-analyze, dnsmasq, xorriso, prometheus, age, swtpm, docker-registry)"
need=()
command -v openssl >/dev/null || need+=(openssl)
command -v dbus-daemon >/dev/null || need+=(dbus)
command -v etcd >/dev/null || need+=(etcd-server)
command -v logger >/dev/null || need+=(bsdutils)
command -v ssh-keygen >/dev/null || need+=(openssh-client)
command -v ip >/dev/null || need+=(iproute2)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v unshare >/dev/null || need+=(util-linux)
command -v ping >/dev/null || need+=(iputils-ping)
[ -x /usr/bin/time ] || need+=(time)
command -v dnsmasq >/dev/null || need+=(dnsmasq-base)
command -v xorriso >/dev/null || need+=(xorriso) # render --iso packs site folders as ISO 9660 images
command -v promtool >/dev/null || need+=(prometheus) # promtool and prometheus: the rules checked, the alerts fired
command -v age >/dev/null || need+=(age)                # sealed site secrets open with the reference tool
command -v swtpm >/dev/null || need+=(swtpm)            # a software TPM for the VM's node key
command -v docker-registry >/dev/null || need+=(docker-registry) # the site registry of the registry check
command -v htpasswd >/dev/null || need+=(apache2-utils) # the site registry's password file
[ -x /usr/lib/systemd/systemd-journal-remote ] || need+=(systemd-journal-remote) # journals as a node writes them
if [ "${VM_E2E:-1}" != 0 ]; then
  # the VM suite's host tools (test/e2e/build-base.sh lists the same): installed here, so that the
  # base image's build, which starts next, runs no apt-get beside the kube-apiserver build's
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  command -v qemu-img >/dev/null || need+=(qemu-utils)
  command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  command -v mkfs.vfat >/dev/null || need+=(dosfstools)
  command -v mcopy >/dev/null || need+=(mtools)
  command -v debugfs >/dev/null || need+=(e2fsprogs)
  command -v xz >/dev/null || need+=(xz-utils)
  command -v chronyd >/dev/null || need+=(chrony)
fi
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "need root to install: ${need[*]}"; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" || exit 1
fi

# The VM suite's base image (mmdebstrap, on first use, then cached) builds beside the kube-apiserver
# build: the one downloads and unpacks Debian packages while the other compiles.
base_pid=
if [ "${VM_E2E:-1}" != 0 ]; then
  phase "VM base image (built on first use, then cached), beside the kube-apiserver build"
  nice -n 10 bash test/e2e/build-base.sh >/dev/null &
  base_pid=$!
fi

phase "kube-apiserver v1.20.2 (built from Debian's source on first use, then cached)"
if [ -x scripts/ensure-kube-apiserver.sh ]; then
  bash scripts/ensure-kube-apiserver.sh || exit 1
fi

phase "build: bundle, single executable, schema, MachineConfigs"
./build.sh || exit 1

# The VM suite is the longest tier and mostly waits on its guests: it starts now, beside the rest,
# at a lower priority so the tiers with tighter timeouts keep the cores they need; its output
# follows theirs.
vm_pid=
if [ "${VM_E2E:-1}" = 0 ]; then
  phase "VM end-to-end suite SKIPPED (VM_E2E=0)"
else
  phase "VM end-to-end suite started beside the other tiers (qemu; its output comes last)"
  if wait "$base_pid"; then
    nice -n 10 npx vitest run --config vitest.e2e.config.ts --reporter=default --reporter=json --reporter=./scripts/vitest-hook-errors.mjs \
      --outputFile.json="$ART/vitest-e2e.json" >"$ART/e2e.log" 2>&1 &
    vm_pid=$!
  else
    echo "the VM base image was not built (test/e2e/build-base.sh's output is above): the VM suite cannot run"
    failures=$((failures + 1))
  fi
fi

phase "typecheck, lint and format"
npx tsc -p . || failures=$((failures + 1))
npx eslint . || failures=$((failures + 1))
npx prettier --check . || failures=$((failures + 1))

phase "unit, fixture, black-box and kube-apiserver tests (the API outage faults beside them)"
# The fault file spends most of its time in outages it waits out (up to 300 s each), so it runs in
# a process of its own beside the rest; its output follows the main suite's.
FAULTS=test/cluster/faults.test.ts
npx vitest run "$FAULTS" --reporter=default --reporter=json --reporter=./scripts/vitest-hook-errors.mjs --outputFile.json="$ART/vitest-faults.json" \
  >"$ART/faults.log" 2>&1 &
faults_pid=$!
npx vitest run --exclude "$FAULTS" --reporter=default --reporter=json --reporter=./scripts/vitest-hook-errors.mjs --outputFile.json="$ART/vitest-main.json" || true
phase "API outage faults (ran beside the main suite)"
wait "$faults_pid" || [ -f "$ART/vitest-faults.json" ] || failures=$((failures + 1))
cat "$ART/faults.log"

if [ -n "$vm_pid" ]; then
  phase "VM end-to-end suite (started beside the other tiers; waiting for it to end)"
  wait "$vm_pid" || [ -f "$ART/vitest-e2e.json" ] || failures=$((failures + 1))
  cat "$ART/e2e.log"
fi

phase "summary"
node scripts/summarize-tests.mjs "$ART" "$failures" | tee "$ART/summary.txt"
tail -n 1 "$ART/summary.txt" | grep -q ' 0 failed'
