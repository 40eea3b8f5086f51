package sink

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// A source transaction swapping two rows' values of a UNIQUE column through
// a temporary value applies (issue #10, problem 7: the reduced, key-sorted
// form violated the constraint and failed the pipeline for good); a
// violation the source could not have made is still reported.
func TestWriteUniqueSwapThroughTemporaryValue(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		// Default: groups this small are multi-row VALUES; CopyThreshold 1:
		// on PostgreSQL they merge through a rowset document.
		for _, copyThreshold := range []int{0, 1} {
			uq := fmt.Sprintf("uq_%d", copyThreshold)
			s := e.open(t, func(c *Config) { c.CopyThreshold = copyThreshold })
			if _, err := e.db.Exec("CREATE TABLE " + e.table(uq) + " (id BIGINT PRIMARY KEY, v VARCHAR(20) NULL UNIQUE)"); err != nil {
				t.Fatal(err)
			}
			write(t, s, cIns(uq, 1, "a"), cIns(uq, 2, "b"), cIns(uq, 3, "c"))
			// A: a -> tmp; B: b -> a; A: tmp -> b (and C joins in: c -> tmp2 -> c2).
			write(t, s, cUpd(uq, 1, 1, "a", "tmp"), cUpd(uq, 2, 2, "b", "a"), cUpd(uq, 3, 3, "c", "tmp2"), cUpd(uq, 1, 1, "tmp", "b"), cUpd(uq, 3, 3, "tmp2", "c2"))
			wantRows(t, e, uq, map[int64]string{1: "b", 2: "a", 3: "c2"})
			// A key that moves onto a value freed in the same batch.
			write(t, s, cDel(uq, 2), cIns(uq, 4, "a"))
			wantRows(t, e, uq, map[int64]string{1: "b", 3: "c2", 4: "a"})

			// Row 3 takes row 1's value, which the source (whose row 1 still
			// has it) cannot have done: the target's constraint is violated.
			err := s.Write(context.Background(), []schema.Record{cUpd(uq, 3, 3, "c2", "b")})
			if err == nil || !uniqueViolation(err) || !isFatal(err) {
				t.Fatalf("a duplicate the source cannot have made: err %v, want a permanent unique violation", err)
			}
			wantRows(t, e, uq, map[int64]string{1: "b", 3: "c2", 4: "a"})
			if copyThreshold == 1 {
				wantRowset(t, e, s, 0)
			}
		}
	})
}
