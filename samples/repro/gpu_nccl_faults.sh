#!/bin/bash
# The five live_job.py faults on real NCCL, 4 ranks as two fake nodes of 2 ranks on one GPU, each under
# `tracekit run` with its defaults (two tracekit run, one per node, into one run folder), through
# benchmarks/detect_latency.py (it measures fault -> first verdict line). One tar.gz per scenario in $OUT:
# gpu_nccl_<scenario>.tar.gz holding <scenario>/run (the run folder), console.node*.txt, fault.txt, result.json.
# Usage: bash samples/repro/gpu_nccl_faults.sh [SCENARIO ...]   (wheels for polars, py-spy... in .device/wheels)
set -u
OUT=${OUT:-/tmp/gpu_out}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
W=$REPO/.device/wheels
if [ -d "$W" ] && ! python3 -c 'import polars, perfetto' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps "$W"/*.whl 2>&1 | tail -2
fi
export PYTHONPATH=$REPO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c 'import torch, polars; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name(0), "polars", polars.__version__)'
which py-spy
KEEP=/tmp/tk_keep; rm -rf "$KEEP"
for s in ${@:-healthy deadlock crash mismatch slow}; do  # one at a time: each tar is in $OUT as soon as its run ends
  (cd "$REPO" && TK_BACKEND=nccl TK_DETECT_KEEP=$KEEP python3 benchmarks/detect_latency.py 1 "$s" 2>&1) | tee -a "$OUT/detect_latency.txt"
  (cd "$KEEP" && tar czf "$OUT/gpu_nccl_$s.tar.gz" "$s")
done
ls -la "$OUT"
