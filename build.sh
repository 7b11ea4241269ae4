#!/usr/bin/env bash
# Builds dist/sno-relocate.cjs (one CommonJS bundle), dist/sno-relocate (a Node single executable
# that needs no node_modules), the JSON Schema for editors, and the factory MachineConfigs.
# SNO_RELOCATE_VERSION stamps the build with a version other than package.json's (a release's);
# SNO_RELOCATE_DIST writes the executable and bundle into another folder (then nothing else).
set -euo pipefail
cd "$(dirname "$0")"
step() { printf '[build %3ss] %s\n' "$SECONDS" "$*"; }

[ -d node_modules ] || { step "installing npm packages"; npm install --no-audit --no-fund; }
DIST=${SNO_RELOCATE_DIST:-dist}
mkdir -p "$DIST"
stamp=()
[ -n "${SNO_RELOCATE_VERSION:-}" ] && stamp=("--define:__SNO_RELOCATE_VERSION__=\"$SNO_RELOCATE_VERSION\"")

step "bundling $DIST/sno-relocate.cjs"
# the commit's time, a lower bound for the true time on any node (src/cli/build-info.ts); the same
# source builds the same bundle
BUILT_AT=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
# optional native modules are replaced (src/bundle/): dbus-next's, ws's and node-fetch's, so the
# executable loads only built-in modules; so is node-fetch's URL fallback, which Node 20 never takes
npx esbuild src/cli/main.ts --bundle --platform=node --target=node20 --format=cjs --minify \
  --alias:usocket=./src/bundle/usocket.cjs --alias:x11=./src/bundle/x11.cjs \
  --alias:bufferutil=./src/bundle/absent.cjs --alias:utf-8-validate=./src/bundle/absent.cjs --alias:encoding=./src/bundle/absent.cjs \
  --alias:whatwg-url=./src/bundle/whatwg-url.cjs \
  --define:process.env.SNO_RELOCATE_BUILT_AT="\"$BUILT_AT\"" \
  "${stamp[@]}" --legal-comments=none --log-level=warning --outfile="$DIST/sno-relocate.cjs"

step "making the single executable $DIST/sno-relocate"
# the agent's units go in as an asset: `factory prepare` renders the MachineConfigs from them
npx tsx -e 'import { agentSources } from "./src/factory/agent-sources.ts";
process.stdout.write(JSON.stringify(agentSources("systemd")));' > "$DIST/agent-sources.json"
cat > "$DIST/sea-config.json" <<JSON
{ "main": "$DIST/sno-relocate.cjs", "output": "$DIST/sea-prep.blob", "disableExperimentalSEAWarning": true, "useCodeCache": true,
  "assets": { "agent-sources.json": "$DIST/agent-sources.json" } }
JSON
node --experimental-sea-config "$DIST/sea-config.json" >/dev/null
cp "$(command -v node)" "$DIST/sno-relocate.tmp"
chmod u+w "$DIST/sno-relocate.tmp"
# postject warns about ELF note sections it does not parse; show its output only when it fails
npx postject "$DIST/sno-relocate.tmp" NODE_SEA_BLOB "$DIST/sea-prep.blob" \
  --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2 >"$DIST/postject.log" 2>&1 || { cat "$DIST/postject.log"; exit 1; }
mv "$DIST/sno-relocate.tmp" "$DIST/sno-relocate"
rm -f "$DIST/sea-prep.blob" "$DIST/sea-config.json" "$DIST/postject.log" "$DIST/agent-sources.json"
if [ "$DIST" != dist ]; then
  step "done: $(du -h "$DIST/sno-relocate" | cut -f1) executable in $DIST"
  exit 0
fi

step "writing dist/site-config.v1.schema.json"
npx tsx scripts/json-schema.ts > dist/site-config.v1.schema.json

if [ -f scripts/render-machineconfigs.ts ]; then
  step "rendering MachineConfigs into machineconfigs/"
  npx tsx scripts/render-machineconfigs.ts machineconfigs
fi
step "done: $(du -h dist/sno-relocate | cut -f1) executable, $(du -h dist/sno-relocate.cjs | cut -f1) bundle"
