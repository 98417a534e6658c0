#!/usr/bin/env bash
# A real Kubernetes control plane for the test suite, built from the Go module proxy alone.
#
#   scripts/control-plane.sh build        build etcd, kube-apiserver, kube-scheduler, kubectl,
#                                         KWOK and helm into .cache/control-plane/<k8s>/bin
#   scripts/control-plane.sh start DIR    start them on loopback; returns once /readyz answers,
#                                         with DIR/kubeconfig (admin) and DIR/pids written
#   scripts/control-plane.sh stop DIR     end exactly the processes that start recorded
#   scripts/control-plane.sh bin          print the folder that holds the binaries
#
# Kubernetes' own module (k8s.io/kubernetes) maps its staging modules (k8s.io/api, ...) to
# folders inside its repository, so `go install` refuses it. The build writes a small wrapper
# module that pins each of them to the published v0.<minor>.<patch>, the list read from
# k8s.io/kubernetes' own go.mod, so that it cannot drift from the release it builds. etcd's
# server module has replace directives too and gets a three-line wrapper. KWOK and helm
# install as they are. Go's module and build caches stay where Go keeps them (outside the
# repository); the binaries go in the git-ignored, version-keyed cache folder.
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.17
KWOK_VERSION=v0.8.0
HELM_VERSION=v4.3.2

CACHE="$PWD/.cache/control-plane/$K8S_VERSION"
BIN="$CACHE/bin"
BINARIES=(etcd kube-apiserver kube-scheduler kubectl kwok helm)

say() { echo "control-plane: $*" >&2; }
die() { echo "control-plane: error: $*" >&2; exit 1; }

need_go() {
    command -v go >/dev/null || die "Go is not installed; the real control plane is built \
from Go modules (Go >= 1.26 and the Go module proxy are needed)"
}

# Go's chatter (every module downloaded) goes to a log shown only when a step fails; go's
# own error there names the module and version the proxy refused or that did not compile.
run_go() {
    local what=$1; shift
    if ! "$@" >>"$CACHE/build.log" 2>&1; then
        tail -n 40 "$CACHE/build.log" >&2
        die "building $what failed (the lines above, from $CACHE/build.log, name the \
module and version)"
    fi
}

build_kube() {
    local src="$CACHE/src/kube" minor=${K8S_VERSION#v1.}
    local staging_version="v0.$minor"
    mkdir -p "$src"
    say "resolving k8s.io/kubernetes@$K8S_VERSION and its staging modules"
    local gomod
    gomod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("GoMod") or "")') ||
        die "the Go module proxy did not serve k8s.io/kubernetes@$K8S_VERSION"
    [ -n "$gomod" ] || die "the Go module proxy did not serve k8s.io/kubernetes@$K8S_VERSION"
    {
        echo "module topology-labeler.local/kube-wrapper"
        echo
        echo "go 1.26.0"
        echo
        echo "require k8s.io/kubernetes $K8S_VERSION"
        echo
        go mod edit -json "$gomod" | python3 -c '
import json, sys
staging = sys.argv[1]
for r in json.load(sys.stdin).get("Replace") or []:
    old, new = r["Old"]["Path"], r["New"]["Path"]
    if new.startswith("./staging/"):
        print("replace", old, "=>", old, staging)
' "$staging_version"
    } >"$src/go.mod"
    local pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler
                k8s.io/kubernetes/cmd/kubectl)
    (cd "$src" && run_go "the Kubernetes wrapper module" go get "${pkgs[@]/%/@$K8S_VERSION}")
    local date ldflags="-s -w" pkg
    date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1"
        ldflags+=" -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
        ldflags+=" -X $pkg.buildDate=$date"
    done
    say "compiling kube-apiserver, kube-scheduler, kubectl $K8S_VERSION (minutes when cold)"
    (cd "$src" && run_go "kube-apiserver, kube-scheduler, kubectl" \
        go build -ldflags "$ldflags" -o "$BIN/" "${pkgs[@]}")
}

build_etcd() {
    local src="$CACHE/src/etcd"
    mkdir -p "$src"
    cat >"$src/main.go" <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
    printf 'module topology-labeler.local/etcd-wrapper\n\ngo 1.26.0\n' >"$src/go.mod"
    say "compiling etcd $ETCD_VERSION"
    (cd "$src" && run_go "etcd" go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" &&
        run_go "etcd" go mod tidy && run_go "etcd" go build -ldflags "-s -w" -o "$BIN/etcd" .)
}

build_installable() {  # name module@version
    say "compiling $1 ${2#*@}"
    GOBIN="$BIN" run_go "$1" go install -ldflags "-s -w" "$2"
}

built() {
    local b
    for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done
}

cmd_build() {
    if built; then
        say "binaries present in ${BIN#"$PWD/"}"
        return
    fi
    need_go
    mkdir -p "$BIN"
    : >"$CACHE/build.log"
    local start=$SECONDS
    [ -x "$BIN/etcd" ] || build_etcd
    [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-scheduler" ] && [ -x "$BIN/kubectl" ] ||
        build_kube
    [ -x "$BIN/kwok" ] || build_installable kwok "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
    [ -x "$BIN/helm" ] || build_installable helm "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
    say "built in $((SECONDS - start)) s into ${BIN#"$PWD/"}"
}

case "${1:-}" in
    build) cmd_build ;;
    bin) echo "$BIN" ;;
    start | stop)
        [ -n "${2:-}" ] || die "usage: $0 $1 DIR"
        [ "$1" = stop ] || cmd_build
        PY=python3
        [ -x .venv/bin/python ] && PY=.venv/bin/python
        exec "$PY" -m tests.realkube.controlplane "$1" "$2" --bin "$BIN" ;;
    *) die "usage: $0 build | start DIR | stop DIR | bin" ;;
esac
