#!/usr/bin/env bash
# Builds dist/sno-relocate.cjs (one CommonJS bundle), dist/sno-relocate (a Node single executable
# that needs no node_modules), the JSON Schema for editors, and the factory MachineConfigs.
set -euo pipefail
cd "$(dirname "$0")"
step() { printf '[build %3ss] %s\n' "$SECONDS" "$*"; }

[ -d node_modules ] || { step "installing npm packages"; npm install --no-audit --no-fund; }
mkdir -p dist

step "bundling dist/sno-relocate.cjs"
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
  --legal-comments=none --log-level=warning --outfile=dist/sno-relocate.cjs

step "making the single executable dist/sno-relocate"
# the agent's units go in as an asset: `factory prepare` renders the MachineConfigs from them
npx tsx -e 'import { agentSources } from "./src/factory/agent-sources.ts";
process.stdout.write(JSON.stringify(agentSources("systemd")));' > dist/agent-sources.json
cat > dist/sea-config.json <<JSON
{ "main": "dist/sno-relocate.cjs", "output": "dist/sea-prep.blob", "disableExperimentalSEAWarning": true, "useCodeCache": true,
  "assets": { "agent-sources.json": "dist/agent-sources.json" } }
JSON
node --experimental-sea-config dist/sea-config.json >/dev/null
cp "$(command -v node)" dist/sno-relocate.tmp
chmod u+w dist/sno-relocate.tmp
# postject warns about ELF note sections it does not parse; show its output only when it fails
npx postject dist/sno-relocate.tmp NODE_SEA_BLOB dist/sea-prep.blob \
  --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2 >dist/postject.log 2>&1 || { cat dist/postject.log; exit 1; }
mv dist/sno-relocate.tmp dist/sno-relocate
rm -f dist/sea-prep.blob dist/sea-config.json dist/postject.log dist/agent-sources.json

step "writing dist/site-config.v1.schema.json"
npx tsx scripts/json-schema.ts > dist/site-config.v1.schema.json

if [ -f scripts/render-machineconfigs.ts ]; then
  step "rendering MachineConfigs into machineconfigs/"
  npx tsx scripts/render-machineconfigs.ts machineconfigs
fi
step "done: $(du -h dist/sno-relocate | cut -f1) executable, $(du -h dist/sno-relocate.cjs | cut -f1) bundle"
