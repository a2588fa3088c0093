#!/usr/bin/env bash
# trial-backend.sh adds a trial backend that reuses a generated API (CUDA)
# under a name of its own to a scratch copy of the tree, the way
# docs/design/architecture.md says, and checks that it runs a spec kernel and that
# the addition touched the files the doc counts (2), that it tunes the spec
# kernel and that both loaders resolve the entry it wrote, with no table of
# backends edited (the device record says its space kind):
#   tuner/trial/backend.go                  the backend (new)
#   cmd/kerntune/backends.go                its blank import
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

files=$(git status --porcelain --untracked-files=all | wc -l)
git status --porcelain --untracked-files=all
[ "$files" -le 2 ] || { echo "trial backend: $files files, want at most 2" >&2; exit 1; }
grep -q tuner/trial cmd/kerntune/backends.go || { echo "trial backend: the import did not apply" >&2; exit 1; }

go build -o kerntune ./cmd/kerntune
out=$(./kerntune check --spec examples/swiglu.json --backend trial --sample 16)
echo "$out" | grep -E 'on trial:0'
if grep -q skipped <<<"$out"; then
	echo "trial backend: the spec kernel was skipped" >&2
	exit 1
fi
hp=$tmp/hardware_params.json
./kerntune tune --spec examples/swiglu.json --backend trial --isolate=false --shape 64x256 --budget 6e --out "$hp" -q
grep -q '"space": "gpu"' "$hp" || { echo "trial backend: its device record does not say its space kind" >&2; exit 1; }
go_json=$(./kerntune get --spec examples/swiglu.json --kernel swiglu --shape 64x256 --device trial:0 --params "$hp" --json)
py_json=$(PYTHONPATH="$tmp/python" python3 -c '
import json, sys, kerntune_params as kp
r = kp.load(path=sys.argv[1], device="trial:0", specs=[sys.argv[2]]).resolve("swiglu", "f32", (64, 256))
print(json.dumps({n: {"value": r[n], "source": r.params[n].source} for n in r.params}))' "$hp" examples/swiglu.json)
python3 - "$go_json" "$py_json" <<'EOF'
import json, sys
g, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert p == g["params"], f"Go {g['params']}, Python {p}"
assert all(v["source"].startswith("file:trial") for v in p.values()), p
EOF
echo "trial backend: $files files; check and tune ran the spec kernel on it; both loaders resolve its entry alike"
