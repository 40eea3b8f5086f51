package postgres

import (
	"errors"
	"strings"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Explain reads lib/pq's SQLSTATE codes.
func (Dialect) Explain(err error) dialect.ErrInfo {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return dialect.ErrInfo{}
	}
	info := dialect.ErrInfo{Driver: true}
	code := string(pe.Code)
	switch {
	case code == "23505" && (pe.Constraint == "pg_type_typname_nsp_index" || pe.Constraint == "pg_namespace_nspname_index"):
		// CREATE … IF NOT EXISTS racing another session: the catalogue's
		// unique index refuses the second
		info.Cond = dialect.CondExists
	case code == "23505":
		info.Cond = dialect.CondUniqueViolation
	case code == "42P01":
		info.Cond = dialect.CondUndefinedTable
	case code == "42703":
		info.Cond = dialect.CondUndefinedColumn
	case code == "42P07", code == "42P06": // duplicate table, duplicate schema
		info.Cond = dialect.CondExists
	case code == "42701":
		info.Cond = dialect.CondColumnExists
	}
	switch {
	case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "23"): // data exception, integrity violation
		info.Class = schema.ClassFatal
	case code == "42601", code == "42501", code == "42804", code == "42P10": // syntax, privilege, datatype mismatch, no unique constraint for ON CONFLICT
		info.Class = schema.ClassFatal
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "40"), strings.HasPrefix(code, "53"), strings.HasPrefix(code, "57"), code == "55P03":
		// connection, transaction rollback (deadlock, serialization),
		// insufficient resources, operator intervention, lock not available
		info.Class = schema.ClassRetriable
	}
	info.Login = pe.Code.Class() == "28" || code == "3D000" // invalid authorization, no such database
	return info
}
