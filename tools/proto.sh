#!/usr/bin/env bash
# Regenerates the Go code of plugins/algorithm/proto/v1 from its .proto
# with protoc (Debian's protobuf-compiler; installed when missing and
# running as root) and the protoc-gen-go and protoc-gen-go-grpc versions
# pinned here, built into .tools/bin. The generated code is committed:
# building Caravan needs none of this.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.tools/bin"
mkdir -p "$bin"
if ! command -v protoc >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq protobuf-compiler
	else
		echo "proto: protoc is missing; install Debian's protobuf-compiler" >&2
		exit 1
	fi
fi
GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN="$bin" go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
cd "$root/plugins/algorithm/proto/v1"
PATH="$bin:$PATH" protoc --go_out=paths=source_relative:. --go-grpc_out=paths=source_relative:. algorithm.proto
echo "proto: regenerated plugins/algorithm/proto/v1 with $(protoc --version)" >&2
