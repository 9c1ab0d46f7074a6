#!/usr/bin/env bash
# Installs the system packages tact's cgo build needs (Debian/Ubuntu).
# The ollama module zip drops llama.cpp's vendor/ directory: nlohmann-json
# and stb come from apt, miniaudio from third_party/include (a stand-in).
set -euo pipefail
pkgs=(build-essential nlohmann-json3-dev libstb-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present: ${pkgs[*]}"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
