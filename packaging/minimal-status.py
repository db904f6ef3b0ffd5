#!/usr/bin/python3
"""Prints a dpkg status file for a minimal Debian system: the installed
packages that are Essential or of Priority required, and everything they
depend on. `apt-get -s -o Dir::State::status=FILE install ./x.deb` then
shows what installing x.deb would pull in on a fresh machine, whatever
this machine has installed (.ci/steps/package.sh uses it).

Usage: python3 packaging/minimal-status.py >FILE"""
import re
import sys


def parse(text):
    """The paragraphs of a dpkg status file, as (fields, raw text)."""
    for raw in text.split("\n\n"):
        if not raw.strip():
            continue
        fields = {}
        for line in raw.split("\n"):
            m = re.match(r"^([A-Za-z0-9-]+):\s?(.*)$", line)
            if m:
                fields[m.group(1)] = m.group(2)
        if "Package" in fields:
            yield fields, raw


def names(relation):
    """Alternatives of each item of a Depends-like field, names only."""
    for item in relation.split(","):
        yield [a.strip().split(" ")[0].split(":")[0] for a in item.split("|") if a.strip()]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/var/lib/dpkg/status"
    with open(path, encoding="utf-8") as f:
        db = {}
        for fields, raw in parse(f.read()):
            if fields.get("Status", "").endswith(" installed"):
                db.setdefault(fields["Package"], []).append((fields, raw))
    provides = {}
    for name, entries in db.items():
        for fields, _ in entries:
            for alts in names(fields.get("Provides", "")):
                for virtual in alts:
                    provides.setdefault(virtual, set()).add(name)
    todo = [n for n, e in db.items()
            if any(f.get("Essential") == "yes" or f.get("Priority") == "required" for f, _ in e)]
    keep = set()
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        for fields, _ in db.get(name, []):
            for field in ("Pre-Depends", "Depends"):
                for alts in names(fields.get(field, "")):
                    for alt in alts:  # the first alternative that is there
                        if alt in db:
                            todo.append(alt)
                            break
                        if alt in provides:
                            todo.extend(provides[alt])
                            break
    for name in sorted(keep):
        for _, raw in db[name]:
            sys.stdout.write(raw.strip("\n") + "\n\n")


if __name__ == "__main__":
    main()
