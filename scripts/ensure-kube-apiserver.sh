#!/usr/bin/env bash
# Makes sure the real Kubernetes API test environment is on this machine:
#   - etcd (Debian package etcd-server)
#   - kube-apiserver v1.20.2, built once from Debian's `kubernetes` source package and cached at
#     ${SNO_RELOCATE_CACHE:-$HOME/.cache/sno-relocate}/kube-apiserver-v1.20.2/kube-apiserver
# Idempotent: a second run with everything in place does nothing but check. A cold build takes
# about 9 minutes on 2 cores. The build log goes to a file beside the cache (path printed).
# The last line printed is the path of the kube-apiserver binary.
# SNO_RELOCATE_KUBE_APISERVER=/path/to/kube-apiserver skips the build and just checks that binary.
set -euo pipefail

VERSION=1.20.2
CACHE_ROOT="${SNO_RELOCATE_CACHE:-$HOME/.cache/sno-relocate}"
CACHE_DIR="$CACHE_ROOT/kube-apiserver-v$VERSION"
BIN="$CACHE_DIR/kube-apiserver"
LOG="$CACHE_DIR/build.log"
# Bumped whenever the recipe below changes what the binary does; a cached binary built by another
# recipe is rebuilt. (2: zero-value validation fix for custom resources.)
RECIPE=2
STAMP="$CACHE_DIR/kube-apiserver.recipe"
START=$SECONDS

phase() { printf '[ensure-kube-apiserver %4ss] %s\n' "$((SECONDS - START))" "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    phase "need root to run: $*"; exit 1
  fi
}

APT_UPDATED=0
apt_update_once() {
  if [ "$APT_UPDATED" = 0 ]; then
    phase "apt-get update"
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
}

# Installs the Debian packages given that are not installed yet.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_update_once
  phase "apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

phase "etcd"
if command -v etcd >/dev/null; then
  phase "etcd present: $(command -v etcd)"
else
  apt_install etcd-server
fi

if [ -n "${SNO_RELOCATE_KUBE_APISERVER:-}" ]; then
  [ -x "$SNO_RELOCATE_KUBE_APISERVER" ] || { phase "SNO_RELOCATE_KUBE_APISERVER=$SNO_RELOCATE_KUBE_APISERVER is not executable"; exit 1; }
  phase "using SNO_RELOCATE_KUBE_APISERVER"
  echo "$SNO_RELOCATE_KUBE_APISERVER"
  exit 0
fi

if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$RECIPE" ]; then
  phase "kube-apiserver v$VERSION cached"
  echo "$BIN"
  exit 0
fi

# One build at a time; a second caller waits and then finds the binary cached.
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.lock"
if ! flock -n 9; then
  phase "another build is running; waiting for it"
  flock 9
  if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$RECIPE" ]; then
    phase "kube-apiserver v$VERSION cached"
    echo "$BIN"
    exit 0
  fi
fi
# Left over by a build that was killed outright.
rm -rf "$CACHE_DIR"/build.??????

[ -x "$BIN" ] && phase "cached kube-apiserver was built by an older recipe: rebuilding"
phase "kube-apiserver v$VERSION not cached: building from Debian's kubernetes source package"
apt_install golang-go rsync make golang-github-modern-go-reflect2-dev

WORK=$(mktemp -d "$CACHE_DIR/build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# A private apt source list for deb-src, so the machine's own lists stay untouched; same mirror.
MIRROR=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$MIRROR" ] && [ -f /etc/apt/sources.list ]; then
  MIRROR=$(awk '$1=="deb"{for(i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
fi
[ -n "$MIRROR" ] || { phase "cannot find the Debian mirror in the apt sources"; exit 1; }
SRC="$WORK/apt"
mkdir -p "$SRC/lists/partial"
echo "deb-src $MIRROR bookworm main" > "$SRC/sources.list"
APT_O=(-o "Dir::Etc::SourceList=$SRC/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$SRC/lists")
# The private lists live under the caller's home, which apt's unprivileged download user cannot write.
[ "$(id -u)" = 0 ] && APT_O+=(-o APT::Sandbox::User=root)

phase "downloading the kubernetes source package (about 34 MB)"
apt-get "${APT_O[@]}" update -qq >&2
(cd "$WORK" && apt-get "${APT_O[@]}" source --download-only kubernetes >&2)
# bookworm's package is versioned 1.20.5+really1.20.2: the upstream tree inside is 1.20.2.
ORIG=$(ls "$WORK"/kubernetes_*.orig.tar.gz 2>/dev/null | head -n1 || true)
case "$ORIG" in
  *"$VERSION".orig.tar.gz) ;;
  *) phase "no kubernetes $VERSION orig tarball in the source package: ${ORIG:-none}"; ls "$WORK" >&2; exit 1 ;;
esac

phase "unpacking $(basename "$ORIG")"
tar -xzf "$ORIG" -C "$WORK"
TREE=$(find "$WORK" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes*' | head -n1)
[ -n "$TREE" ] && [ -f "$TREE/cmd/kube-apiserver/apiserver.go" ] || { phase "unexpected tarball layout"; ls "$WORK" >&2; exit 1; }

# The vendored reflect2 1.0.1 crashes under Go >= 1.18 ("fatal error: fault" as soon as a custom
# resource is written). Debian ships reflect2 1.0.2 as Go source; swap it in.
phase "replacing vendored reflect2 with Debian's 1.0.2"
R2=/usr/share/gocode/src/github.com/modern-go/reflect2
find "$TREE/vendor/github.com/modern-go/reflect2" -name '*.go' -delete
cp "$R2"/*.go "$TREE/vendor/github.com/modern-go/reflect2/"
cp "$R2"/*.s "$TREE/vendor/github.com/modern-go/reflect2/" 2>/dev/null || true

# Required too: built with Go >= 1.16, the vendored OpenAPI validator takes any zero value ("", 0,
# false) of a typed custom-resource field for null and refuses it ("must be of type string: null").
# Upstream removed that check (kube-openapi #230, Kubernetes 1.21); do the same here.
phase "fixing the zero-value check of the vendored OpenAPI validators"
ZERO_CHECK='if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {'
fixed=0
for f in "$TREE/vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go" "$TREE/vendor/github.com/go-openapi/validate/type.go"; do
  [ -f "$f" ] || continue
  if grep -qF "$ZERO_CHECK" "$f"; then
    sed -i "s/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/" "$f"
    grep -qF "$ZERO_CHECK" "$f" && { phase "could not patch $f"; exit 1; }
    phase "patched ${f#"$TREE/"}"
    # drop the reflect import if nothing else uses it
    grep -q 'reflect\.' "$f" || sed -i '/^[[:space:]]*"reflect"$/d' "$f"
    fixed=$((fixed + 1))
  fi
done
[ "$fixed" -gt 0 ] || { phase "zero-value check not found in the vendored validators"; exit 1; }

phase "make WHAT=cmd/kube-apiserver (about 9 min on 2 cores; log: $LOG)"
mkdir -p "$TREE/.go/src/k8s.io"
ln -s ../../.. "$TREE/.go/src/k8s.io/kubernetes"
GOHOME="$WORK/home"
mkdir -p "$GOHOME"
if ! (cd "$TREE" && env GOPATH="$TREE/.go" CGO_ENABLED=0 HOME="$GOHOME" GOFLAGS= \
        make WHAT=cmd/kube-apiserver) > "$LOG" 2>&1; then
  phase "build failed; last lines of $LOG:"
  tail -n 40 "$LOG" >&2
  exit 1
fi
OUT="$TREE/_output/bin/kube-apiserver"
[ -x "$OUT" ] || { phase "build produced no $OUT"; exit 1; }

# Copy under a temporary name, then rename: a partial copy is never taken for a cached binary.
cp "$OUT" "$BIN.tmp.$$"
chmod 0755 "$BIN.tmp.$$"
"$BIN.tmp.$$" --version >&2
mv -f "$BIN.tmp.$$" "$BIN"
echo "$RECIPE" > "$STAMP"
phase "built and cached kube-apiserver v$VERSION"
echo "$BIN"
