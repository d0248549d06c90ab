#!/bin/bash
# Real NCCL captures on a one-GPU machine, each under `tracekit run`; one tar.gz per run in $OUT.
#   1x1          one rank, NCCL on one GPU (ZeRO-3 offload, Kineto with CUDA kernels)
#   2x1_*        two fake nodes on the same GPU: two torchrun --nnodes=2 launches, NCCL_HOSTID per node,
#                P2P/SHM/IB off, so NCCL goes through NET/Socket on lo, as between two hosts (rendezvous at
#                the IPv6 master ::1; NCCL skips IPv6 loopback addresses, so its sockets use 127.0.0.1)
#                healthy, bench (bandwidth sweep), divergence (hang; FR dumps on watchdog timeout),
#                badiface (NCCL_SOCKET_IFNAME names no interface)
# Usage: bash samples/repro/gpu_capture.sh OUTDIR   (wheels for py-spy and DeepSpeed in .device/wheels)
set -u
OUT=${1:-${OUT:-/tmp/gpu_out}}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
W=$REPO/.device/wheels
if [ -d "$W" ]; then
  python3 -m pip install -q --no-index --no-deps "$W"/*.whl 2>&1 | tail -2
  DS_BUILD_OPS=0 python3 -m pip install -q --no-index --no-deps --no-build-isolation "$W"/deepspeed-*.tar.gz 2>&1 | tail -2
fi
export PYTHONPATH=$REPO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TK_STEPS=${TK_STEPS:-6} TK_HIDDEN=${TK_HIDDEN:-256} TK_LAYERS=${TK_LAYERS:-2} OMP_NUM_THREADS=4
nvidia-smi -L; python3 -c "import torch, deepspeed; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'deepspeed', deepspeed.__version__)"
TRAIN=$REPO/samples/repro/train_zero3.py
run_1x1() {  # name scenario
  local d=$OUT/$1; rm -rf "$d"
  TK_SCENARIO=$2 timeout 150 python3 -m tracekit.cli run --quiet --out "$d" --stall 20 --repeat 10 -- \
    torchrun --nnodes=1 --nproc_per_node=1 --master_addr=::1 --master_port=$3 "$TRAIN"
  echo "$1 rc=$?"
}
run_2x1() {  # name scenario port [extra env for both nodes]
  local d=$OUT/$1 port=$3; shift 3; rm -rf "$d"
  for node in 0 1; do
    env "$@" NCCL_HOSTID=fakenode$node CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 \
      NCCL_SOCKET_IFNAME=${IFNAME:-lo} \
      timeout 150 python3 -m tracekit.cli run --quiet --out "$d" --stall 8 --repeat 8 -- \
      torchrun --nnodes=2 --node_rank=$node --nproc_per_node=1 --master_addr=::1 --master_port=$port "$TRAIN" &
  done
  wait
  echo "$(basename $d) done"
}
[ -z "${SKIP_1X1:-}" ] && TK_PROFILE=1 run_1x1 gpu_1x1_healthy healthy 29511
TK_PROFILE=1 run_2x1 gpu_2x1_healthy healthy 29512 TK_SCENARIO=healthy
TK_PROFILE=0 run_2x1 gpu_2x1_bench bench 29513 TK_SCENARIO=bench
TK_PROFILE=0 run_2x1 gpu_2x1_divergence divergence 29514 TK_SCENARIO=divergence TK_TIMEOUT_S=25 TK_EVAL_EVERY=2
TK_PROFILE=0 IFNAME=eth9 run_2x1 gpu_2x1_badiface healthy 29515 TK_SCENARIO=healthy TK_TIMEOUT_S=25
cd "$OUT" && for d in gpu_*; do [ -d "$d" ] && tar czf "$d.tar.gz" "$d" && rm -rf "$d"; done; ls -la "$OUT"
