#!/usr/bin/env bash
# Install addressable with its test and DLRM extras. torchrec is installed with --no-deps
# because it declares the 465 MB CUDA fbgemm-gpu; fbgemm-gpu-cpu (in the dlrm extra) serves it.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.14.1 torchvision==0.29.1
python -m pip install -q -e ".[test,dlrm]"
python -m pip install -q --no-deps torchrec==1.9.2
# bubblewrap sandboxes `addressable verify`'s candidates; installed only where apt-get is there and we are root
if ! command -v bwrap > /dev/null && command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -q bubblewrap > /dev/null 2>&1 || { apt-get update -q > /dev/null 2>&1 && apt-get install -y -q bubblewrap > /dev/null 2>&1; }) \
    || echo "install.sh: could not install bubblewrap; verify runs candidates unsandboxed" >&2
fi
