# Prints, for each test that failed in `go test -v` output, the last lines
# that output gave under that test's name (its t.Log/t.Error lines and what
# the code printed while it ran). scripts/test.sh runs it over every go test
# output of the run when something failed, so the failure's own lines come
# last in a long log (CI keeps the end of it).
#   awk -f scripts/failsum.awk [-v keep=40] LOG...
BEGIN { if (keep == "") keep = 40 }
/^=== (RUN|NAME|CONT) / { cur = $3; next }
/^=== PAUSE / { next }
/^ *--- FAIL: / {
  name = $3
  if (!(name in failed)) { failed[name] = 1; order[++nf] = name }
  # Without -v a failed test's lines follow its --- FAIL line.
  if (!(name in count)) cur = name
  next
}
/^ *--- (PASS|SKIP): / { next }
/^(FAIL|ok|PASS)([ \t]|$)/ { cur = ""; next }
cur != "" {
  n = ++count[cur]
  buf[cur, n % keep] = $0
}
END {
  for (i = 1; i <= nf; i++) {
    name = order[i]
    # A parent's lines are its children's summary; print leaves, and
    # parents only when no child of theirs failed.
    leaf = 1
    for (j = 1; j <= nf; j++) if (index(order[j], name "/") == 1) { leaf = 0; break }
    if (!leaf) continue
    n = count[name] + 0
    printf "== FAILED %s: its last %d of %d lines\n", name, (n < keep ? n : keep), n
    start = (n > keep ? n - keep + 1 : 1)
    for (k = start; k <= n; k++) print "   | " buf[name, k % keep]
  }
}
