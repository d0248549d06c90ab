set -u
REPO=$(pwd); W=$REPO/.device/wheels
python3 -m pip install -q --no-index --no-deps "$W"/py_spy*.whl 2>&1 | tail -1
export PYTHONPATH=$REPO NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=4
d=$OUT/gpu_2x1_initstall
for node in 0 1; do
  env NCCL_HOSTID=fakenode$node CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo TK_TIMEOUT_S=30 \
    timeout 75 python3 -m tracekit.cli run --quiet --out "$d" --stall 10 --repeat 8 -- \
    torchrun --nnodes=2 --node_rank=$node --nproc_per_node=1 --master_addr=::1 --master_port=29517 samples/repro/init_stall.py &
done
wait
ls -la $d; cd $OUT && tar czf gpu_2x1_initstall.tar.gz gpu_2x1_initstall && rm -rf gpu_2x1_initstall
