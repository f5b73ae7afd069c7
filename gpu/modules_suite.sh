#!/usr/bin/env bash
# Reproduces docs/modules.md's H200 table in one device call (one H200, about 3 minutes): module attribution of gpt2 train, llama3-8b infer
# (LLAMA_LAYERS, default 16) and resnet50 train, and the step-time cost of module scopes.
# Usage (repo root, with the wheels the GPU image lacks in .whl/): bash gpu/modules_suite.sh
# Writes $OUT/modules_summary.{json,txt}, $OUT/modules_runs.tgz and $OUT/modules.log.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
R=/tmp/modules_suite; rm -rf $R; mkdir -p $R
timeout ${BUDGET:-560} python3 gpu/modules_suite.py $R > $OUT/modules.log 2>&1
echo "exit $?" >> $OUT/modules.log
cp $R/modules_summary.json $R/modules_summary.txt $R/modules_runs.tgz $OUT/ 2>/dev/null
tail -60 $OUT/modules.log
