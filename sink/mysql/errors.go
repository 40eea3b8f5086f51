package mysql

import (
	"errors"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Explain reads go-sql-driver/mysql's server error numbers.
func (Dialect) Explain(err error) dialect.ErrInfo {
	var me *mysqldrv.MySQLError
	if !errors.As(err, &me) {
		return dialect.ErrInfo{}
	}
	info := dialect.ErrInfo{Driver: true}
	switch me.Number {
	case 1062: // duplicate entry
		info.Cond = dialect.CondUniqueViolation
	case 1146: // no such table
		info.Cond = dialect.CondUndefinedTable
	case 1054, 1091: // unknown column; cannot DROP, it does not exist
		info.Cond = dialect.CondUndefinedColumn
	case 1050: // table exists
		info.Cond = dialect.CondExists
	case 1060: // duplicate column name
		info.Cond = dialect.CondColumnExists
	}
	switch me.Number {
	case 1048, 1062, 1064, 1142, 1264, 1265, 1292, 1366, 1406, 1411, 3140, 4025, // bad data, constraint, syntax, privilege
		1071, 1074, 1118, 1170: // DDL the server refuses: key or row too long, TEXT/BLOB key
		info.Class = schema.ClassFatal
	case 1205, 1213: // lock wait timeout, deadlock
		info.Class = schema.ClassRetriable
	}
	switch me.Number {
	case 1044, 1045, 1049, 1698: // access denied to the database, for the user; unknown database
		info.Login = true
	}
	return info
}
