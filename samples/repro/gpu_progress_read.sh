#!/bin/bash
# tracekit.hook.collectives_done() on NCCL: 2 ranks on one GPU as fake nodes (see gpu_progress_read.py).
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export REPO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_FR_BUFFER_SIZE=2000 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))'
for node in 0 1; do
  NCCL_HOSTID=fakenode$node CUDA_VISIBLE_DEVICES=0 timeout 120 torchrun --nnodes=2 --node_rank=$node --nproc_per_node=1 \
    --master_addr=127.0.0.1 --master_port=29533 "$REPO/samples/repro/gpu_progress_read.py" > "${OUT:-/tmp}/node$node.log" 2>&1 &
done
wait
grep -h "^progress\|Error\|error" "${OUT:-/tmp}"/node*.log | head -40
