#!/usr/bin/env bash
# Builds Caravan's web UI (ui/src, a Preact app with uPlot charts) into
# ui/dist, which is committed and embedded in the binary (package ui), so
# that `go build` needs no Node.js. The npm packages are those
# ui/package-lock.json pins, installed with `npm ci` from the npm registry.
#
# Usage: tools/ui.sh build   rebuild ui/dist
#        tools/ui.sh check   rebuild, and fail if ui/dist differs from what is committed
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/ui"

build() {
	if ! command -v npm >/dev/null 2>&1; then
		echo "ui: building the UI needs Node.js 20.19+ and npm (Debian: apt-get install nodejs npm)" >&2
		exit 1
	fi
	npm ci --no-audit --no-fund --loglevel=error
	npm run --silent build
}

case "${1:-build}" in
build) build ;;
check)
	build >/dev/null
	if [ -n "$(git -C "$root" status --porcelain -- ui/dist)" ]; then
		git -C "$root" status --short -- ui/dist >&2
		echo "ui: ui/dist is not what ui/src builds: run make ui and commit ui/dist" >&2
		exit 1
	fi
	echo "ui: ui/dist is up to date" >&2
	;;
*) echo "usage: tools/ui.sh build|check" >&2; exit 2 ;;
esac
