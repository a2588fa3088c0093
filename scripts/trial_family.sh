#!/usr/bin/env bash
# Adds a trial family, triple (y = 3·x over n elements), to a scratch copy
# of the tree the way docs/design/architecture.md says: one new folder,
# family/triple, made from the example family's (family/twice: its
# description, catalog entry and reference, GPU body, CPU kernel and mutant),
# and one import line in family/all:
#
#   family/triple/triple.json   its description: dims, classes, parameters, constraints
#   family/triple/triple.go     everything else, registered from init
#   family/all/all.go           its import
#
# and checks that the tree builds, that the tests holding every layer to the
# families pass, that `kerntune kernels` lists it, that it tunes on the CPU,
# and that the Go loader (`kerntune get`) and the Python loader resolve the
# tuned entry alike. Run from anywhere: scripts/trial_family.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	if [ -e "$f" ] || [ -L "$f" ]; then cp -P --parents "$f" "$tree/"; fi
done)
cd "$tree"
git init -q && git add -A && git -c user.name=trial -c user.email=trial@invalid commit -qm base

mkdir -p family/triple
derive='s/twice/triple/g; s/Twice/Triple/g; s/2·x/3·x/g; s/2 \* /3 * /g; s/2\.0f \* /3.0f * /g; s/the example of a family that lives in one folder/a trial family/'
sed "$derive" family/twice/twice.json > family/triple/triple.json
sed "$derive" family/twice/twice.go > family/triple/triple.go
sed -i 's|\t_ "github.com/kerntune/kerntune/family/twice"|&\n\t_ "github.com/kerntune/kerntune/family/triple"|' family/all/all.go
grep -q '3 \* float64' family/triple/triple.go || { echo "FAIL: the derived family does not compute 3·x" >&2; exit 1; }

changed=$(git status --porcelain)
echo "$changed"
[ "$changed" = "$(printf ' M family/all/all.go\n?? family/triple/')" ] ||
	{ echo "FAIL: the addition is not one new folder and one import line" >&2; exit 1; }

go build -o "$tmp/kerntune" ./cmd/kerntune
go vet ./family/... ./params/...
go test -count=1 ./family/... ./scripts/archcheck
go test -count=1 ./params/... -run 'TestFamilyConformance|TestPythonBuiltinFamilies|TestBuiltinDefaultsValid'
go test -count=1 ./tuner -run 'TestMutantsAreRejected'

"$tmp/kerntune" kernels | grep "^triple "
hp=$tmp/hardware_params.json
"$tmp/kerntune" tune --backend cpu --kernel triple --shape 100000 --budget 6e --out "$hp" -q
go_json=$("$tmp/kerntune" get --kernel triple --shape 100000 --params "$hp" --json)
echo "Go loader:     $go_json"
py_json=$(PYTHONPATH="$tree/python" python3 -c '
import json, sys, kerntune_params as kp
r = kp.load(path=sys.argv[1]).resolve("triple", "f32", (100000,))
print(json.dumps({n: [r[n], r.params[n].source] for n in ("CHUNK", "THREADS")}))' "$hp")
echo "Python loader: $py_json"
python3 - "$go_json" "$py_json" <<'EOF'
import json, sys
g, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert set(p) == set(g["params"]), (p, g["params"])
for name, (value, source) in p.items():
    assert source.startswith("file:"), f"{name} resolved from {source}, not the tuned file"
    want = {"value": value, "source": source}
    assert g["params"][name] == want, f"{name}: Go {g['params'][name]}, Python {want}"
print("trial family triple: one folder and one import line; built, listed, tuned on the CPU, resolved alike by both loaders")
EOF
