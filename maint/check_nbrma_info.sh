#!/bin/sh
# check_nbrma_info.sh — part of `make check`: nbrma-info runs without mpiexec, its JSON
# parses and lists every setting the library reads, values from the environment show up,
# and no source reads the environment behind the settings table's back.
#
# Fails (exit 1) with a line per problem; ends with "N passed, N failed" (maint/test_totals.sh
# counts the checks).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
info=$top_builddir/src/tools/nbrma-info
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. Text output: the version line and both settings sections.
if "$info" >"$tmp/text" 2>&1 && grep -q "^nbrma [0-9]" "$tmp/text" &&
    grep -q "^Environment variables" "$tmp/text" && grep -q "^Window info keys" "$tmp/text"; then
    ok
else
    fail "nbrma-info (text): $(head -3 "$tmp/text")"
fi

# 2. JSON: parses; the settings the library's public names promise are there; values set
#    in the environment are reported as current (NBRMA_TRANSPORT also as the fallback of
#    the info key nbrma_transport); the UCX transports include self.
sed -n 's/^#define NBRMA_INFO_[A-Z_]* *"\([a-z_]*\)".*/\1/p' "$top_srcdir/include/nbrma.h" \
    >"$tmp/keys"
[ -s "$tmp/keys" ] || fail "no NBRMA_INFO_ keys found in include/nbrma.h"
if NBRMA_PROGRESS=thread NBRMA_TRANSPORT=ucx NBRMA_UCX_TLS=tcp,self "$info" --json \
    >"$tmp/json" 2>"$tmp/err"; then
    if python3 - "$tmp/json" "$tmp/keys" <<'EOF'; then ok; else fail "nbrma-info --json"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
settings = {s["name"]: s for s in doc["settings"]}
problems = []
for key in open(sys.argv[2]).read().split():
    if settings.get(key, {}).get("scope") != "window_info":
        problems.append("info key %s (include/nbrma.h) missing" % key)
for name in ("NBRMA_PROGRESS", "NBRMA_HELPERS", "NBRMA_HELPER", "NBRMA_NOTIFY_MAX",
             "NBRMA_TRANSPORT", "NBRMA_CMA", "NBRMA_VERBOSE", "NBRMA_UCX_*"):
    if settings.get(name, {}).get("scope") != "environment":
        problems.append("environment variable %s missing" % name)
expect = {"NBRMA_PROGRESS": "thread", "NBRMA_TRANSPORT": "ucx", "nbrma_transport": "ucx",
          "NBRMA_UCX_*": "NBRMA_UCX_TLS=tcp,self", "NBRMA_HELPERS": "1"}
for name, value in expect.items():
    if settings[name]["current"] != value:
        problems.append("%s current %r, expected %r" % (name, settings[name]["current"], value))
if settings["NBRMA_HELPERS"]["set"] or not settings["NBRMA_PROGRESS"]["set"]:
    problems.append("'set' flags wrong")
for s in doc["settings"]:
    for field in ("default", "allowed", "meaning"):
        if not isinstance(s[field], str) or (field != "default" and not s[field]):
            problems.append("%s: empty %s" % (s["name"], field))
if not any(u["transport"] == "self" for u in doc["node"]["ucx"]):
    problems.append("no UCX self transport listed")
if not doc["runtime"]["mpich"].startswith("MPICH"):
    problems.append("run-time MPICH version %r" % doc["runtime"]["mpich"])
if not doc["nbrma"]["version"]:
    problems.append("no version")
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
EOF
else
    fail "nbrma-info --json exited $?: $(cat "$tmp/err")"
fi

# 2b. Values a setting does not allow are flagged (text and JSON); an empty variable is
#     unset.
if NBRMA_PROGRESS=threads NBRMA_CMA=x NBRMA_HELPER= "$info" >"$tmp/bad" 2>&1 &&
    grep -q "NBRMA_PROGRESS = threads  \[NOT VALID\]" "$tmp/bad" &&
    grep -q "NBRMA_CMA = x  \[NOT VALID\]" "$tmp/bad" &&
    ! grep -q "NBRMA_HELPER = .*NOT VALID" "$tmp/bad" &&
    NBRMA_PROGRESS=threads NBRMA_HELPER= "$info" --json | python3 -c '
import json, sys
s = {x["name"]: x for x in json.load(sys.stdin)["settings"]}
assert s["NBRMA_PROGRESS"]["valid"] is False and s["NBRMA_HELPERS"]["valid"] is True
assert s["NBRMA_HELPER"]["set"] is False'; then
    ok
else
    fail "nbrma-info does not flag invalid values: $(grep -i valid "$tmp/bad" | head -3)"
fi

# 3. --man: one .TP entry per setting.
rows=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["settings"]))' \
    "$tmp/json" 2>/dev/null || echo 0)
entries=$("$info" --man | grep -c '^\.TP')
if [ "$entries" -gt 0 ] && [ "$entries" = "$rows" ]; then ok; else
    fail "nbrma-info --man: $entries entries for $rows settings"
fi

# 3b. --version: one line naming nbrma's version (configure's) and MPICH's.
version=$(sed -n 's/^PACKAGE_VERSION=.\(.*\).$/\1/p' "$top_builddir/config.log" 2>/dev/null | head -1)
line=$("$info" --version 2>&1)
if [ "$(printf '%s\n' "$line" | wc -l)" = 1 ] &&
    printf '%s\n' "$line" | grep -q "^nbrma-info (nbrma) ${version:-[0-9][0-9.]*}, for MPICH [0-9]"; then
    ok
else
    fail "nbrma-info --version: $line"
fi

# 4. A bad option is refused with status 2 and the usage.
"$info" --bogus >/dev/null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q "usage: nbrma-info" "$tmp/err"; then ok; else
    fail "nbrma-info --bogus"
fi

# 5. No source reads the environment but through the settings table.
readers=$(grep -rln 'getenv *(' "$top_srcdir/src" --include='*.cpp' --include='*.hpp' |
    grep -v -e 'src/common/settings\.cpp$')
if [ -z "$readers" ]; then ok; else fail "getenv outside src/common/settings.cpp: $readers"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
