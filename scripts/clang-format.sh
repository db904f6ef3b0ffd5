#!/bin/sh
# Prints the path of a clang-format of the pinned series, installing it first
# when there is none: the PyPI wheel `clang-format` (the same series
# mongo-c-driver pins in its pyproject.toml), in a virtual environment under
# build/tools/, so nothing outside the tree changes. Debian's own
# clang-format is left alone: 14 (Debian 12) cannot read upstream's
# .clang-format, and formatting must not depend on the release.
#
# Usage: scripts/clang-format.sh [--pin VERSION] [--print-version | --check | --fix]
# --check (make format-check, CI) lists every tracked .c/.h file outside
# fork/ that clang-format would change and fails; --fix (make format)
# rewrites them in place. fork/ is mongo-c-driver's code: upstream's
# .clang-format holds there, which the fork's check applies.
# --pin 17.0.6 gives the series mongo-c-driver's older branches pinned
# (1.30's poetry "^17"; 1.23 pins none and its tree is clean under 17 too),
# for the fork's Debian ports; the default is 20.1.8, master's and ours.
# CLANG_FORMAT=/path/to/clang-format uses that one if it is of the series.
set -eu

pin=20.1.8
if [ "${1:-}" = --pin ]; then
  pin=${2:?--pin needs a version}
  shift 2
fi
case $pin in
  20.1.8|17.0.6) ;;
  *) echo "clang-format.sh: no pin $pin (20.1.8 or 17.0.6)" >&2; exit 2 ;;
esac
series=${pin%.*}
top=$(cd "$(dirname "$0")/.." && pwd)
venv=$top/build/tools/clang-format-$pin

of_series() {
  "$1" --version 2>/dev/null | grep -q "clang-format version $series\."
}

pick() {
  if [ -n "${CLANG_FORMAT:-}" ] && of_series "$CLANG_FORMAT"; then
    echo "$CLANG_FORMAT"; return 0
  fi
  if [ -x "$venv/bin/clang-format" ] && of_series "$venv/bin/clang-format"; then
    echo "$venv/bin/clang-format"; return 0
  fi
  return 1
}

if ! bin=$(pick); then
  echo "clang-format.sh: installing clang-format $pin (PyPI wheel) into build/tools/" >&2
  rm -rf "$venv"
  # Debian's python3 with its venv module (python3-venv); a python3 that
  # has pip of its own works too.
  py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  "$py" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "clang-format==$pin" >&2
  bin=$(pick) || { echo "clang-format.sh: clang-format $pin did not install" >&2; exit 1; }
fi
version=$("$bin" --version | sed 's/.*version //')
case ${1:-} in
  --print-version) "$bin" --version ;;
  --fix) cd "$top" && git ls-files -z '*.c' '*.h' ':!:fork/' | xargs -0 "$bin" -i ;;
  --check)
    cd "$top"
    bad=$(git ls-files '*.c' '*.h' ':!:fork/' | while read -r f; do
      "$bin" --dry-run -Werror "$f" >/dev/null 2>&1 || printf ' %s' "$f"; done)
    if [ -n "$bad" ]; then
      echo "format-check: not formatted with $version:$bad"
      echo "format-check: run 'make format'"
      exit 1
    fi
    echo "format-check: $(git ls-files '*.c' '*.h' ':!:fork/' | wc -l) files formatted ($version)" ;;
  *) echo "$bin" ;;
esac
