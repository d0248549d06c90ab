#!/bin/bash
# Issue 33's cases (samples/repro/gpu_nccl_groups.py) on real NCCL: 4 ranks as four fake nodes on one GPU,
# four `tracekit run` (defaults) into one run folder, each over `torchrun --nnodes=4 --nproc_per_node=1`,
# NCCL_HOSTID per node, P2P/SHM/IB off: NCCL goes through NET/Socket on lo as between hosts.
# One tar.gz per case in $OUT: gpu_nccl_<case>.tar.gz holding <case>/run, console.node*.txt, fault.txt.
# Usage: bash samples/repro/gpu_nccl_groups.sh [CASE ...]   (subgroup newgroup alltoall)
set -u
OUT=${OUT:-/tmp/gpu_out}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
W=$REPO/.device/wheels
if [ -d "$W" ] && ! python3 -c 'import polars, perfetto' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps "$W"/*.whl 2>&1 | tail -2
fi
export PYTHONPATH=$REPO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
export TK_TIMEOUT_S=${TK_TIMEOUT_S:-45}
KEEP=/tmp/tk_groups; rm -rf "$KEEP"; port=29640
for case in ${@:-subgroup newgroup alltoall}; do
  d=$KEEP/$case; mkdir -p "$d"; port=$((port + 1))
  for node in 0 1 2 3; do
    TK_CASE=$case TK_FAULT_FILE=$d/fault.txt NCCL_HOSTID=fakenode$node timeout 150 \
      python3 -m tracekit.cli run --quiet --out "$d/run" -- \
      torchrun --nnodes=4 --node_rank=$node --nproc_per_node=1 --master_addr=127.0.0.1 --master_port=$port \
      "$REPO/samples/repro/gpu_nccl_groups.py" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%3N)" "$line"; done \
      > "$d/console.node$node.txt" &
  done
  wait
  echo "== $case: fault $(cat "$d/fault.txt" 2>/dev/null)"; grep -h "tracekit: verdict" "$d"/console.node*.txt | sort | head -4
  (cd "$KEEP" && tar czf "$OUT/gpu_nccl_$case.tar.gz" "$case")
done
ls -la "$OUT"
