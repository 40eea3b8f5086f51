package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestSQLStoreFirstStartsRace: several first starts creating the positions
// table at once all succeed (on PostgreSQL, CREATE TABLE IF NOT EXISTS
// racing another fails with a duplicate in pg_type, which was reported as
// "check the DSN and that the user may create tables").
func TestSQLStoreFirstStartsRace(t *testing.T) {
	for driver, dsn := range sqlStoreTargets(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			for round := range 5 {
				table := fmt.Sprintf("sluice_positions_race_%d", rand.Uint32())
				var wg sync.WaitGroup
				errs := make([]error, 6)
				stores := make([]*SQLStore, len(errs))
				for i := range errs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						stores[i], errs[i] = NewSQLStore(ctx, driver, dsn, table)
					}()
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d, start %d: %v", round, i, err)
					}
				}
				for _, s := range stores {
					if s != nil {
						_, _ = s.db.Exec("DROP TABLE IF EXISTS " + table)
						s.Close()
					}
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}
