#!/bin/bash
# The ms-swift 6867 case at real size on one GPU, each run under `tracekit run`; one tar.gz per run in OUT,
# with a memory log beside it (<run>.mem.csv: unix time, GPU MiB used, host GiB used, every 2 s).
#   setup      install the carried wheels (.device/wheels: DeepSpeed sdist, pydantic, hjson, py-spy) if
#              DeepSpeed is missing, and build DeepSpeed's CPU Adam once (timed; the runs then load it)
#   1x1        Qwen3-4B ZeRO-3 offload (train_qwen3_4b.py), one rank, TK_SEQ 32768, accumulation 8
#   2x1        the same on two fake nodes sharing the GPU: two torchrun --nnodes=2 launches, NCCL_HOSTID
#              per node, P2P/SHM/IB off, so NCCL goes through NET/Socket on lo as between two hosts;
#              TK_SEQ 16384 (two ranks on one GPU: two optimizer steps fit the 10-minute call)
#   2x1_zero2  the same with ms-swift's zero2_offload
#   bench      all_reduce / all_gather sweep, 4 KB to 256 MB, over the same NET/Socket path
# Usage: OUT=DIR bash samples/repro/gpu_capture_4b.sh setup 1x1 2x1 ...
set -u
OUT=${OUT:-/tmp/gpu_out}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
export PYTHONPATH=$REPO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8} PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
TRAIN=$REPO/samples/repro/train_qwen3_4b.py

setup() {
  if ! python3 -c "import deepspeed" 2>/dev/null; then
    W=$REPO/.device/wheels
    python3 -m pip install -q --no-index --no-deps "$W"/*.whl 2>&1 | tail -2
    DS_BUILD_OPS=0 python3 -m pip install -q --no-index --no-deps --no-build-isolation "$W"/deepspeed-*.tar.gz 2>&1 | tail -2
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; free -g | head -2
  python3 -c "import torch, deepspeed, transformers; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(),
'deepspeed', deepspeed.__version__, 'transformers', transformers.__version__)"
  python3 - <<'EOF'
import time
t = time.time()
try:
    from deepspeed.ops.op_builder import CPUAdamBuilder
    CPUAdamBuilder().load()
    print(f"cpu_adam built in {time.time() - t:.1f} s")
except Exception as e:
    print(f"cpu_adam not built: {type(e).__name__}: {str(e)[:300]}")
EOF
}

sample_memory() {  # file: GPU and host memory in use every 2 s until killed
  while :; do
    echo "$(date +%s),$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1),$(awk '/MemTotal/{t=$2}/MemAvailable/{a=$2}END{printf "%.1f", (t-a)/1048576}' /proc/meminfo)"
    sleep 2
  done > "$1"
}

finish() {  # name: pack the run folder
  (cd "$OUT" && tar czf "$1.tar.gz" "$1" && rm -rf "$1")
}

run_1x1() {  # name limit_s [env...]
  local name=$1 limit=$2; shift 2; local d=$OUT/$name; rm -rf "$d"
  sample_memory "$OUT/$name.mem.csv" & local mem=$!
  env "$@" timeout "$limit" python3 -m tracekit.cli run --quiet --out "$d" --stall 240 -- \
    torchrun --nnodes=1 --nproc_per_node=1 --master_addr=::1 --master_port=29521 "$TRAIN"
  echo "$name rc=$?"; kill "$mem"; finish "$name"
}

run_2x1() {  # name limit_s script [env...]
  local name=$1 limit=$2 script=$3 port=$((29522 + RANDOM % 100)); shift 3; local d=$OUT/$name; rm -rf "$d"
  sample_memory "$OUT/$name.mem.csv" & local mem=$!
  local pids=()
  for node in 0 1; do
    env "$@" NCCL_HOSTID=fakenode$node CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
      NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo \
      timeout "$limit" python3 -m tracekit.cli run --quiet --out "$d" --stall 240 -- \
      torchrun --nnodes=2 --node_rank=$node --nproc_per_node=1 --master_addr=::1 --master_port=$port "$script" &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo "$name done"; kill "$mem"; finish "$name"
}

for what in "$@"; do
  case $what in
    setup) setup ;;
    1x1) run_1x1 gpu_1x1_4b_zero3 ${LIMIT:-480} TK_SEQ=${TK_SEQ:-32768} TK_STEPS=${TK_STEPS:-2} ;;
    2x1) run_2x1 ${NAME:-gpu_2x1_4b_zero3} ${LIMIT:-540} "$TRAIN" TK_SEQ=${TK_SEQ:-16384} TK_STEPS=${TK_STEPS:-2} ;;
    2x1_zero2) run_2x1 gpu_2x1_4b_zero2 ${LIMIT:-360} "$TRAIN" TK_ZERO_STAGE=2 TK_SEQ=${TK_SEQ:-16384} \
      TK_STEPS=${TK_STEPS:-2} ;;
    bench) run_2x1 gpu_2x1_4b_bench ${LIMIT:-120} "$REPO/samples/repro/train_zero3.py" TK_SCENARIO=bench ;;
    *) echo "unknown step: $what"; exit 2 ;;
  esac
done
ls -la "$OUT"
