#!/usr/bin/env bash
# Device call 2's work, after stage2.sh's setup (the GPU path of `make gpu-check`):
#   A. chapter 02 on cuda at the planner's n for geo_entropy_spread_smollm2_135m (160 prompts),
#      SmolLM2 only, no twins (the row is SmolLM2's trained model): the default articles, then
#      five other articles (an independent replicate; the default pool's seeds overlap);
#   B. meanwhile, every chapter at the smoke book's size on cuda, 4 at a time
#      (tools/gpu_check.py --smoke --skip-chapters --skip-jacobians --jobs 4);
#   C. if time is left, chapter 03 at n = 157 exactly as the CPU reality check ran it, for a
#      GPU-against-CPU time of the same work.
# Each step has a limit, so the call returns what it has. Results: $OUT/gx.tgz.
set -u
G=/tmp/gx
mkdir -p $G
export LLMDYN_RESULTS=$G/results
START=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $G/gpu.txt 2>&1

timeout 420 python3 tools/gpu_check.py --smoke --skip-chapters --skip-jacobians --jobs 4 \
  --out $G/gpu_check > $G/smoke.log 2>&1 &
SMOKE=$!

OTHER='[American_Broadcasting_Company, Victoria_and_Albert_Museum, Doctor_Who, Rhine, Scottish_Parliament]'
run02() {  # name, extra yaml
  local t0=$(date +%s)
  timeout 170 python3 -m papermill notebooks/02_geometry_along_depth.ipynb $G/02_n160_$1.ipynb \
    -k llmdyn -p n_prompts 160 -p seed 0 -p device cuda \
    -y "{compare_models: [], twin_seeds: [] $2}" > $G/02_$1.log 2>&1
  echo "02_$1 rc=$? wall_s=$(( $(date +%s) - t0 ))" >> $G/times.txt
}
run02 default ""
run02 other ", squad_articles: $OTHER"

if [ $(( $(date +%s) - START )) -lt 250 ]; then
  t0=$(date +%s)
  timeout 150 python3 -m papermill notebooks/03_uncertainty.ipynb $G/03_n157_seed0.ipynb \
    -k llmdyn -p n_prompts 157 -p seed 0 -p device cuda \
    -y '{compare_models: [], twin_seeds: []}' > $G/03.log 2>&1
  echo "03_n157 rc=$? wall_s=$(( $(date +%s) - t0 ))" >> $G/times.txt
fi
wait $SMOKE
echo "smoke rc=$? total_s=$(( $(date +%s) - START ))" >> $G/times.txt
python3 tools/glued_values.py $G/gpu_check/executed > $G/smoke_glued.json 2>$G/glued.err
cp $G/gpu_check/report.* $G/ 2>/dev/null
cat $G/times.txt
tar czf $OUT/gx.tgz -C $G --exclude results --exclude gpu_check .
ls -la $OUT
