package schema

import "fmt"

// Problem is one failed check of a server or account a pipeline uses, as
// `sluice check` prints it: what was checked, what is wrong, how to fix it.
type Problem struct {
	Check  string // short name of the check, e.g. "binlog_format"
	Detail string // what is wrong
	Fix    string // how to fix it
	// Warning marks a problem that does not stop the pipeline (it runs,
	// with a weaker guarantee or an unverified assumption).
	Warning bool
}

func (p Problem) String() string {
	level := "FAIL"
	if p.Warning {
		level = "WARN"
	}
	return fmt.Sprintf("%s %s: %s; fix: %s", level, p.Check, p.Detail, p.Fix)
}
