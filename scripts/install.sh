#!/usr/bin/env bash
# Install addressable (editable) with its test and DLRM extras into the current Python
# (PYTHON=... to pick another), keeping the torch that is already there: torch and torchvision
# are installed only when none is importable, and every later step is constrained to the
# installed versions, so a CUDA build of torch is never replaced. torchrec is installed with
# --no-deps because it declares the 465 MB CUDA fbgemm-gpu; fbgemm-gpu-cpu (dlrm extra) serves it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
TORCH=torch==2.14.1
TORCHVISION=torchvision==0.29.1

step() { printf '[%s/4] %s\n' "$1" "$2" >&2; }
version() { "$PY" -c "import $1; print($1.__version__)" 2>/dev/null; }

if tv=$(version torch); then
    step 1 "torch $tv is installed: keeping it"
else
    step 1 "no importable torch: installing $TORCH"
    "$PY" -m pip install "$TORCH"
    tv=$(version torch)
fi
pins=$(mktemp)
trap 'rm -f "$pins"' EXIT
echo "torch==${tv%%+*}" >"$pins"  # without the local label (+cu130): pip matches it against installed builds
if vv=$(version torchvision); then
    step 2 "torchvision $vv is installed: keeping it"
else
    step 2 "no importable torchvision: installing one that fits torch $tv"
    "$PY" -m pip install -c "$pins" torchvision || "$PY" -m pip install -c "$pins" "$TORCHVISION"
    vv=$(version torchvision)
fi
echo "torchvision==${vv%%+*}" >>"$pins"
step 3 "installing addressable (building its C trace scanner; with msgspec and zlib-ng, the trace loader's speed-ups) and its test and dlrm extras (torch $tv, torchvision $vv kept)"
"$PY" -m pip install -c "$pins" -e ".[test,dlrm]"
"$PY" -c "import addressable.trace._kineto" 2>/dev/null \
    || echo "note: the C trace scanner (addressable/trace/_kineto.c) was not built (no C compiler or Python headers?): traces load through msgspec, about 2.5x slower" >&2
step 4 "installing torchrec (no dependencies)"
"$PY" -m pip install -c "$pins" --no-deps torchrec==1.9.2
# bubblewrap sandboxes `addressable verify`'s candidates; installed only where apt-get is there and we are root
if ! command -v bwrap > /dev/null && command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing bubblewrap (the sandbox of addressable verify)" >&2
    (apt-get install -y -q bubblewrap > /dev/null 2>&1 || { apt-get update -q > /dev/null 2>&1 && apt-get install -y -q bubblewrap > /dev/null 2>&1; }) \
        || echo "could not install bubblewrap: verify will run candidates unsandboxed" >&2
fi
echo "done: try 'addressable profile resnet50 --batch 64'" >&2
