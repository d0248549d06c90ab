#!/bin/bash
# `swift pt` (ms-swift, DeepSpeed ZeRO-3 offload) on CPU ranks under `tracekit run`: 1x4 is one
# torchrun with 4 ranks; 2x2 is 2 "nodes" x 2 ranks, each node in its own network namespace
# (samples/repro/netns.sh: tk0 fd00::1 <-> tk1 fd00::2), the master an IPv6 literal as in the
# report. Needs root (2x2), ms-swift and tracekit in the active Python; WORKDIR from make_inputs.py.
# Usage: run.sh 1x4|2x2 WORKDIR OUT [extra swift flags...]
# The reporter's flags, changed for a CPU: see docs/case-ms-swift-6867.md, "ms-swift itself".
set -euo pipefail
topo=$1; work=$(realpath "$2"); out=$(realpath -m "$3"); shift 3
here=$(dirname "$(realpath "$0")")
cp "$here/swift_pt.py" "$work/"
flags=(--model ./base_model --model_type qwen3 --template qwen3 --dataset ./dataset/shuffled_dataset.jsonl
  --output_dir ./swift_output --dataloader_num_workers 0 --dataset_num_proc 1 --attn_impl sdpa --max_steps 6
  --max_length 128 --per_device_train_batch_size 1 --per_device_eval_batch_size 1 --sequence_parallel_size 1
  --learning_rate 1e-5 --warmup_ratio 0.05 --weight_decay 1e-4 --max_grad_norm 1.0 --gradient_accumulation_steps 2
  --save_strategy no --tuner_type full --deepspeed "$here/zero3_offload_cpu.json" --eval_strategy steps
  --eval_steps 3 --split_dataset_ratio 0.05 --lr_scheduler_type warmup_stable_decay
  --lr_scheduler_kwargs '{"num_decay_steps": 2, "num_stable_steps": 3}' --packing False --dataset_shuffle True
  --train_dataloader_shuffle True --truncation_strategy right --model_author swift --model_name swift-robot
  --log_level detail --logging_steps 1 --report_to none --torch_dtype bfloat16 --use_cpu true --ddp_backend gloo)
cd "$work"
if [ "$topo" = 1x4 ]; then
  exec env OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo PYTHONUNBUFFERED=1 python -m tracekit.cli run --quiet --out "$out" \
    --stall 20 --repeat 10 -- torchrun --nproc_per_node=4 --master_port=10217 ./swift_pt.py "${flags[@]}" "$@"
fi
ip netns list | grep -q '^tk1' || bash "$here/../netns.sh" up
for n in 0 1; do
  iface=eth0; [ $n = 1 ] && iface=${TK_NODE1_IFNAME:-eth0}  # TK_NODE1_IFNAME=lo: the wrong-interface scenario
  ip netns exec tk$n env OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=$iface PYTHONUNBUFFERED=1 \
    python -m tracekit.cli run --quiet --out "$out" --stall 20 --repeat 10 -- \
    torchrun --nnodes=2 --node_rank=$n --nproc_per_node=2 --master_addr=fd00::1 --master_port=10217 \
    ./swift_pt.py "${flags[@]}" "$@" > "$out.node$n.txt" 2>&1 &
done
rc=0; for j in $(jobs -p); do wait "$j" || rc=$?; done
exit $rc
