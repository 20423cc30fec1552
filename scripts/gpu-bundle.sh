#!/usr/bin/env bash
# Builds the release examples and bench binaries here and stages them in .gpu/bin (ignored
# by git), with the commit they were built from in .gpu/COMMIT, for a machine that has a GPU
# but no Rust toolchain. The staged binaries are stripped (about 26 MiB in all).
#
# Then, on the GPU machine, from a copy of this working tree with .gpu beside it:
#   bash scripts/bench.sh --full --bin .gpu/bin --device nvidia --threads 16 --out OUTDIR
#   .gpu/bin/batch_kselect --device nvidia --json          # any example, by hand
#   .gpu/bin/bench-kselect --bench                          # a criterion bench
# (bench.sh registers NVIDIA's OpenCL driver with the ICD loader where only PoCL is listed.)
# Extra arguments go to cargo (for example --features X).
#
# With GPU_PYTHON=/path/to/pythonX.Y (the GPU machine's Python version, here from pyenv) it
# also builds the Python package's wheel for that interpreter into .gpu/wheels; there:
#   python3 -m pip install --no-deps --target /tmp/asym-py .gpu/wheels/*.whl
#   PYTHONPATH=/tmp/asym-py python3 python/benchmarks/bench.py --device nvidia ...
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rm -rf .gpu
mkdir -p .gpu/bin
cargo build --release --bins "$@"
for b in batch_kselect heap_bench sssp knapsack list_ops rbtree devices soak; do
  cp "target/release/$b" .gpu/bin/
done
cargo bench --no-run --message-format=json "$@" 2>/dev/null | python3 -c '
import json, os, shutil, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        shutil.copy2(m["executable"], os.path.join(".gpu/bin", "bench-" + m["target"]["name"]))
'
if [[ -n ${GPU_PYTHON:-} ]]; then
  mkdir -p .gpu/wheels
  .venv/bin/python -m pip install -q --disable-pip-version-check maturin
  (cd python && ../.venv/bin/maturin build --release -q --auditwheel skip -i "$GPU_PYTHON" --out ../.gpu/wheels)
fi
# Release builds keep debug info (profile.release debug = 1): strip the staged copies.
strip --strip-all .gpu/bin/* 2>/dev/null || true
git rev-parse --short HEAD >.gpu/COMMIT 2>/dev/null || echo unknown >.gpu/COMMIT
if ! git diff --quiet HEAD 2>/dev/null; then
  echo "gpu-bundle: the working tree has uncommitted changes; figures will name $(cat .gpu/COMMIT)+dirty" >&2
  echo "$(cat .gpu/COMMIT)+dirty" >.gpu/COMMIT
fi
du -sh .gpu
ls .gpu/bin
