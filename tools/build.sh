#!/usr/bin/env bash
# Builds the real nomad and consul binaries Caravan's e2e tests start, and the
# staticcheck `make lint` runs, from the modules pinned in tools/nomad,
# tools/consul and tools/lint. Binaries are cached by version
# outside the clone (a fresh clone on the same machine reuses them, as Go's own
# build cache is reused) and linked into .tools/bin. The first build takes
# several minutes per binary.
#
# Usage: tools/build.sh [nomad] [consul] [staticcheck]   (all when none given)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/caravan/tools"
bin="$root/.tools/bin"

# consul-awsauth's pseudo-version is missing from the checksum database; its
# hash is pinned in tools/consul/go.sum instead.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/hashicorp/consul-awsauth"
export GOFLAGS="${GOFLAGS:-} -mod=mod -buildvcs=false"

# build MODULE_DIR BINARY PACKAGE
build() {
	local dir="$root/tools/$1" name=$2 pkg=$3 version sum out
	version=$(cd "$dir" && go list -f '{{.Module.Version}}' "$pkg")
	# The go.sum hash keys the cache too: a changed dependency rebuilds.
	sum=$(sha256sum "$dir/go.sum" | cut -c1-12)
	out="$cache/$name-$version-$sum/$name"
	if [ ! -x "$out" ]; then
		echo "tools: building $name $version into $out (takes minutes the first time)" >&2
		mkdir -p "$(dirname "$out")"
		(cd "$dir" && go build -trimpath -o "$out.tmp" "$pkg")
		mv "$out.tmp" "$out"
	fi
	mkdir -p "$bin"
	ln -sfn "$out" "$bin/$name"
	echo "tools: $bin/$name -> $name $version" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(nomad consul staticcheck)
for t in "${targets[@]}"; do
	case "$t" in
	nomad) build nomad nomad github.com/hashicorp/nomad ;;
	consul) build consul consul github.com/hashicorp/consul ;;
	staticcheck) build lint staticcheck honnef.co/go/tools/cmd/staticcheck ;;
	*) echo "tools: unknown tool $t" >&2; exit 2 ;;
	esac
done
