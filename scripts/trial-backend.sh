#!/usr/bin/env bash
# trial-backend.sh adds a trial backend that reuses a generated API (CUDA)
# under a name of its own to a scratch copy of the tree, the way
# docs/design/architecture.md says, and checks that it runs a spec kernel and that
# the addition touched the files the doc counts (4):
#   tuner/trial/backend.go                  the backend (new)
#   cmd/kerntune/backends.go                its blank import
#   params/families/families.go             its space kind (SpaceKind)
#   python/kerntune_params/families.py      the same for the Python loader
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$tmp"
cd "$tmp"
git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm base

mkdir -p tuner/trial
cp scripts/testdata/trialbackend/backend.go tuner/trial/backend.go
sed -i 's|\t_ "github.com/kerntune/kerntune/tuner/opencl"|&\n\t_ "github.com/kerntune/kerntune/tuner/trial"|' cmd/kerntune/backends.go
sed -i 's|case "cuda", "metal", "opencl", "gpu":|case "cuda", "metal", "opencl", "trial", "gpu":|' params/families/families.go
sed -i 's|backend in ("cuda", "metal", "opencl", "gpu")|backend in ("cuda", "metal", "opencl", "trial", "gpu")|' python/kerntune_params/families.py

files=$(git status --porcelain --untracked-files=all | wc -l)
git status --porcelain --untracked-files=all
[ "$files" -le 4 ] || { echo "trial backend: $files files, want at most 4" >&2; exit 1; }
grep -q tuner/trial cmd/kerntune/backends.go && grep -q '"trial"' params/families/families.go && grep -q '"trial"' python/kerntune_params/families.py ||
	{ echo "trial backend: an edit did not apply" >&2; exit 1; }

go build -o kerntune ./cmd/kerntune
out=$(./kerntune check --spec examples/swiglu.json --backend trial --sample 16)
echo "$out" | grep -E 'on trial:0'
if grep -q skipped <<<"$out"; then
	echo "trial backend: the spec kernel was skipped" >&2
	exit 1
fi
echo "trial backend: $files files; check ran the spec kernel on it"
