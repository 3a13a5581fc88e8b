#!/usr/bin/env bash
# Bundle the browser libraries of the memory inspector (/ui) and the API docs (/docs)
# into hello_memory/interfaces/ui/static/vendor/ (git-ignored): `npm ci` of the pinned
# hello_memory/interfaces/ui/npm/package-lock.json in a temporary folder, install scripts off,
# then the distributed files copied over. Nothing is loaded from a CDN at run time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/hello_memory/interfaces/ui/npm
out=$root/hello_memory/interfaces/ui/static/vendor
command -v npm >/dev/null || { echo "ui-assets: npm is needed (Debian: apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/package.json" "$src/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
nm=$tmp/node_modules
rm -rf "$out.new" && mkdir -p "$out.new/cytoscape" "$out.new/swagger-ui"
cp "$nm/cytoscape/dist/cytoscape.min.js" "$nm/cytoscape/LICENSE" "$out.new/cytoscape/"
for f in swagger-ui-bundle.js swagger-ui.css favicon-32x32.png LICENSE NOTICE; do
  cp "$nm/swagger-ui-dist/$f" "$out.new/swagger-ui/"
done
{
  echo "# bundled by scripts/ui-assets.sh from hello_memory/interfaces/ui/npm/package-lock.json"
  for p in cytoscape swagger-ui-dist; do
    node -e "const p=require('$nm/$p/package.json'); console.log(p.name + ' ' + p.version + ' ' + p.license)"
  done
} > "$out.new/VERSIONS.txt"
rm -rf "$out" && mv "$out.new" "$out"
echo "ui-assets: $(tail -n +2 "$out/VERSIONS.txt" | tr '\n' ';') into ${out#"$root"/}"
