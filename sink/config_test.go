package sink

import (
	"errors"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func TestConfigNormalize(t *testing.T) {
	c := Config{Dialect: "mariadb", DSN: "x", Pipeline: "p"}
	if err := c.normalize(); err != nil {
		t.Fatal(err)
	}
	if c.Dialect != DialectMySQL || c.BatchSize != 500 || c.TableTemplate != "${table}" || c.SchemaTemplate != "${db}" || c.ProgressTable != "sluice_progress" || c.CopyThreshold != 256 {
		t.Fatalf("defaults not applied: %+v", c)
	}
	for name, bad := range map[string]Config{
		"dialect":     {Dialect: "oracle", DSN: "x", Pipeline: "p"},
		"dsn":         {Dialect: "postgres", Pipeline: "p"},
		"pipeline":    {Dialect: "postgres", DSN: "x"},
		"placeholder": {Dialect: "postgres", DSN: "x", Pipeline: "p", TableTemplate: "${schema}_${table}"},
		"unclosed":    {Dialect: "postgres", DSN: "x", Pipeline: "p", SchemaTemplate: "${db"},
	} {
		if err := bad.normalize(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", name, err)
		}
	}
	d := DefaultConfig()
	d.TableTemplate = "${db}__${table}"
	if got := d.target(schema.TableID{Database: "shop", Table: "orders"}); got != (target{Schema: "shop", Table: "shop__orders"}) {
		t.Fatalf("target %+v", got)
	}
}

func TestConfigPolicies(t *testing.T) {
	c := Config{Dialect: "postgres", DSN: "x", Pipeline: "p"}
	if err := c.normalize(); err != nil {
		t.Fatal(err)
	}
	if c.SchemaChanges != SchemaChangesIgnore || c.OnError != OnErrorFail || c.KeylessMode != KeylessBeforeImage || c.PendingTable != "sluice_pending" || c.TimeAsInterval || c.Transactional {
		t.Fatalf("zero values must mean the previous behaviour: %+v", c)
	}
	d := DefaultConfig()
	if d.SchemaChanges != c.SchemaChanges || d.OnError != c.OnError || d.KeylessMode != c.KeylessMode || d.PendingTable != c.PendingTable {
		t.Fatalf("DefaultConfig and the zero value disagree: %+v", d)
	}
	ok := Config{Dialect: "postgres", DSN: "x", Pipeline: "p", SchemaChanges: "APPLY", OnError: "Skip", KeylessMode: "append"}
	if err := ok.normalize(); err != nil || ok.SchemaChanges != SchemaChangesApply || ok.OnError != OnErrorSkip {
		t.Fatalf("case-insensitive policies: %v %+v", err, ok)
	}
	for name, bad := range map[string]Config{
		"schema changes": {Dialect: "postgres", DSN: "x", Pipeline: "p", SchemaChanges: "maybe"},
		"on error":       {Dialect: "postgres", DSN: "x", Pipeline: "p", OnError: "retry"},
		"dlq callback":   {Dialect: "postgres", DSN: "x", Pipeline: "p", OnError: "dlq"},
		"keyless":        {Dialect: "postgres", DSN: "x", Pipeline: "p", KeylessMode: "upsert"},
	} {
		if err := bad.normalize(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", name, err)
		}
	}
}
