package sink

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Check verifies that a sink with cfg can run against its target, for
// `sluice check`: the target is reachable and takes the login, and in the
// connection's default schema (the progress table's) and in the schema
// every table of tables maps to, the account may create a table (and the
// schema, under AutoCreate) and add a column to it. The probe leaves
// nothing behind: on PostgreSQL it runs in a transaction rolled back; on
// MySQL, whose DDL commits, it drops the table (and a database it made).
// It returns nil when every check passes.
func Check(ctx context.Context, cfg Config, tables []schema.TableID) []schema.Problem {
	var out []schema.Problem
	fail := func(check, detail, fix string) {
		out = append(out, schema.Problem{Check: check, Detail: detail, Fix: fix})
	}
	if err := cfg.normalize(); err != nil {
		fail("target_config", err.Error(), "correct the sink section of the config")
		return out
	}
	d, err := newDialect(&cfg)
	if err != nil {
		fail("target_config", err.Error(), "correct the sink section of the config")
		return out
	}
	db, err := connect(ctx, d, &cfg)
	if err != nil {
		err = secure.RedactDSNError(err, cfg.DSN)
		if explainErr(err).Login || errors.Is(err, ErrConfig) {
			fail("target_login", err.Error(), "fix the user, password or database of sink.dsn, or the TLS keys")
		} else {
			fail("target_reachable", err.Error(), "check the host and port of sink.dsn and that the server is up")
		}
		return out
	}
	defer db.Close()
	def, err := d.Verify(ctx, db.DB, cfg.ProgressTable)
	if err != nil {
		fail("target_server", secure.RedactDSNError(err, cfg.DSN).Error(), "use a supported server and name a database in sink.dsn")
		return out
	}
	schemas := []string{""} // the progress and barrier tables'
	for _, id := range tables {
		if s := cfg.target(id).Schema; !slices.Contains(schemas, s) {
			schemas = append(schemas, s)
		}
	}
	for _, s := range schemas {
		if err := probeDDL(ctx, db.DB, d, cfg, s); err != nil {
			name := s
			if name == "" {
				name = def
			}
			fail("target_privileges", fmt.Sprintf("cannot create and alter a table in %s %q: %v", d.Name(), name, err),
				"grant the sink's user the right to create tables (and schemas, under auto_create) there and to alter them, or change sink.schema")
		}
	}
	return out
}

// probeDDL creates a table in schema s (the default schema for ""; s
// itself first under AutoCreate) and adds a column to it, then undoes both.
func probeDDL(ctx context.Context, db *sql.DB, d dialect.Dialect, cfg Config, s string) error {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	t := dialect.Target{Schema: s, Table: "sluice_check_" + hex.EncodeToString(b)}
	q := dialect.Qualified(d, t)
	stmts := []string{"CREATE TABLE " + q + " (id INT PRIMARY KEY)", "ALTER TABLE " + q + " ADD COLUMN v INT"}
	if cfg.Dialect == DialectPostgres { // DDL is transactional: roll it all back
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if s != "" && cfg.AutoCreate {
			stmts = append([]string{d.CreateSchema(s)}, stmts...)
		}
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}
	undo := []string{"DROP TABLE IF EXISTS " + q}
	if s != "" {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", s).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if !cfg.AutoCreate {
				return fmt.Errorf("the database does not exist and auto_create is off")
			}
			stmts = append([]string{"CREATE DATABASE " + d.Quote(s)}, stmts...)
			undo = append(undo, "DROP DATABASE IF EXISTS "+d.Quote(s))
		}
	}
	defer func() {
		for _, st := range undo {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), st)
		}
	}()
	for i, st := range stmts {
		if _, err := db.ExecContext(ctx, st); err != nil {
			if i == 0 && len(undo) == 2 {
				undo = undo[:1] // the database was not made here: leave it
			}
			return err
		}
	}
	return nil
}
