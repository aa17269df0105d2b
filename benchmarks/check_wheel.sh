#!/usr/bin/env bash
# A user's install, checked end to end: a wheel built from a clean clone of the committed HEAD,
# installed with `pip install 'coalign[local]'` into a fresh venv outside the repository, then
# `coalign --version` and `coalign evaluate` on the generated world run from an unrelated folder
# (no checkout nearby, no COALIGN_DATA_DIR). Writes a JSON summary (default
# benchmarks/results/wheel_install.json).
#
#   bash benchmarks/check_wheel.sh [OUT.json]
#   PYTHON=python3.12 EXTRA= bash benchmarks/check_wheel.sh OUT.json   # the core install alone
#
# With [local] it compiles llama-cpp-python (~8 minutes on 2 cores) with the Makefile's portable
# flags. With EXTRA empty (no torch, no local model) the evaluation replays the committed table
# fixture instead, reading its questions from ../shared/data.
set -euo pipefail

repo=$(git rev-parse --show-toplevel)
out=$(realpath -m "${1:-$repo/benchmarks/results/wheel_install.json}")
python=${PYTHON:-python3}
extra=${EXTRA-local}
work=$(mktemp -d /tmp/coalign-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)

git clone --quiet "$repo" "$work/clone"
commit=$(git -C "$work/clone" rev-parse HEAD)
cp -r "$work/clone/tests/fixtures/tables/multihop_qa_8q" "$work/table"
"$python" -m venv "$work/venv"
pip="$work/venv/bin/python -m pip"
$pip install -q --upgrade "pip>=24"
$pip wheel -q --no-deps -w "$work/dist" "$work/clone"
wheel=$(ls "$work"/dist/coalign-*.whl)
rm -rf "$work/clone"  # from here on, no checkout exists

t1=$(date +%s)
if [ -n "$extra" ]; then
  # the CPU build of torch first (an unpinned torch resolves to a CUDA build), as the README says
  $pip install -q torch==2.13.0
  t1=$(date +%s)
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
-DGGML_F16C=ON" $pip install -q --no-cache-dir "${wheel}[${extra}]"
else
  $pip install -q "$wheel"
fi
t2=$(date +%s)

mkdir "$work/user" && cd "$work/user"
unset COALIGN_DATA_DIR
version=$("$work/venv/bin/coalign" --version)
if [ -n "$extra" ]; then
  "$work/venv/bin/coalign" evaluate multihop_qa --data world --limit 4 --workers 1 \
    --run-dir "$work/user/runs" --json "$work/user/eval.json" | tail -n 5
else
  COALIGN_DATA_DIR="$repo/../shared/data" "$work/venv/bin/coalign" evaluate multihop_qa \
    --data hotpotqa --lm "replay:$work/table" --limit 4 --run-dir "$work/user/runs" \
    --json "$work/user/eval.json" | tail -n 5
fi
t3=$(date +%s)

"$work/venv/bin/python" - "$out" "$commit" "$(basename "$wheel")" "$version" \
  "$work/user/eval.json" $((t2 - t1)) $((t3 - t2)) $((t3 - t0)) "$extra" <<'PY'
import json, platform, sys
out, commit, wheel, version, summary, install_s, eval_s, total_s, extra = sys.argv[1:]
result = {"commit": commit, "wheel": wheel, "python": platform.python_version(),
          "extra": extra or None, "version_output": version, "install_local_s": int(install_s),
          "evaluate_s": int(eval_s), "total_s": int(total_s),
          "evaluate": json.load(open(summary))}
open(out, "w").write(json.dumps(result, indent=2) + "\n")
print(f"wrote {out}")
PY
