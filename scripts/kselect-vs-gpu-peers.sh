#!/usr/bin/env bash
# Batch k-selection on keys resident on the GPU against the GPU peers, same keys, same run,
# on the GPU machine: asym's device radix (`batch_kselect --resident`), CUB's segmented
# sorts + a gather and CUB's DeviceBatchedTopK + a per-row max (scripts/peers/, built here
# by scripts/build-cub-peer.sh), and torch.kthvalue / torch.topk (scripts/torch_topk.py).
# 2^28 random int32 keys (torch_topk.py --write, seed 42), rows 2^11 .. 2^21, k = 0.1 * row.
#
#   CCCL=cccl.tar.gz bash scripts/kselect-vs-gpu-peers.sh [BINDIR] [OUTDIR] [-- batch_kselect flags]
#
# BINDIR holds the asym binaries (default target/release; scripts/gpu-bundle.sh stages
# them); OUTDIR (default /tmp/kselect-vs-gpu-peers) gets asym.jsonl, cub.jsonl, topk.jsonl,
# torch.jsonl and build.log. CCCL: newer CCCL headers for DeviceBatchedTopK
# (scripts/pack-cccl.sh); without it that peer is skipped. Without torch, so is torch.
# Registers NVIDIA's OpenCL driver with the ICD loader where only PoCL is listed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
out=${2:-/tmp/kselect-vs-gpu-peers}
shift $(($# < 2 ? $# : 2))
[[ ${1:-} == -- ]] && shift
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source scripts/nvidia-icd.sh
register_nvidia_icd kselect-vs-gpu-peers.sh
keys=$tmp/keys.npy
python3 scripts/torch_topk.py --write "$keys" --total-log2 28
# The peers compile (about a minute) while asym runs.
bash scripts/build-cub-peer.sh "$tmp/peer" >"$out/build.log" 2>&1 &
build=$!
: >"$out/asym.jsonl"
for log2 in 11 13 15 17 19 21; do
    "$bin/batch_kselect" --device nvidia --input "$keys" --sublist $((1 << log2)) --resident \
        --mode gpu --strategy radix --no-peers --repeat 5 --json "$@" |
        grep '"mode":"gpu:radix-resident"' >>"$out/asym.jsonl"
done
wait "$build" || { cat "$out/build.log" >&2; exit 1; }
"$tmp/peer/cub_kselect" "$keys" --repeat 5 >"$out/cub.jsonl"
if [[ -x $tmp/peer/cub_batched_topk ]]; then
    "$tmp/peer/cub_batched_topk" "$keys" --repeat 5 >"$out/topk.jsonl"
fi
if python3 -c "import torch" 2>/dev/null; then
    python3 scripts/torch_topk.py "$keys" >"$out/torch.jsonl"
fi
# One file in batch_kselect's --json shape ("mode" peer:<method>; "partial" marks CUB's top-k
# alone, which returns the k smallest but not yet the k-th), and a table.
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = []
for f in ("asym", "cub", "topk", "torch"):
    path = os.path.join(out, f + ".jsonl")
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        if "method" in r:
            r = {"mode": "peer:" + r["method"].replace("-", "_"), "sublist": r["sublist"],
                 "k": r["k"], "n": r["keys"], "ms": r["ms"], "min_ms": r["min_ms"],
                 "verified": r["verified"], "device": r["device"],
                 **({"partial": True} if r["method"].endswith("-only") else {})}
        rows.append(r)
with open(os.path.join(out, "kselect-gpu-peers.jsonl"), "w") as f:
    for r in rows:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
for length in sorted({r["sublist"] for r in rows}):
    got = sorted((r["mode"], r["ms"], r["verified"]) for r in rows if r["sublist"] == length)
    print(length, "  ".join(f"{m} {ms:.3f}{'' if ok else ' UNVERIFIED'}" for m, ms, ok in got))
PY
