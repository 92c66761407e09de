#!/usr/bin/env bash
# Installs the Debian packages the T-SQL engine (../shared/tsql-engine, Babelfish) needs at run time,
# where missing: zstd to unpack it, and the libraries its binaries link (found with ldd on Debian 12:
# ICU 72, libxml2, OpenSSL 3, readline, zlib, xz, libstdc++). Needs root (CI runs as root) only when
# something is missing.
set -euo pipefail
packages=(zstd libicu72 libxml2 libssl3 libreadline8 zlib1g liblzma5 libstdc++6)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
echo "installing for the T-SQL engine: ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
  echo "not root: run  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
