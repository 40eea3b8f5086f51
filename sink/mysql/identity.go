package mysql

import (
	"context"
	"database/sql"
	"regexp"

	"github.com/sluicecdc/sluice/sink/dialect"
)

// innodbIDs is where Verify found InnoDB's table ids: TRUNCATE TABLE (which
// drops and creates the table), a drop and create, OPTIMIZE TABLE and an
// ALTER TABLE that rebuilds it give the table a new one.
type innodbIDs struct {
	view string // information_schema.INNODB_TABLES (MySQL) or INNODB_SYS_TABLES (MariaDB); "" when unreadable
	db   string // the connection's default database
}

// findInnoDBIDs looks for the view of InnoDB's tables: MySQL 8 and later
// name it INNODB_TABLES, MariaDB INNODB_SYS_TABLES; both need the PROCESS
// privilege. Without either, tables have no identity (a truncation behind
// the sink is not noticed).
func (d Dialect) findInnoDBIDs(ctx context.Context, db *sql.DB, defaultDB string) {
	if d.ids == nil {
		return
	}
	d.ids.db, d.ids.view = defaultDB, ""
	for _, v := range []string{"information_schema.INNODB_TABLES", "information_schema.INNODB_SYS_TABLES"} {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+v+" WHERE NAME = ''").Scan(&n); err == nil {
			d.ids.view = v
			return
		}
	}
}

// innodbPlain matches names InnoDB keeps as they are in its NAME column
// (schema/table); others are encoded (@00xx) and not looked up.
var innodbPlain = regexp.MustCompile(`^[0-9A-Za-z_]+$`)

// TableIdentity is the table's InnoDB table id; "" when Verify found no
// view of them (no PROCESS privilege) or t's name has characters InnoDB
// encodes.
func (d Dialect) TableIdentity(t target) string {
	if d.ids == nil || d.ids.view == "" {
		return ""
	}
	db := t.Schema
	if db == "" {
		db = d.ids.db
	}
	if !innodbPlain.MatchString(db) || !innodbPlain.MatchString(t.Table) {
		return ""
	}
	return "(SELECT CAST(TABLE_ID AS CHAR) FROM " + d.ids.view + " WHERE NAME = " + d.StringLiteral(db+"/"+t.Table) + ")"
}

func (d Dialect) TablesMigrate(table string) string {
	return "ALTER TABLE " + d.Quote(table) + " ADD COLUMN ident VARCHAR(64) NULL"
}

var _ dialect.Control = Dialect{}
