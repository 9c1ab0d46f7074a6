#!/usr/bin/env bash
# Installs the system packages tact's cgo build needs (Debian/Ubuntu), with
# sudo when not root. Silent and fast (one dpkg-query) when all are present, so
# every make target that compiles cgo can call it; without apt-get, or sudo
# when not root, it prints one line saying what to install by hand and exits 1.
# The ollama module zip drops llama.cpp's vendor/ directory: nlohmann-json
# and stb come from apt, miniaudio from third_party/include (a stand-in).
set -euo pipefail
pkgs=(build-essential nlohmann-json3-dev libstb-dev jq python3-jsonschema cmake libxml2-utils)
by_hand="a C/C++ compiler (gcc, g++, make) and the nlohmann-json and stb headers"

if ! command -v dpkg-query >/dev/null; then
  # Not Debian/Ubuntu: no package names to check, so check the headers the
  # build includes instead.
  if printf '#include <nlohmann/json.hpp>\n#include <stb/stb_image.h>\n' |
    "${CXX:-c++}" -E -x c++ - >/dev/null 2>&1; then
    exit 0
  fi
  echo "install-deps: no dpkg (not Debian/Ubuntu) and the build's headers are missing: install $by_hand by hand" >&2
  exit 1
fi

# One dpkg-query for all packages: a package dpkg has never seen is absent
# from the output, so check each name against it.
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null || true)
missing=()
for p in "${pkgs[@]}"; do
  grep -qx "$p install ok installed" <<<"$installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing ${missing[*]} and no sudo: as root, run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  SUDO=(sudo)
fi
if ! command -v apt-get >/dev/null; then
  echo "install-deps: missing ${missing[*]} and no apt-get: install $by_hand by hand" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]} with ${SUDO[*]:-} apt-get" | tr -s ' ' >&2
# env, not an exported variable: sudo resets the environment.
apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq)
if ! "${apt[@]}" update ||
  ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "install-deps: apt-get failed: as root, run: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}" >&2
