# shellcheck shell=bash
# Usage: . scripts/lib/apt-state.sh, then apt_state_save DIR ... apt_state_restore DIR
# Sourced by scripts that install packages for a while (the CI package
# step): what dpkg has installed, saved before and put back after,
# so the machine (or a Debian root) is left as it was found: the same
# packages at the same versions, each marked automatic or manual as before.
#
#   apt_installed_list            names of the installed packages, sorted
#   apt_is_installed NAME         exit 0 when NAME is installed
#   apt_state_save DIR            saves the state in DIR
#   apt_state_restore DIR         one apt transaction back to it: packages
#                                 installed since are purged (removed, if
#                                 they had left configuration files before
#                                 the save), packages whose
#                                 version changed or that went away are
#                                 installed again at the saved version
#                                 (the archive must still have it), then the
#                                 automatic/manual marks are put back
#   apt_state_same DIR            exit 0 when the installed packages, their
#                                 versions and automatic marks are the saved
#                                 ones; else prints the differences
#
# Runs apt-get non-interactively, waiting for the dpkg lock (other work may
# be using apt). Needs root.

apt_installed_list() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" {print $2}' | LC_ALL=C sort
}

apt_is_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

# "name version" of every installed package; "name" of every package that
# left configuration files behind (status rc).
_apt_versions() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\n' |
    awk '$1 == "ii" {print $2, $3}' | LC_ALL=C sort
}
_apt_config_only() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "rc" {print $2}' | LC_ALL=C sort
}

_apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=900 "$@"
}

apt_state_save() {
  local dir=$1
  mkdir -p "$dir"
  _apt_versions >"$dir/installed"
  _apt_config_only >"$dir/config-only"
  apt-mark showauto 2>/dev/null | LC_ALL=C sort >"$dir/auto"
}

apt_state_same() {
  local dir=$1 diff marks
  diff=$(diff "$dir/installed" <(_apt_versions) | grep '^[<>] ') || true
  marks=$(diff "$dir/auto" <(apt-mark showauto 2>/dev/null | LC_ALL=C sort) | grep '^[<>] ') || true
  [ -z "$diff" ] && [ -z "$marks" ] && return 0
  if [ -n "$diff" ]; then
    echo "apt-state: the installed packages differ from the saved ones (< saved, > now):"
    echo "$diff"
  fi
  if [ -n "$marks" ]; then
    echo "apt-state: the packages marked automatic differ from the saved ones (< saved, > now):"
    echo "$marks"
  fi
  return 1
}

apt_state_restore() {
  local dir=$1 now args=() keep_config=() name
  now=$(mktemp)
  _apt_versions >"$now"
  # Installed since: purged, unless it had left configuration files before
  # (then only removed, which leaves them as they were).
  while read -r name; do
    if grep -qxF "$name" "$dir/config-only"; then keep_config+=("$name"); else args+=("$name-"); fi
  done < <(awk 'NR == FNR {saved[$1] = 1; next} !($1 in saved) {print $1}' "$dir/installed" "$now")
  if [ ${#keep_config[@]} -gt 0 ]; then
    echo "apt-state: apt-get remove ${keep_config[*]}"
    _apt_get remove "${keep_config[@]}" >/dev/null ||
      { echo "apt-state: apt-get could not remove them" >&2; return 1; }
  fi
  # Changed or gone: back to the saved version.
  while read -r name; do
    args+=("$name")
  done < <(awk 'NR == FNR {now[$1] = $2; next} now[$1] != $2 {print $1 "=" $2}' "$now" "$dir/installed")
  rm -f "$now"
  if [ ${#args[@]} -gt 0 ]; then
    echo "apt-state: apt-get install --purge --allow-downgrades ${args[*]}"
    _apt_get install --purge --allow-downgrades --no-install-recommends "${args[@]}" >/dev/null ||
      { echo "apt-state: apt-get could not put the packages back" >&2; return 1; }
  fi
  # The marks: apt-get build-dep and `apt install NAME=VERSION` mark
  # packages manual.
  local auto_now want_auto want_manual
  auto_now=$(mktemp)
  apt-mark showauto 2>/dev/null >"$auto_now"
  want_auto=$(awk 'NR == FNR {auto[$1] = 1; next} !($1 in auto)' "$auto_now" "$dir/auto")
  want_manual=$(awk 'NR == FNR {auto[$1] = 1; next} !($1 in auto)' "$dir/auto" "$auto_now")
  rm -f "$auto_now"
  # shellcheck disable=SC2086
  [ -z "$want_auto" ] || apt-mark auto $want_auto >/dev/null
  # shellcheck disable=SC2086
  [ -z "$want_manual" ] || apt-mark manual $want_manual >/dev/null
  apt_state_same "$dir"
}
