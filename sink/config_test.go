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
	if c.Dialect != DialectMySQL || c.BatchSize != 500 || c.TableTemplate != "${table}" || c.SchemaTemplate != "${db}" || c.ProgressTable != "sluice_progress" || c.CopyThreshold != 1000 {
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
