#!/usr/bin/env bash
# Build the client-go reference program into .cache/clientgo/<client-go version>/clientgo
# (git-ignored) and print the binary's path. With the binary present and newer than the
# sources it only prints the path: a second build takes no time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# The version key is the one go.mod pins, so that a bump builds afresh beside the old one.
version=$(awk '$1 == "k8s.io/client-go" { print $2 }' "$here/go.mod")
[ -n "$version" ] || { echo "clientgo: error: $here/go.mod does not require k8s.io/client-go" >&2; exit 1; }
out="$root/.cache/clientgo/$version/clientgo"
fresh=1
for src in "$here/main.go" "$here/go.mod" "$here/go.sum"; do
    [ -x "$out" ] && [ "$out" -nt "$src" ] || fresh=0
done
if [ "$fresh" = 1 ]; then
    echo "$out"
    exit 0
fi
command -v go >/dev/null || { echo "clientgo: error: Go is not installed (Go >= 1.26 and the Go module proxy are needed)" >&2; exit 1; }
echo "clientgo: building with k8s.io/client-go $version (a cold build takes a minute or two)" >&2
mkdir -p "$(dirname "$out")"
# -mod=readonly: go.sum decides every module's content; a missing entry is an error, not a
# silent update. Go's own caches stay where Go keeps them, outside the repository.
(cd "$here" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "$out"
