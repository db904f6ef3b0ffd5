# shellcheck shell=bash
# Usage: . scripts/lib/host-uri.sh, then host_uri SUITE
# Sourced: host_uri SUITE prints the URI of this machine's apt entry (deb)
# that carries SUITE (e.g. bookworm, bookworm-security), as apt itself reads
# its sources: the Debian mirror the machine already uses, so that no
# mirror's name is written in the repository (scripts/debian-root.sh,
# scripts/fork-debs.sh).
host_uri() {
  apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' | awk -v s="$1" '$2 == s && !n++ { sub("/$", "", $1); print $1 }'
}
