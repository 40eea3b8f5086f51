package sink

import (
	"fmt"

	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// The dialects a target's type names, and the names each also answers to.
// The core holds the one it picked as a dialect.Dialect and never asks
// which it is: SQL, types, catalogue and driver errors live with it
// (sink/postgres, sink/mysql).
var dialects = map[string]func(dialect.Options) dialect.Dialect{
	DialectPostgres: func(o dialect.Options) dialect.Dialect { return postgres.New(o) },
	DialectMySQL:    func(o dialect.Options) dialect.Dialect { return mysql.New(o) },
}

var dialectAliases = map[string]string{"postgresql": DialectPostgres, "pg": DialectPostgres, "mariadb": DialectMySQL}

// dialectName is the registered name of n (an alias resolved), or false.
func dialectName(n string) (string, bool) {
	if a, ok := dialectAliases[n]; ok {
		n = a
	}
	_, ok := dialects[n]
	return n, ok
}

// newDialect returns the dialect cfg names, with its options.
func newDialect(cfg *Config) (dialect.Dialect, error) {
	mk, ok := dialects[cfg.Dialect]
	if !ok {
		return nil, fmt.Errorf("%w: dialect %q: use %q or %q", ErrConfig, cfg.Dialect, DialectPostgres, DialectMySQL)
	}
	return mk(dialect.Options{TimeAsInterval: cfg.TimeAsInterval, EnumCheck: cfg.EnumCheck}), nil
}

// Names of the core for the dialect's shared pieces.
type (
	target     = dialect.Target
	colDef     = dialect.ColDef
	colInfo    = dialect.ColInfo
	typeChange = dialect.TypeChange
)

const (
	typeSame   = dialect.TypeSame
	typeWiden  = dialect.TypeWiden
	typeKeep   = dialect.TypeKeep
	typeDiffer = dialect.TypeDiffer
)

var (
	qualified  = dialect.Qualified
	columnList = dialect.ColumnList
	valuesList = dialect.ValuesList
	deleteSQL  = dialect.DeleteSQL
	insertSQL  = dialect.InsertSQL
	isKey      = dialect.IsKey
	valueErr   = dialect.ValueErr
)

// explainers are the dialects' readings of driver errors. A driver error
// is of one driver's type, so the dialect that knows it answers and the
// others pass: the core classifies errors without asking which dialect it
// has.
var explainers = func() []func(error) dialect.ErrInfo {
	var out []func(error) dialect.ErrInfo
	for _, mk := range dialects {
		out = append(out, mk(dialect.Options{}).Explain)
	}
	return out
}()

// explainErr is the reading of err by the dialect whose driver made it;
// the zero ErrInfo when none did.
func explainErr(err error) dialect.ErrInfo {
	if err == nil {
		return dialect.ErrInfo{}
	}
	for _, e := range explainers {
		if info := e(err); info.Driver {
			return info
		}
	}
	return dialect.ErrInfo{}
}

// errIs reports a driver error of condition c.
func errIs(err error, c dialect.Cond) bool { return explainErr(err).Cond == c }
