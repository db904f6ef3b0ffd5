#!/bin/sh
# Usage: cmake/news-to-changelog.sh NEWS VERSION OUTDIR
# Writes OUTDIR/changelog.gz (NEWS
# itself, the upstream changelog) and OUTDIR/changelog.Debian.gz (every NEWS
# entry in Debian's changelog format, newest first), both compressed
# reproducibly (gzip -9n). VERSION is the Debian version of the newest entry
# (e.g. 0.1.0-1); older entries get their release's version with -1.
# NEWS entries look like: "* opmsg X.Y.Z (YYYY-MM-DD)", then "  - " items
# whose continuation lines are indented by four spaces.
set -eu
news=$1
version=$2
out=$3
maint="opmsg maintainers <maintainers@opmsg.invalid>"
mkdir -p "$out"
gzip -9n < "$news" > "$out/changelog.gz"

# The date of entry number $2 (0 the newest) in RFC 5322 form: noon UTC of
# the day NEWS gives, less a minute per entry above it, so that releases of
# one day still come out in order (lintian wants the newest entry newer).
rfc_date() {
  case $1 in
    [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]) d=$1 ;;
    *) echo "news-to-changelog: no date in NEWS entry ($1); using 1970-01-01" >&2
       d=1970-01-01 ;;
  esac
  LC_ALL=C date -u -d "$d 12:00 UTC $2 minutes ago" '+%a, %d %b %Y %H:%M:%S +0000'
}

# A leading "* Unreleased" entry holds the items of the version being built
# (VERSION), when NEWS has no entry of that version yet: its distribution
# is UNRELEASED, as dch writes one, and it has no date of its own, so it
# takes the newest release's day (the entries below it a minute earlier
# each, see rfc_date()): the package stays reproducible from the tree.
newest=$(sed -n 's/^\* opmsg \([^ ]*\).*/\1/p' "$news" | head -n 1)
unreleased=0
if [ "$newest" != "${version%-*}" ]; then
  if [ "$(sed -n '/^\* /{p;q}' "$news")" = "* Unreleased" ]; then
    unreleased=1
  else
    echo "news-to-changelog: the newest NEWS entry is ${newest:-missing}, the version ${version%-*}" >&2
  fi
fi

{
  entries=0
  last=""
  while IFS= read -r line; do
    case $line in
      '* Unreleased')
        [ $unreleased -eq 1 ] && [ $entries -eq 0 ] || continue
        printf 'opmsg (%s) UNRELEASED; urgency=medium\n\n' "$version"
        entries=1
        ;;
      '* opmsg '*)
        date=$(printf '%s\n' "$line" | sed -n 's/.*(\([0-9-]*\)).*/\1/p')
        if [ $entries -gt 0 ]; then
          # The unreleased entry's date is this first release's.
          [ -n "${last:-}" ] || last=$date
          printf '\n -- %s  %s\n\n' "$maint" "$(rfc_date "$last" $((entries - 1)))"
        fi
        last=$date
        ver=$(printf '%s\n' "$line" | sed -n 's/^\* opmsg \([^ ]*\).*/\1/p')
        if [ $entries -eq 0 ]; then debver=$version; else debver=$ver-1; fi
        printf 'opmsg (%s) unstable; urgency=medium\n\n' "$debver"
        entries=$((entries + 1))
        ;;
      '  - '*)
        [ $entries -gt 0 ] && printf '  * %s\n' "${line#  - }"
        ;;
      '    '*)
        [ $entries -gt 0 ] && printf '%s\n' "$line"
        ;;
    esac
  done < "$news"
  if [ $entries -eq 0 ]; then
    echo "news-to-changelog: no '* opmsg X.Y.Z (date)' entry in $news" >&2
    exit 1
  fi
  printf '\n -- %s  %s\n' "$maint" "$(rfc_date "$last" $((entries - 1)))"
} > "$out/changelog.Debian"
gzip -9nf "$out/changelog.Debian"
