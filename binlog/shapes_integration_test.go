package binlog

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestCapturedShapes: the shapes the source lists at start, before Open,
// are those its records carry (the snapshot's value schemas, excluded
// columns left out) with the primary key; a keyless table has none.
func TestCapturedShapes(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE keyed (id INT PRIMARY KEY, j JSON, secret VARCHAR(20), d DECIMAL(5,2))")
	exec(t, c, "CREATE TABLE keyless (n BIGINT, g GEOMETRY, s VARCHAR(10))")
	exec(t, c, "INSERT INTO keyed VALUES (1, '{}', 'x', 1.5)")
	exec(t, c, "INSERT INTO keyless VALUES (1, NULL, 'a')")
	cfg := testConfig(env, db)
	cfg.ExcludeColumns = []string{db + ".keyed.secret"}
	cfg.Snapshot = SnapshotInitialOnly
	src, err := NewSource(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shapes, err := src.CapturedShapes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) != 2 || shapes[0].ID.Table != "keyed" || shapes[1].ID.Table != "keyless" {
		t.Fatalf("shapes %+v, want keyed and keyless", shapes)
	}
	if !slices.Equal(shapes[0].PrimaryKey, []string{"id"}) || len(shapes[1].PrimaryKey) != 0 {
		t.Fatalf("primary keys %v and %v, want [id] and none", shapes[0].PrimaryKey, shapes[1].PrimaryKey)
	}
	recs, _ := readSnapshot(t, openSource(t, cfg, nil))
	seen := 0
	for _, sh := range shapes {
		for _, r := range recs {
			if r.Table != sh.ID {
				continue
			}
			seen++
			if want := sh.ValueSchema(r.ValueSchema.Name); !want.Equal(r.ValueSchema) {
				t.Errorf("%s: listed shape %s, its snapshot row carries %s", sh.ID, want, r.ValueSchema)
			}
			if (r.KeySchema == nil) != (len(sh.PrimaryKey) == 0) {
				t.Errorf("%s: key schema %v, listed key %v", sh.ID, r.KeySchema, sh.PrimaryKey)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d snapshot rows of the listed tables, want 2", seen)
	}
	for _, col := range shapes[0].Columns {
		if col.Name == "secret" {
			t.Fatal("the excluded column secret is in the listed shape")
		}
	}
}
