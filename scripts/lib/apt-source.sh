# shellcheck shell=bash
# Usage: . scripts/lib/apt-source.sh, then apt_source PACKAGE VERSION DEST
# Sourced: `apt-get source` of a package of this machine's release, through a
# private apt configuration: deb-src entries made from the machine's own apt
# sources (the entries for its release), with their own lists and cache in
# $apt_source_dir (the caller sets it; default build/apt-source). Nothing
# under /etc/apt changes.
#
#   apt_source PACKAGE VERSION DEST
#       fetches and unpacks the source package into DEST (emptied first;
#       DEST.log keeps apt's output) and prints the version it got: VERSION,
#       or, when the mirror no longer has it, the newest of the same upstream
#       version (the caller says so). Returns 1 with a message on stderr
#       when it cannot.
# Needs dpkg-dev (dpkg-source) and root (apt-get update of the private lists).

: "${apt_source_dir:=build/apt-source}"

_apt_source_opts() {
  local d
  d=$(realpath -m "$apt_source_dir")
  printf '%s\n' -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$d/sources.list.d" \
    -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" \
    -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=/dev/null" \
    -o "APT::Sandbox::User=root" -o "Acquire::Languages=none"
}

deb_src_entries() {
  local codename f
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 0
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    case $f in
      *.sources)
        # deb822: every enabled "deb" stanza with a suite of this release.
        awk -v want="$codename" '
          function flush(   n, s, i, ok) {
            if (uris != "" && types ~ /(^| )deb( |$)/ && enabled != "no") {
              n = split(suites, s, " "); ok = ""
              for (i = 1; i <= n; i++)
                if (s[i] == want || index(s[i], want "-") == 1) ok = ok " " s[i]
              if (ok != "") {
                print "Types: deb-src"; print "URIs:" uris; print "Suites:" ok
                print "Components:" comps
                if (signed != "") print "Signed-By:" signed
                print ""
              }
            }
            uris = ""; suites = ""; types = ""; comps = ""; signed = ""; enabled = ""
          }
          /^[ \t]*$/ { flush(); next }
          /^#/ { next }
          { key = tolower($1); val = $0; sub(/^[^:]*:/, "", val) }
          key == "types:" { types = val " " }
          key == "uris:" { uris = val }
          key == "suites:" { suites = val }
          key == "components:" { comps = val }
          key == "signed-by:" { signed = val }
          key == "enabled:" { gsub(/ /, "", val); enabled = tolower(val) }
          END { flush() }' "$f"
        ;;
      *)
        # one-line: "deb [options] URI SUITE COMPONENTS..."
        awk -v want="$codename" '
          $1 == "deb" {
            line = $0; sub(/^deb/, "deb-src", line)
            i = 2
            if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
            s = $(i + 1)
            if (s == want || index(s, want "-") == 1) print line
          }' "$f" | sed '1s/^/#LIST\n/'
        ;;
    esac
  done
}

apt_source() {  # PACKAGE VERSION DEST
  local pkg=$1 want=$2 dest entries avail chosen dir opts=()
  dest=$(realpath -m "$3")
  dir=$apt_source_dir
  command -v dpkg-source >/dev/null ||
    { echo "apt-source: dpkg-source is missing (apt-get install dpkg-dev)" >&2; return 1; }
  mapfile -t opts < <(_apt_source_opts)
  mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
  entries=$(deb_src_entries)
  [ -n "$entries" ] ||
    { echo "apt-source: no Debian entry for this release in /etc/apt/sources.list{,.d}: cannot make a deb-src entry" >&2; return 1; }
  rm -f "$dir/sources.list.d/"*
  # One-line entries go to a .list file, deb822 ones to a .sources file.
  awk '/^#LIST$/ {mode = 1; next} mode == 1 && /^deb-src / {print > L; next} {print > S}' \
    L="$dir/sources.list.d/deb-src.list" S="$dir/sources.list.d/deb-src.sources" <<<"$entries"
  echo "apt-source: deb-src entries from this machine's sources (private configuration in $dir)" >&2
  apt-get "${opts[@]}" -q update >"$dir/update.log" 2>&1 ||
    { tail -n 20 "$dir/update.log" >&2; echo "apt-source: apt-get update (deb-src) failed" >&2; return 1; }
  avail=$(apt-cache "${opts[@]}" showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | sort -u)
  chosen=""
  if grep -qxF "$want" <<<"$avail"; then
    chosen=$want
  else
    # The same upstream version with another Debian revision.
    local upstream=${want#*:}
    upstream=${upstream%-*}
    chosen=$(grep -E "^([0-9]+:)?${upstream//./\\.}-" <<<"$avail" | sort -V | tail -n 1 || true)
    [ -n "$chosen" ] ||
      { echo "apt-source: $pkg $want is not on the mirror (it has: $(echo $avail))" >&2; return 1; }
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  (cd "$dest" && apt-get "${opts[@]}" -q source --only-source "$pkg=$chosen" >"$dest.log" 2>&1) ||
    { tail -n 20 "$dest.log" >&2; echo "apt-source: apt-get source $pkg=$chosen failed" >&2; return 1; }
  echo "$chosen"
}
