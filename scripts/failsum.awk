# Prints, for each test that failed in `go test` output, the lines that
# output gave under that test's name: first the last lines the code printed
# while it ran (slog lines below ERROR left out), then the test's own
# t.Log/t.Error lines, and at the very end the names of the failed tests.
# scripts/test.sh runs it over every go test output of the run when
# something failed, so the failure's own lines come last in a long log (CI
# keeps only the end of it).
#   awk -f scripts/failsum.awk [-v keep=40] [-v keepown=60] LOG...
#
# Without -v, a failed test's own lines follow its --- FAIL line indented;
# an unindented line after them is another test's stderr (the source's
# slog lines), not this test's: in session 17's CI those pushed the
# assertion out of the kept lines.
BEGIN { if (keep == "") keep = 40; if (keepown == "") keepown = 60 }
# The race detector's reports go to stderr before the --- FAIL line of
# the test that ran them ("race detected during execution of test"): the
# first few are kept whole.
/^WARNING: DATA RACE/ { inrace = 1; if (++nraces <= 3) race[nraces] = $0; next }
inrace {
  if (nraces <= 3 && racelines[nraces]++ < 40) race[nraces] = race[nraces] "\n" $0
  if ($0 ~ /^==================/) inrace = 0
  next
}
/^=== (RUN|NAME|CONT) / { cur = $3; afterfail = 0; inown = 0; next }
/^=== PAUSE / { next }
/^ *--- FAIL: / {
  name = $3
  if (!(name in failed)) { failed[name] = 1; order[++nf] = name }
  # Without -v a failed test's lines follow its --- FAIL line.
  if (!(name in count) && !(name in owncount)) { cur = name; afterfail = 1 }
  inown = 0
  next
}
/^ *--- (PASS|SKIP): / { if (afterfail) cur = ""; inown = 0; next }
/^(FAIL|ok|PASS)([ \t]|$)/ { cur = ""; afterfail = 0; inown = 0; next }
cur != "" {
  if (afterfail && $0 !~ /^[ \t]/) { cur = ""; afterfail = 0; inown = 0; next }
  # A test's own line: "    name_test.go:123: message" (or testing.go: a race); its message's
  # further lines are indented deeper.
  if ($0 ~ /^[ \t]+[A-Za-z0-9_.-]+\.go:[0-9]+: /) {
    inown = 1
    m = ++owncount[cur]; own[cur, m % keepown] = $0
    next
  }
  if (inown && $0 ~ /^(        |\t\t)/) {
    m = ++owncount[cur]; own[cur, m % keepown] = $0
    next
  }
  inown = 0
  if ($0 ~ /(^|[ \t|])time=[^ ]+ level=(DEBUG|INFO|WARN) /) next
  n = ++count[cur]
  buf[cur, n % keep] = $0
}
END {
  # Races first: the failed tests' own lines and names come last.
  for (i = 1; i <= nraces && i <= 3; i++) {
    printf "== DATA RACE %d of %d (its first 40 lines)\n", i, nraces
    print race[i]
  }
  for (i = 1; i <= nf; i++) {
    name = order[i]
    # A parent's lines are its children's summary; print leaves, and
    # parents only when no child of theirs failed.
    leaf = 1
    for (j = 1; j <= nf; j++) if (index(order[j], name "/") == 1) { leaf = 0; break }
    if (!leaf) { continue }
    leaves[++nl] = name
    n = count[name] + 0
    if (n) printf "== FAILED %s: the last %d of %d lines printed while it ran (slog below ERROR left out)\n", name, (n < keep ? n : keep), n
    start = (n > keep ? n - keep + 1 : 1)
    for (k = start; k <= n; k++) print "   | " buf[name, k % keep]
    m = owncount[name] + 0
    printf "== FAILED %s: its own last %d of %d lines (t.Log, t.Error)\n", name, (m < keepown ? m : keepown), m
    start = (m > keepown ? m - keepown + 1 : 1)
    for (k = start; k <= m; k++) print "   | " own[name, k % keepown]
  }
  if (nl) {
    printf "== failed tests:"
    for (i = 1; i <= nl; i++) printf " %s", leaves[i]
    printf "\n"
  }
}
