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

// TestCapturedTablesDatabaseByDatabase: the tables listed at start, by
// the snapshot and by check, are those include takes, read database by
// database (views and databases outside include left out), a database
// whose name holds a dot included.
func TestCapturedTablesDatabaseByDatabase(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	other, dotted := db+"_other", db+".dot"
	for _, d := range []string{other, dotted} {
		exec(t, c, "CREATE DATABASE `"+d+"`")
		t.Cleanup(func() { _, _ = c.Execute("DROP DATABASE IF EXISTS `" + d + "`") })
	}
	exec(t, c, "CREATE TABLE a (id INT PRIMARY KEY)")
	exec(t, c, "CREATE TABLE b (id INT PRIMARY KEY)")
	exec(t, c, "CREATE VIEW v AS SELECT id FROM a")
	exec(t, c, "CREATE TABLE `"+other+"`.c (id INT PRIMARY KEY)")
	exec(t, c, "CREATE TABLE `"+dotted+"`.d (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	cfg.Include = []string{db + ".*", dotted + ".d"}
	src, err := NewSource(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := src.CapturedTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{db + ".a", db + ".b", dotted + ".d"}
	var names []string
	for _, id := range got {
		names = append(names, id.Database+"."+id.Table)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("CapturedTables: %q, want %q", names, want)
	}
	shapes, err := src.CapturedShapes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, s := range shapes {
		names = append(names, s.ID.Database+"."+s.ID.Table)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("CapturedShapes (the snapshot's list): %q, want %q", names, want)
	}
}
