#!/usr/bin/env bash
# Every CUDA row of BENCHMARKS.md in one command, for a lent GPU whose time is short: the CUDA
# tests (the examples, users' steps and Hugging Face models on CUDA), the performance curves'
# accuracy (issue 15's GPU acceptance), memory by phase, memory at the peak, where a profile's
# seconds go (stage_cost.py; a process's first profile: first_profile.py), whether the headline
# is what a training loop runs at (cuda_headline.py, against the same loop pipelined to one
# synchronize; cuda_launch_bound.py, for a step the host's launches pace) and how short the held
# queue may be (cuda_hold.py).
# The parts run in that order, each with its own time limit and output file, within one
# deadline (DEADLINE seconds, default 540: a device call may run 600): a part that would start
# with under 20 s left is skipped and said, so a call cut short still leaves what ran.
#
#     PYTHONPATH=$PWD bash benchmarks/cuda_all.sh OUT_DIR
set -u
out=${1:?usage: benchmarks/cuda_all.sh OUT_DIR}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
end=$((SECONDS + ${DEADLINE:-540}))

# part LIMIT OUTFILE COMMAND...: COMMAND under the smaller of LIMIT and the time left, its
# output appended to OUTFILE
part() {
  local limit=$1 file=$2 left=$((end - SECONDS))
  shift 2
  if ((left < 20)); then
    echo "skipped (deadline): $*" | tee -a "$out/skipped.txt"
    return
  fi
  timeout $((limit < left ? limit : left)) "$@" >> "$out/$file" 2>&1
}

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  $py -c "import torch, platform; print(platform.python_version(), torch.__version__, \
torch.cuda.get_device_name(), torch.get_num_threads(), 'threads')"
} > "$out/tests.txt" 2>&1
part 150 tests.txt $py -m pytest tests/gpu tests/unit/test_memory_phases.py \
  tests/unit/test_sample_plan_gpu.py -q -p no:cacheprovider --durations=8
for model in mlp cnn transformer lstm; do
  part 90 accuracy.txt $py benchmarks/prediction_accuracy.py --device cuda --repeats 3 \
    --starts 8 32 --models "$model" --json "$out/acc_$model.json"
done
part 60 memory_prediction.txt $py benchmarks/memory_prediction.py --device cuda \
  --models mlp cnn transformer lstm gpt convnext
part 40 peak_memory.txt $py benchmarks/peak_memory.py --device cuda --batches 32 256
part 120 stage_cost.txt $py benchmarks/stage_cost.py --device cuda --models mlp:32 cnn:32 \
  transformer:8 transformer:32 lstm:32 --repeats 3 --cprofile 15
part 60 stage_cost.txt $py benchmarks/stage_cost.py --device cuda --scale bench \
  --models lstm:8 lstm:32 transformer:8 --repeats 3
part 60 stage_cost.txt $py benchmarks/first_profile.py --device cuda --rounds 2 \
  --models mlp lstm
part 90 headline.txt $py benchmarks/cuda_headline.py --models mlp:8 transformer:8 lstm:8 \
  --rounds 4
part 60 headline.txt $py benchmarks/cuda_launch_bound.py --rounds 8
part 90 cuda_hold.txt $py benchmarks/cuda_hold.py --factors 2 1 0.5 --rounds 3
# a device run returns at most 8 files: the accuracy JSON in one archive
jsons=$(cd "$out" && ls acc_*.json 2>/dev/null)
if [ -n "$jsons" ]; then
  tar -czf "$out/acc_json.tgz" -C "$out" $jsons && (cd "$out" && rm -f $jsons)
fi
ls -l "$out"
