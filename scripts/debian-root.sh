#!/bin/bash
# Test systems: a minimal Debian root per release, with what building,
# testing and packaging opmsg needs, for checking opmsg on releases other
# than the machine's own (docs/distros.md).
#
# Usage: scripts/debian-root.sh SUITE [DIR]          make DIR, or reuse it
#        scripts/debian-root.sh --exec SUITE [DIR] -- COMMAND...
#                                                   run COMMAND inside DIR
#        scripts/debian-root.sh --path SUITE [DIR]   print DIR
#
# SUITE is trixie or sid (any suite debootstrap knows works); DIR defaults
# to build/roots/SUITE of this source tree ($OPMSG_ROOTS/SUITE when set). The root is made with `debootstrap --variant=minbase`
# from the Debian mirror this machine's apt uses (OPMSG_DEBIAN_MIRROR
# overrides it), then the packages below are installed inside. A complete
# root carries the stamp file .opmsg-root (the package list it was made
# with) and is reused; build/roots/READY-SUITE says it is usable.
#
# --exec runs COMMAND as root inside DIR with /proc, /sys and /dev mounted
# in a mount namespace of its own (so they vanish with the command, and
# several commands may use one root at once); where no namespace can be
# made, they are mounted directly and unmounted when the command ends. The
# network (and so loopback) is the machine's. The environment is reset to
# a few variables; OPMSG_* variables pass through. OPMSG_ROOT_NO_NAMESPACE=1
# forces the direct mounts.
#
# Needs root and debootstrap (installed with apt when missing).
set -euo pipefail

say() { echo "debian-root: $*" >&2; }
die() { echo "debian-root: error: $*" >&2; exit 1; }

usage() {
  sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

orig_args="$*"
mode="make"
case ${1:-} in
  --exec) mode="exec"; shift ;;
  --path) mode="path"; shift ;;
  -h|--help|"") usage ;;
esac
suite=${1:-}
[ -n "$suite" ] || usage
shift
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${OPMSG_ROOTS:-$top/build/roots}/$suite
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  dir=$1
  shift
fi
if [ "$mode" = exec ]; then
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || die "--exec needs a command after --"
fi
case $suite in
  *[!a-z0-9.-]*) die "not a suite name: $suite" ;;
esac
dir=$(realpath -m "$dir")
stamp=$dir/.opmsg-root
ready=$(dirname "$dir")/READY-$(basename "$dir")

if [ "$mode" = path ]; then
  echo "$dir"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and mount need it); try: sudo $0 $orig_args"

# --- Running a command inside ----------------------------------------------

# Environment inside: a clean one, plus OPMSG_* and a few from the caller.
inner_env() {
  local v
  echo "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  echo "HOME=/root"
  echo "LANG=C.UTF-8"
  echo "TERM=${TERM:-dumb}"
  echo "DEBIAN_FRONTEND=noninteractive"
  for v in $(compgen -e); do
    case $v in
      OPMSG_*|CTEST_*|JOBS) echo "$v=${!v}" ;;
    esac
  done
}

mount_all() {
  local root=$1
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys" 2>/dev/null || true
  mount --rbind /dev "$root/dev"
}

umount_all() {
  local root=$1 m
  for m in dev sys proc; do
    if mountpoint -q "$root/$m"; then
      umount -R "$root/$m" 2>/dev/null || umount -lR "$root/$m" || true
    fi
  done
}

run_inside() {
  local root=$1
  shift
  # The root's own name server list (apt inside needs one).
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  local -a envs
  mapfile -t envs < <(inner_env)
  if [ "${OPMSG_ROOT_NO_NAMESPACE:-0}" != 1 ] && unshare -m --propagation private true 2>/dev/null; then
    # shellcheck disable=SC2016
    unshare -m --propagation private /bin/bash -c '
      set -e
      root=$1; shift
      mount -t proc proc "$root/proc"
      mount -t sysfs sysfs "$root/sys" 2>/dev/null || true
      mount --rbind /dev "$root/dev"
      exec chroot "$root" /usr/bin/env -i "$@"' inner "$root" "${envs[@]}" "$@"
  else
    local rc=0
    mount_all "$root"
    trap 'umount_all "$root"' EXIT INT TERM
    chroot "$root" /usr/bin/env -i "${envs[@]}" "$@" || rc=$?
    umount_all "$root"
    trap - EXIT INT TERM
    return $rc
  fi
}

if [ "$mode" = exec ]; then
  [ -f "$stamp" ] || die "$dir is not a complete root: run $0 $suite $dir first"
  run_inside "$dir" "$@"
  exit $?
fi

# --- Making the root --------------------------------------------------------

# What building, testing and packaging opmsg needs. "a|b" takes the first
# one the release has; a "?" in front marks a package that may be missing.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git rsync make
  "libbson2-dev|libbson-dev" "libmongoc2-dev|libmongoc-dev"
  libsnappy-dev zlib1g-dev libzstd-dev libisal-dev libcmocka-dev libpcap-dev
  python3 python3-pymongo "?python3-mockupdb" valgrind tcpdump procps
  lintian debhelper dpkg-dev fakeroot file "?abigail-tools"
  "?libmongocrypt-dev" ca-certificates
)
list_id=$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-16)

if [ -f "$stamp" ] && [ "$(sed -n 's/^list: //p' "$stamp")" = "$list_id" ]; then
  say "$dir: reused ($(sed -n 's/^made: //p' "$stamp"))"
  touch "$ready"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  say "debootstrap is not installed: installing it with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -q >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null; } ||
    die "could not install debootstrap (apt-get install debootstrap)"
fi

# host_uri SUITE: the Debian mirror of this machine's apt sources.
. "$top/scripts/lib/host-uri.sh"
mirror=${OPMSG_DEBIAN_MIRROR:-$(host_uri "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")")}
[ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d} for this machine's release; set OPMSG_DEBIAN_MIRROR"

if [ ! -f "$dir/.opmsg-debootstrap" ]; then
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    # A debootstrap that stopped half-way leaves its work directory behind.
    if [ -d "$dir/debootstrap" ] && ! grep -q " $dir/" /proc/mounts; then
      say "$dir: an unfinished debootstrap, starting again"
      rm -rf --one-file-system "$dir"
    else
      die "$dir exists and is not a root made by this script: remove it or choose another DIR"
    fi
  fi
  mkdir -p "$dir"
  say "debootstrap --variant=minbase $suite $dir $mirror"
  start=$(date +%s)
  log=$(mktemp)
  if ! debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    [ -f "$dir/debootstrap/debootstrap.log" ] && tail -n 20 "$dir/debootstrap/debootstrap.log" >&2
    rm -f "$log"
    die "debootstrap of $suite failed"
  fi
  rm -f "$log"
  echo "$suite $mirror" >"$dir/.opmsg-debootstrap"
  say "debootstrap done in $(( $(date +%s) - start )) s"
fi

# Inside: one mirror, no services started, no documentation installed
# beyond what packages need, and (sid) no trust in Valid-Until (a mirror
# snapshot's sid index may have expired).
echo "deb $mirror $suite main" >"$dir/etc/apt/sources.list"
rm -f "$dir/etc/apt/sources.list.d/"*.sources 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
chmod 755 "$dir/usr/sbin/policy-rc.d"
cat >"$dir/etc/apt/apt.conf.d/90opmsg" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
if [ "$suite" = sid ] || [ "$suite" = unstable ]; then
  echo 'Acquire::Check-Valid-Until "false";' >>"$dir/etc/apt/apt.conf.d/90opmsg"
fi

start=$(date +%s)
say "$dir: apt-get update"
run_inside "$dir" apt-get -q -o Acquire::Check-Valid-Until=false update >/dev/null ||
  die "apt-get update failed inside $dir"

# Resolve the alternatives against the release's own index.
wanted=()
for entry in "${PACKAGES[@]}"; do
  optional=0
  if [ "${entry#\?}" != "$entry" ]; then optional=1; entry=${entry#\?}; fi
  chosen=""
  IFS='|' read -r -a alts <<<"$entry"
  for p in "${alts[@]}"; do
    cand=$(run_inside "$dir" apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    if [ -n "$cand" ] && [ "$cand" != "(none)" ]; then chosen=$p; break; fi
  done
  if [ -n "$chosen" ]; then
    wanted+=("$chosen")
  elif [ "$optional" -eq 1 ]; then
    say "$suite has no $entry: not installed"
  else
    die "$suite has none of: $entry"
  fi
done

say "$dir: installing ${wanted[*]}"
run_inside "$dir" apt-get install -y -q "${wanted[@]}" >"$dir/.opmsg-install.log" 2>&1 || {
  tail -n 30 "$dir/.opmsg-install.log" >&2
  die "apt-get install failed inside $dir (log: $dir/.opmsg-install.log)"
}
run_inside "$dir" apt-get clean

mongoc=$(run_inside "$dir" sh -c 'pkg-config --modversion mongoc2 2>/dev/null || pkg-config --modversion libmongoc-1.0' || echo "?")
{
  echo "suite: $suite"
  echo "mirror: $mirror"
  echo "list: $list_id"
  echo "packages: ${wanted[*]}"
  echo "libmongoc: $mongoc"
  echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ), packages in $(( $(date +%s) - start )) s"
} >"$stamp"
touch "$ready"
say "$dir: ready ($suite, libmongoc $mongoc, packages in $(( $(date +%s) - start )) s)"
