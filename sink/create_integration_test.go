package sink

import (
	"context"
	"sync"
	"testing"
)

// TestFirstStartsRaceOnTheProgressTable: sink processes starting together
// (`--only sink`, several) all start, although each creates the progress
// table; on PostgreSQL one used to fail for good with a duplicate key in
// pg_type, an integrity violation taken for a fatal error.
func TestFirstStartsRaceOnTheProgressTable(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		for round := range 5 {
			cfg := e.cfg
			cfg.ProgressTable = "sluice_progress_race_" + suffix()
			cfg.Transactional = true
			cfg.PendingTable = "sluice_pending_race_" + suffix()
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := New(context.Background(), cfg, nil)
					if err == nil {
						s.Close()
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			for _, c := range []string{"", "_barriers", "_barrier_arrivals", "_tables"} {
				e.db.Exec("DROP TABLE IF EXISTS " + cfg.ProgressTable + c)
			}
			e.db.Exec("DROP TABLE IF EXISTS " + cfg.PendingTable)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("round %d, start %d: %v", round, i, err)
				}
			}
		}
	})
}
