#!/usr/bin/env bash
# SSSP on the GPU against Gardenia's GPU SSSP solvers (github.com/chenxuhao/gardenia) on the
# very graphs asym searched, same machine run: asym's device rows (`sssp --mode gpu`: the
# frontier search, the heap-ordered search and near-far delta-stepping) write each graph as a
# DIMACS .gr file in the numbering they searched, and each Gardenia solver (built here by
# scripts/build-gardenia-peer.sh) searches that file from the same source, every answer
# checked against Dijkstra; dstep gets asym's automatic bucket width.
#
#   GARDENIA=gardenia.tar.gz bash scripts/sssp-vs-gpu-peers.sh [BINDIR] [OUTDIR] [-- sssp flags]
#
# GARDENIA: what scripts/pack-gardenia.sh makes (the GPU machine has no network). BINDIR:
# the asym binaries (default target/release). OUTDIR (default /tmp/sssp-vs-gpu-peers) gets
# asym.jsonl, gardenia.jsonl and build.log. GRAPHS (default all four) picks among geo-bfs,
# geo-given (the road-like geometric graph of 4,194,304 vertices) and kron-bfs, kron-given
# (Kronecker, scale 22); REPEAT (default 5) sets the searches per row on both sides.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
out=${2:-/tmp/sssp-vs-gpu-peers}
shift $(($# < 2 ? $# : 2))
[[ ${1:-} == -- ]] && shift
: "${GARDENIA:?set GARDENIA to the tarball scripts/pack-gardenia.sh makes}"
graphs=${GRAPHS:-geo-bfs geo-given kron-bfs kron-given}
repeat=${REPEAT:-5}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source scripts/nvidia-icd.sh
register_nvidia_icd sssp-vs-gpu-peers.sh
# The peers compile (a minute or two) while asym runs.
bash scripts/build-gardenia-peer.sh "$GARDENIA" "$tmp/peer" >"$out/build.log" 2>&1 &
build=$!
: >"$out/asym.jsonl"
: >"$out/gardenia.jsonl"
declare -A graph_of=([geo-bfs]="--gen geo --n 4194304" [geo-given]="--gen geo --n 4194304 --vertex-order given"
    [kron-bfs]="--scale 22" [kron-given]="--scale 22 --vertex-order given")
built=
for name in $graphs; do
    [[ -n ${graph_of[$name]:-} ]] || { echo "sssp-vs-gpu-peers: no graph $name" >&2; exit 2; }
    # shellcheck disable=SC2086 # the graph's flags are words
    "$bin/sssp" --device nvidia --mode gpu --threads "$(nproc)" ${graph_of[$name]} \
        --repeat "$repeat" --save-graph "$tmp/$name.gr" --save-graph-order searched --json "$@" |
        sed "s/^{/{\"peer_graph\":\"$name\",/" >"$tmp/asym.jsonl"
    cat "$tmp/asym.jsonl" >>"$out/asym.jsonl"
    source=$(grep -o '"source_searched":[0-9]*' "$tmp/asym.jsonl" | head -1 | cut -d: -f2)
    delta=$(grep '"order":"delta"' "$tmp/asym.jsonl" | head -1 | grep -o '"delta":[0-9]*' | cut -d: -f2)
    if [[ -z $built ]]; then
        wait "$build" || { cat "$out/build.log" >&2; exit 1; }
        built=1
    fi
    for peer in "$tmp"/peer/gardenia_*; do
        timeout 300 "$peer" "$tmp/$name.gr" "$source" --repeat "$repeat" --delta "${delta:-1}" \
            --variant "$(basename "$peer")" | sed "s/^{/{\"peer_graph\":\"$name\",/" >>"$out/gardenia.jsonl" ||
            echo "sssp-vs-gpu-peers: $(basename "$peer") on $name failed or ran past 300 s" >&2
    done
    rm -f "$tmp/$name.gr"
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = {}  # graph -> row name -> {"ms": [...], "ok": bool}
def add(graph, name, ms, ok):
    row = rows.setdefault(graph, {}).setdefault(name, {"ms": [], "ok": True})
    row["ms"].append(ms)
    row["ok"] = row["ok"] and ok
for line in open(f"{out}/asym.jsonl"):
    r = json.loads(line)
    if r.get("mode") == "gpu":
        add(r["peer_graph"], f"asym {r['order']}", r["ms"], r["verified"])
for line in open(f"{out}/gardenia.jsonl"):
    r = json.loads(line)
    add(r["peer_graph"], r["variant"], r["ms"], r["verified"])
for graph, by_name in rows.items():
    print(graph)
    for name, row in by_name.items():
        ms = row["ms"]
        print(f"  {name:28} median {statistics.median(ms):10.2f} ms  min {min(ms):10.2f}  verified {row['ok']}")
PY
