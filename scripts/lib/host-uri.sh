# Sourced: host_uri SUITE prints the URI of this machine's apt entry (deb,
# in /etc/apt/sources.list{,.d}: deb822 .sources or one-line .list files)
# that carries SUITE (e.g. bookworm, bookworm-security): the Debian mirror
# the machine already uses, so that no mirror's name is written in the
# repository (scripts/debian-root.sh, scripts/fork-debs.sh).
host_uri() {
  local codename=$1 files f
  files=$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  for f in $files; do
    case $f in
      *.sources)
        awk -v want="$codename" '
          function flush() {
            if (uri != "" && types ~ /(^| )deb( |$)/) {
              n = split(suites, s, " ")
              for (i = 1; i <= n; i++) if (s[i] == want) { print uri; exit }
            }
            uri = ""; suites = ""; types = ""
          }
          /^[ \t]*$/ { flush(); next }
          /^#/ { next }
          tolower($1) == "types:" { $1 = ""; types = $0 }
          tolower($1) == "uris:" { uri = $2 }
          tolower($1) == "suites:" { $1 = ""; suites = $0 " " }
          END { flush() }' "$f"
        ;;
      *)
        awk -v want="$codename" '
          $1 == "deb" {
            i = 2
            if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
            if ($(i + 1) == want) { print $i; exit }
          }' "$f"
        ;;
    esac
  done | head -n 1
}

