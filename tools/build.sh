#!/usr/bin/env bash
# Builds the real nomad and consul binaries Caravan's e2e tests start, the
# fakegpu device plugin they load into Nomad clients, and the staticcheck
# `make lint` runs, from the modules pinned in tools/nomad, tools/consul,
# e2e/fakegpu and tools/lint. Binaries are cached by version (fakegpu by its
# sources) outside the clone (a fresh clone on the same machine reuses them,
# as Go's own build cache is reused) and linked into .tools/bin. The first
# build takes several minutes per binary.
#
# The glpk target installs GLPK's glpsol, the MILP solver of the dorm
# algorithm, from the system's packages (Debian/Ubuntu: glpk-utils) when it
# is not on the PATH already.
#
# The previous target builds `caravan` itself as it was at the previous
# release, the commit pinned in tools/previous-release, into
# .tools/bin/caravan-previous, for the rolling-upgrade test
# (chaos.TestChaos_RollingUpgrade). It exports that commit's tree from this
# clone's Git history (a shallow clone lacks it: fetch it first) and builds
# it with the GNUmakefile's ldflags, so that the binary says which commit
# it is, and -trimpath, so that the same commit gives the same binary.
#
# The chromium target installs Debian's Chromium, the headless browser the
# UI's tests (ui/browser_test.go) and `make screenshots` drive, when
# /usr/bin/chromium (or $CARAVAN_CHROMIUM) is missing.
#
# The torch target installs Debian's PyTorch (python3-torch, with torchrun
# and the gloo backend) and scikit-learn (python3-sklearn, for its digits
# data set) when /usr/bin/python3 cannot import them: the PyTorch helper's
# and examples/pytorch-ddp's tests run real torchrun on CPU.
#
# Usage: tools/build.sh [nomad] [consul] [fakegpu] [staticcheck] [previous] [glpk] [chromium] [torch]   (all when none given)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/caravan/tools"
bin="$root/.tools/bin"

# consul-awsauth's pseudo-version is missing from the checksum database; its
# hash is pinned in tools/consul/go.sum instead.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/hashicorp/consul-awsauth"
export GOFLAGS="${GOFLAGS:-} -mod=mod -buildvcs=false"

# build MODULE_DIR BINARY PACKAGE [SOURCE...]
build() {
	local dir="$root/$1" name=$2 pkg=$3 version sum out
	shift 3
	# A package of the module itself (fakegpu) has no version: call it dev.
	version=$(cd "$dir" && go list -f '{{or .Module.Version "dev"}}' "$pkg")
	# The go.sum hash keys the cache too: a changed dependency rebuilds. So
	# does a changed SOURCE, for a binary built from this repository.
	sum=$(cat "$dir/go.sum" "$@" | sha256sum | cut -c1-12)
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

# previous builds the release pinned in tools/previous-release, cached by
# its tag and commit.
previous() {
	local tag commit out tmp
	read -r tag commit < <(grep -v '^#' "$root/tools/previous-release")
	if [ -z "$commit" ]; then
		echo "tools: tools/previous-release names no commit" >&2
		exit 1
	fi
	out="$cache/caravan-$tag-$commit/caravan"
	if [ ! -x "$out" ]; then
		if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
			echo "tools: commit $commit ($tag) is not in this clone's history: git fetch --unshallow, or git fetch origin $commit" >&2
			exit 1
		fi
		echo "tools: building caravan $tag ($commit) into $out (takes minutes the first time)" >&2
		mkdir -p "$(dirname "$out")"
		tmp=$(mktemp -d)
		(
			trap 'rm -rf "$tmp"' EXIT
			git -C "$root" archive "$commit" | tar -x -C "$tmp"
			# The GNUmakefile's build: version.GitCommit is the short commit
			# (seven digits here, however many `git rev-parse --short` would
			# print in this clone, so that every clone builds the same binary).
			cd "$tmp"
			GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
				-ldflags "-X github.com/caravan-sched/caravan/version.GitCommit=${commit:0:7}" \
				-o "$out.tmp" ./cmd/caravan
		)
		mv "$out.tmp" "$out"
	fi
	mkdir -p "$bin"
	ln -sfn "$out" "$bin/caravan-previous"
	echo "tools: $bin/caravan-previous -> caravan $tag ($commit)" >&2
}

# apt_install PACKAGE WHAT installs a Debian package with apt-get (as
# root, or through sudo), updating the package lists first if they do not
# know it.
apt_install() {
	local pkg=$1 what=$2 sudo=
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "tools: $what is missing: install $pkg with your package manager" >&2
		exit 1
	fi
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "tools: installing $pkg ($what)" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >&2 ||
		{ $sudo apt-get update >&2 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >&2; }
}

# glpk installs glpsol unless it is on the PATH.
glpk() {
	if command -v glpsol >/dev/null 2>&1; then
		echo "tools: glpsol $(glpsol --version | head -1 | awk '{print $NF}') at $(command -v glpsol)" >&2
		return
	fi
	apt_install glpk-utils "GLPK's glpsol, dorm's MILP solver"
	command -v glpsol >/dev/null 2>&1 || { echo "tools: glpsol is still missing" >&2; exit 1; }
}

# chromium installs Debian's Chromium unless it is there.
chromium() {
	local exe=${CARAVAN_CHROMIUM:-/usr/bin/chromium}
	if [ ! -x "$exe" ]; then
		apt_install chromium "the headless browser of the UI's tests"
	fi
	[ -x "$exe" ] || { echo "tools: $exe is still missing" >&2; exit 1; }
	echo "tools: $("$exe" --version 2>/dev/null | head -1) at $exe" >&2
}

# torch installs Debian's PyTorch and scikit-learn unless /usr/bin/python3
# imports them already.
torch() {
	local py=/usr/bin/python3 mod pkg
	for mod in torch:python3-torch sklearn:python3-sklearn; do
		pkg=${mod#*:}
		mod=${mod%%:*}
		if ! "$py" -c "import $mod" >/dev/null 2>&1; then
			apt_install "$pkg" "the $mod module of the PyTorch example's tests"
		fi
		"$py" -c "import $mod" >/dev/null 2>&1 || { echo "tools: $py still cannot import $mod" >&2; exit 1; }
	done
	echo "tools: $("$py" -c 'import sklearn, torch; print("torch", torch.__version__, "and scikit-learn", sklearn.__version__)') for $py" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(nomad consul fakegpu staticcheck previous glpk chromium torch)
for t in "${targets[@]}"; do
	case "$t" in
	nomad) build tools/nomad nomad github.com/hashicorp/nomad ;;
	consul) build tools/consul consul github.com/hashicorp/consul ;;
	fakegpu)
		mapfile -t srcs < <(find "$root/e2e/fakegpu" -name '*.go' ! -name '*_test.go' | LC_ALL=C sort)
		build e2e/fakegpu fakegpu github.com/caravan-sched/caravan/e2e/fakegpu \
			"$root/e2e/fakegpu/go.mod" "${srcs[@]}"
		;;
	staticcheck) build tools/lint staticcheck honnef.co/go/tools/cmd/staticcheck ;;
	previous) previous ;;
	glpk) glpk ;;
	chromium) chromium ;;
	torch) torch ;;
	*) echo "tools: unknown tool $t" >&2; exit 2 ;;
	esac
done
