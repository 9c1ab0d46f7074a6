#!/usr/bin/env bash
# Installs the pinned llama.cpp runtime for make test and make demo
# (docs/runtime.md): npm pack of the package into a cache directory, once,
# then `tact runtime install FILE`, which checks the tarball against the
# sha512 pinned in tact and leaves an intact runtime alone (one line on
# stderr). A cached tarball that fails that check is packed again once.
# Without npm, tact downloads the same tarball from the registry itself.
#
#   scripts/install-runtime.sh TACT NAME@VERSION CACHE_DIR
set -euo pipefail
tact=$1 spec=$2 dir=$3

if ! command -v npm >/dev/null; then
  exec "$tact" runtime install >/dev/null
fi
# npm pack's file name: @scope/name@1.2.3 -> scope-name-1.2.3.tgz
name=${spec#@}
name=${name%@*}
tgz=$dir/${name//\//-}-${spec##*@}.tgz
pack() {
  mkdir -p "$dir"
  npm pack --silent --pack-destination "$dir" "$spec" >/dev/null
}
[ -f "$tgz" ] || pack
if ! "$tact" runtime install "$tgz" >/dev/null; then
  echo "install-runtime: packing $spec again" >&2
  rm -f "$tgz"
  pack
  "$tact" runtime install "$tgz" >/dev/null
fi
