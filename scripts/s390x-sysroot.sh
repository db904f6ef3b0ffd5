#!/bin/sh
# Usage: scripts/s390x-sysroot.sh DIR
#
# Makes DIR/sysroot: Debian's s390x libc6, libbson, cmocka and the three
# OP_COMPRESSED codecs (zlib, zstd, snappy with its C++ runtime), each package
# fetched with `apt-get download` and unpacked with `dpkg-deb -x`, for the
# big-endian build of `make check-portable` (cmake/s390x.cmake). Nothing is
# installed: apt runs with a configuration of its own under DIR/apt (its
# sources list, state and cache), which names the Debian mirrors this
# machine's apt uses, for s390x only. libbson is not Multi-Arch: same, so
# installing it for s390x would remove the host's; this never does.
# A sysroot already made from the same package versions is kept.
set -eu

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
apt_dir=$dir/apt
sysroot=$dir/sysroot
packages="libc6 libbson-1.0-0 libbson-dev libcmocka0 libcmocka-dev zlib1g zlib1g-dev libzstd1 libzstd-dev
  libsnappy1v5 libsnappy-dev libstdc++6 libgcc-s1"

mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs" "$apt_dir/sources.list.d"
: >"$apt_dir/status"

# The Debian archives (origin Debian, component main) the host's apt knows,
# as apt itself reports them, whatever the format of its sources files.
apt-cache policy | awk '
  /^ *[0-9]+ [a-z+]+:\/\// { uri = $2; split($3, s, "/"); suite = s[1]; comp = s[2]; next }
  /release / && /o=Debian,/ && comp == "main" && uri != "" { print uri " " suite; uri = "" }' |
  sort -u >"$apt_dir/archives.txt"
[ -s "$apt_dir/archives.txt" ] || { echo "s390x-sysroot: the host's apt names no Debian archive" >&2; exit 1; }
while read -r uri suite; do
  echo "deb [arch=s390x] $uri $suite main"
done <"$apt_dir/archives.txt" >"$apt_dir/sources.list"

apt_private() {
  apt-get -q -o Debug::NoLocking=1 -o APT::Sandbox::User=root \
    -o APT::Architecture=s390x -o APT::Architectures::=s390x \
    -o Dir::Etc::SourceList="$apt_dir/sources.list" \
    -o Dir::Etc::SourceParts="$apt_dir/sources.list.d" \
    -o Dir::State="$apt_dir" -o Dir::State::Lists="$apt_dir/lists" \
    -o Dir::State::status="$apt_dir/status" \
    -o Dir::Cache="$apt_dir" -o Dir::Cache::Archives="$apt_dir/archives" \
    -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" "$@"
}

apt_private update >"$apt_dir/update.log" 2>&1 || { cat "$apt_dir/update.log" >&2; exit 1; }
# The versions the sysroot is made of: the same as before, nothing to do.
versions=$(for p in $packages; do
  echo "$p $(apt_private -qq --print-uris download "$p:s390x" 2>/dev/null | awk '{print $2}')"
done)
if [ -f "$sysroot/.versions" ] && [ "$(cat "$sysroot/.versions")" = "$versions" ]; then
  exit 0
fi
rm -rf "$sysroot" "$apt_dir/debs"
mkdir -p "$sysroot" "$apt_dir/debs"
# shellcheck disable=SC2046 # one word per package
(cd "$apt_dir/debs" && apt_private -qq download $(for p in $packages; do echo "$p:s390x"; done))
for deb in "$apt_dir"/debs/*.deb; do
  dpkg-deb -x "$deb" "$sysroot"
done
echo "$versions" >"$sysroot/.versions"
echo "s390x-sysroot: $(ls "$apt_dir/debs" | tr '\n' ' ')"
