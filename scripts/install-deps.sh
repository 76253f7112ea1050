#!/usr/bin/env bash
# Installs the Debian bookworm packages mlx-vulkan builds and tests with. Run as root.
# Skips apt entirely when everything is already installed, so repeated runs are fast and
# need no network.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers
  glslang-dev glslang-tools spirv-tools libspirv-cross-c-shared-dev
  libxxhash-dev doctest-dev nlohmann-json3-dev
)

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
