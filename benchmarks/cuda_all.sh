#!/usr/bin/env bash
# Every CUDA row of BENCHMARKS.md in one command, for a lent GPU whose time is short: the CUDA
# tests, the performance curves' accuracy (issue 15's GPU acceptance), memory by phase, memory
# at the peak, where a profile's seconds go (stage_cost.py), how short the held queue may be
# (cuda_hold.py) and whether the headline is what a training loop runs at (cuda_headline.py,
# against the same loop pipelined to one synchronize; cuda_launch_bound.py, for a step the
# host's launches pace). Each part has its own time limit and its
# own output file, so a part cut short still leaves what the others printed.
#
#     PYTHONPATH=$PWD bash benchmarks/cuda_all.sh OUT_DIR
set -u
out=${1:?usage: benchmarks/cuda_all.sh OUT_DIR}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  $py -c "import torch, platform; print(platform.python_version(), torch.__version__, \
torch.cuda.get_device_name(), torch.get_num_threads(), 'threads')"
  timeout 100 $py -m pytest tests/gpu tests/unit/test_memory_phases.py -q -p no:cacheprovider
} > "$out/tests.txt" 2>&1
for model in mlp cnn transformer lstm; do
  timeout 90 $py benchmarks/prediction_accuracy.py --device cuda --repeats 3 --starts 8 32 \
    --models "$model" --json "$out/acc_$model.json" > "$out/acc_$model.txt" 2>&1
done
timeout 60 $py benchmarks/memory_prediction.py --device cuda \
  --models mlp cnn transformer lstm gpt convnext > "$out/memory_prediction.txt" 2>&1
timeout 40 $py benchmarks/peak_memory.py --device cuda --batches 32 256 \
  > "$out/peak_memory.txt" 2>&1
timeout 120 $py benchmarks/stage_cost.py --device cuda --models mlp:32 cnn:32 transformer:8 \
  transformer:32 lstm:32 --repeats 3 --cprofile 15 > "$out/stage_cost.txt" 2>&1
timeout 90 $py benchmarks/cuda_hold.py --factors 2 1 0.5 --rounds 3 > "$out/cuda_hold.txt" 2>&1
timeout 90 $py benchmarks/cuda_headline.py --models mlp:8 transformer:8 lstm:8 --rounds 4 \
  > "$out/headline.txt" 2>&1
timeout 60 $py benchmarks/cuda_launch_bound.py --rounds 8 >> "$out/headline.txt" 2>&1
# a device run returns at most 8 files: the accuracy tables in one, their JSON in one archive
cat "$out"/acc_*.txt > "$out/accuracy.txt" && rm -f "$out"/acc_*.txt
tar -czf "$out/acc_json.tgz" -C "$out" $(cd "$out" && ls acc_*.json 2>/dev/null) \
  && rm -f "$out"/acc_*.json
ls -l "$out"
