package binlog

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// Problem is one failed check of the server or account a Config uses
// (schema.Problem, which the sink's and the transport's checks share).
type Problem = schema.Problem

// SourcePrivileges is the one list of privileges a source's account needs
// (RELOAD only for a MySQL snapshot's FLUSH TABLES WITH READ LOCK; SELECT
// may be granted per database or table instead). README's GRANT,
// docs/source-setup.md, the examples, scripts/servers.sh's accounts and
// Check's advice give this list; TestSourceGrantListIsOne fails when one
// of them differs.
const SourcePrivileges = "SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT"

// grantAdvice is Check's fix for a missing global privilege: the whole list,
// so an account fixed by it lacks nothing else.
func grantAdvice(account string) string {
	return "GRANT " + SourcePrivileges + " ON *.* TO " + account
}

// Check verifies, without changing anything, that a source with cfg can
// run: the server is reachable and the login works, the binlog is on with
// ROW format, FULL row image and FULL row metadata, cfg.ServerID is neither
// the server's own nor another connected replica's, GTIDs are strict (a
// warning), the account has REPLICATION SLAVE, REPLICATION CLIENT (BINLOG
// MONITOR) and SELECT on the included tables, and every included table has a
// primary key. It returns nil when every check passes. Privileges granted
// through roles are not followed.
func Check(ctx context.Context, cfg Config) []Problem {
	var out []Problem
	add := func(check, detail, fix string) { out = append(out, Problem{Check: check, Detail: detail, Fix: fix}) }
	warn := func(check, detail, fix string) {
		out = append(out, Problem{Check: check, Detail: detail, Fix: fix, Warning: true})
	}
	if err := cfg.validate(); err != nil {
		add("config", err.Error(), "correct the source section of the config")
		return out
	}
	addr := (&Source{cfg: cfg}).addr()
	conn, err := dialServer(ctx, &cfg, tlsFor(&cfg), nil)
	if err != nil {
		if isTLSFailure(err) {
			add("tls", err.Error(), "match ssl_mode and ssl_ca to the server's certificate")
			return out
		}
		if code, ok := serverErrorCode(err); ok && code == mysql.ER_ACCESS_DENIED_ERROR {
			add("login", fmt.Sprintf("the server at %s refused user %s: %v", addr, cfg.User, err),
				"check user and password, and that the account may connect from this host (CREATE USER 'name'@'host')")
		} else {
			add("reachable", fmt.Sprintf("cannot connect to %s: %v", addr, err),
				"check host and port, that the server is running and that it listens on that address")
		}
		return out
	}
	defer conn.Close()
	// go-mysql's queries take no context: a check past its time closes
	// the socket (not the client, whose Close is not safe beside a query),
	// and the query waiting on it returns.
	defer context.AfterFunc(ctx, func() { _ = conn.Conn.Conn.Close() })()

	v := serverVars(conn, "log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "server_id", "gtid_strict_mode", "gtid_mode")
	if on := v["log_bin"]; on != "1" && !strings.EqualFold(on, "ON") {
		add("log_bin", "the binary log is off", "start the server with log-bin (and server-id) in its config file, then restart it")
	}
	if f := v["binlog_format"]; !strings.EqualFold(f, "ROW") {
		add("binlog_format", fmt.Sprintf("binlog_format is %q, not ROW", f), "set binlog_format=ROW in the server's config (SET GLOBAL binlog_format='ROW' until restart)")
	}
	if f := v["binlog_row_image"]; !strings.EqualFold(f, "FULL") {
		add("binlog_row_image", fmt.Sprintf("binlog_row_image is %q, not FULL", f), "set binlog_row_image=FULL in the server's config")
	}
	if f, ok := v["binlog_row_metadata"]; !ok || !strings.EqualFold(f, "FULL") {
		const fix = "set binlog_row_metadata=FULL in the server's config (SET GLOBAL binlog_row_metadata=FULL until restart)"
		switch {
		case !ok:
			add("binlog_row_metadata", "the server has no binlog_row_metadata setting (MariaDB >= 10.5 or MySQL >= 8.0.1 needed)", fix)
		case cfg.historyStore() != nil || cfg.HistoryStore == HistoryInDatabase:
			// MINIMAL (MySQL's default): runs with the schema history
			warn("binlog_row_metadata", fmt.Sprintf("binlog_row_metadata is %q: table maps carry no column names, keys or ENUM/SET labels, so the source takes them from its schema history, which must be kept with the positions and see every DDL of the captured tables", f),
				"keep the schema history (history_file) with the positions, or "+fix)
		default:
			add("binlog_row_metadata", fmt.Sprintf("binlog_row_metadata is %q, not FULL: table maps carry no column names, and the source has no schema history to take them from", f),
				fix+", or set history_file in the source section (a schema history, seeded from SHOW CREATE TABLE, supplies the names)")
		}
	}
	if id := v["server_id"]; id == fmt.Sprint(cfg.ServerID) {
		add("server_id", fmt.Sprintf("server_id %d is the server's own", cfg.ServerID), "choose another server_id for the source")
	}
	out = append(out, durabilityProblems(conn)...)
	out = append(out, checkReplicas(conn, cfg)...)
	if cfg.Flavor == FlavorMariaDB {
		if s := v["gtid_strict_mode"]; s != "1" && !strings.EqualFold(s, "ON") {
			warn("gtid", "gtid_strict_mode is off: positions fall back to file and offset, which do not survive a failover",
				"set gtid_strict_mode=ON in the server's config")
		}
	} else if s := v["gtid_mode"]; !strings.EqualFold(s, "ON") {
		// OFF, OFF_PERMISSIVE, ON_PERMISSIVE: the source runs and resumes by
		// file and offset (MySQL auto-positions by GTID only with ON).
		warn("gtid", fmt.Sprintf("gtid_mode is %q: the source resumes by binlog file and offset (GTID auto-positioning needs gtid_mode=ON), which does not survive a failover to another server", s),
			"step gtid_mode up to ON (OFF_PERMISSIVE, ON_PERMISSIVE, ON, with enforce_gtid_consistency=ON) and keep gtid_mode=ON and enforce_gtid_consistency=ON in the server's config")
	}
	account := "the source's account"
	if r, err := conn.Execute("SELECT CURRENT_USER()"); err == nil && r.RowNumber() > 0 {
		cu, _ := r.GetString(0, 0)
		if i := strings.LastIndexByte(cu, '@'); i > 0 {
			account = fmt.Sprintf("'%s'@'%s'", cu[:i], cu[i+1:])
		}
	}
	grants, err := showGrants(conn)
	if err != nil {
		add("privileges", fmt.Sprintf("cannot read the account's grants: %v", err), "run SHOW GRANTS as this user to see why")
		return out
	}
	for _, p := range []struct{ name, alias string }{{"REPLICATION SLAVE", "REPLICATION REPLICA"}, {"REPLICATION CLIENT", "BINLOG MONITOR"}} {
		if !grants.global(p.name) && !grants.global(p.alias) {
			add("privileges", fmt.Sprintf("user %s lacks %s", cfg.User, p.name), grantAdvice(account))
		}
	}
	if cfg.Flavor == FlavorMySQL && cfg.Snapshot != SnapshotNever && !grants.global("RELOAD") {
		add("privileges", fmt.Sprintf("user %s lacks RELOAD, which the snapshot needs for FLUSH TABLES WITH READ LOCK", cfg.User),
			grantAdvice(account))
	}
	out = append(out, checkTables(ctx, conn, cfg, grants, account)...)
	cr, _ := compileColumnRules(cfg.ExcludeColumns, cfg.Mask)
	if cols, err := undecodableColumns(conn, newFilter(cfg.Include, cfg.Exclude), cr); err != nil {
		warn("charset", fmt.Sprintf("cannot read the columns' character sets: %v", err), "grant SELECT on the included tables")
	} else if len(cols) > 0 {
		add("charset", "captured columns in character sets sluice cannot decode (the source refuses to start): "+listSome(cols),
			"convert them (ALTER TABLE ... CONVERT TO CHARACTER SET utf8mb4) or leave them out with exclude_columns")
	}
	return out
}

// serverVars reads server variables; one that cannot be read is missing.
func serverVars(conn *client.Conn, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		if r, err := conn.Execute("SELECT @@" + n); err == nil && r.RowNumber() > 0 {
			v, _ := r.GetString(0, 0)
			m[n] = v
		}
	}
	return m
}

// durabilityProblems warns of a server that acknowledges commits before
// they are on disk. After its crash, transactions that sluice already read
// from the binary log, and applied to the target, can be missing from the
// source (InnoDB rolls back a transaction the binary log lost), and the
// binary log resumes from an earlier point or with other GTIDs than the
// saved position: the target then holds changes the source does not.
func durabilityProblems(conn *client.Conn) []Problem {
	v := serverVars(conn, "sync_binlog", "innodb_flush_log_at_trx_commit")
	var out []Problem
	if s, ok := v["sync_binlog"]; ok && s != "1" {
		out = append(out, Problem{Check: "durability", Warning: true,
			Detail: fmt.Sprintf("sync_binlog is %s: a crash of the server can lose transactions from the binary log that sluice already captured, leaving the target ahead of the source", s),
			Fix:    "set sync_binlog=1 in the server's config (SET GLOBAL sync_binlog=1 until restart)"})
	}
	if f, ok := v["innodb_flush_log_at_trx_commit"]; ok && f != "1" {
		out = append(out, Problem{Check: "durability", Warning: true,
			Detail: fmt.Sprintf("innodb_flush_log_at_trx_commit is %s: a crash of the server can lose committed transactions that sluice already captured", f),
			Fix:    "set innodb_flush_log_at_trx_commit=1 in the server's config (SET GLOBAL innodb_flush_log_at_trx_commit=1 until restart)"})
	}
	return out
}

// checkReplicas reports another registered replica using cfg.ServerID.
func checkReplicas(conn *client.Conn, cfg Config) []Problem {
	r, err := conn.Execute("SHOW REPLICAS")
	if err != nil {
		r, err = conn.Execute("SHOW SLAVE HOSTS")
	}
	if err != nil {
		fix := "grant REPLICATION MASTER ADMIN (MariaDB) to let sluice check, or make sure no other replica uses this server_id"
		if cfg.Flavor == FlavorMySQL {
			fix = "make sure no other replica uses this server_id"
		}
		return []Problem{{Check: "server_id", Warning: true,
			Detail: fmt.Sprintf("cannot list the connected replicas to compare server_id %d: %v", cfg.ServerID, err), Fix: fix}}
	}
	for i := 0; i < r.RowNumber(); i++ {
		id, err := r.GetUint(i, 0)
		if err == nil && id == uint64(cfg.ServerID) {
			host, _ := r.GetString(i, 1)
			return []Problem{{Check: "server_id",
				Detail: fmt.Sprintf("server_id %d is used by a connected replica (host %q); two replicas with one id disconnect each other", cfg.ServerID, host),
				Fix:    "choose a server_id that no other replica uses"}}
		}
	}
	return nil
}

// grantSet is what SHOW GRANTS says, by scope.
type grantSet struct {
	globals []string            // privileges ON *.*
	dbs     map[string][]string // database pattern -> privileges
	tables  map[string][]string // "db.table" -> privileges
}

func (g grantSet) has(privs []string, p string) bool {
	return slices.Contains(privs, p) || slices.Contains(privs, "ALL PRIVILEGES") || slices.Contains(privs, "ALL")
}

func (g grantSet) global(p string) bool { return g.has(g.globals, p) }

// canSelect reports whether SELECT on db.table is granted at some level.
func (g grantSet) canSelect(db, table string) bool {
	if g.global("SELECT") {
		return true
	}
	for pat, privs := range g.dbs {
		if g.has(privs, "SELECT") && likeMatch(pat, db) {
			return true
		}
	}
	return g.has(g.tables[db+"."+table], "SELECT")
}

// likeMatch matches a database grant pattern (% and _ wildcards, \ escapes).
func likeMatch(pat, s string) bool {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		case '\\':
			if i+1 < len(pat) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pat[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	ok, _ := regexp.MatchString(b.String(), s)
	return ok
}

var grantLine = regexp.MustCompile(`(?i)^GRANT (.+?) ON (\S+) TO `)

func showGrants(conn *client.Conn) (grantSet, error) {
	g := grantSet{dbs: map[string][]string{}, tables: map[string][]string{}}
	r, err := conn.Execute("SHOW GRANTS")
	if err != nil {
		return g, err
	}
	for i := 0; i < r.RowNumber(); i++ {
		line, _ := r.GetString(i, 0)
		parseGrant(&g, line)
	}
	return g, nil
}

// parseGrant adds one SHOW GRANTS line to g. Column-level grants
// ("SELECT (a, b)") do not count as table grants.
func parseGrant(g *grantSet, line string) {
	m := grantLine.FindStringSubmatch(line)
	if m == nil || strings.HasPrefix(strings.ToUpper(m[1]), "PROXY") {
		return
	}
	var privs []string
	depth := 0
	start := 0
	text := m[1]
	for i := 0; i <= len(text); i++ {
		if i < len(text) {
			switch text[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		p := strings.ToUpper(strings.TrimSpace(text[start:i]))
		if !strings.Contains(p, "(") {
			privs = append(privs, p)
		}
		start = i + 1
	}
	scope := m[2]
	if scope == "*.*" {
		g.globals = append(g.globals, privs...)
		return
	}
	db, table, ok := splitScope(scope)
	if !ok {
		return
	}
	if table == "*" {
		g.dbs[db] = append(g.dbs[db], privs...)
	} else {
		g.tables[db+"."+table] = append(g.tables[db+"."+table], privs...)
	}
}

// splitScope splits "`db`.`t`" (or db.*, quoted or not) into its parts.
func splitScope(s string) (db, table string, ok bool) {
	part := func(s string) (string, string, bool) {
		if strings.HasPrefix(s, "`") {
			var b strings.Builder
			for i := 1; i < len(s); i++ {
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						b.WriteByte('`')
						i++
						continue
					}
					return b.String(), s[i+1:], true
				}
				b.WriteByte(s[i])
			}
			return "", "", false
		}
		name, rest, _ := strings.Cut(s, ".")
		if rest != "" || strings.HasSuffix(s, ".") {
			rest = "." + rest
		}
		return name, rest, true
	}
	db, rest, ok := part(s)
	if !ok || !strings.HasPrefix(rest, ".") {
		return "", "", false
	}
	table, rest, ok = part(rest[1:])
	return db, table, ok && rest == ""
}

// checkTables reports included tables without a primary key or without
// SELECT, and a filter that matches nothing.
func checkTables(ctx context.Context, conn *client.Conn, cfg Config, g grantSet, account string) []Problem {
	// Table by table on the captured databases only: one query joining
	// TABLES with STATISTICS took 85 s on a MariaDB with 3,000 tables.
	q := clientCatalog(conn)
	tables, err := listCaptured(ctx, q, newFilter(cfg.Include, cfg.Exclude))
	if err != nil {
		return []Problem{{Check: "tables", Detail: fmt.Sprintf("cannot list tables: %v", err), Fix: "grant SELECT on the included tables"}}
	}
	keyed := map[schema.TableID]bool{}
	for i, id := range tables {
		if i > 0 && tables[i-1].Database == id.Database {
			continue
		}
		rows, err := q(ctx, "SELECT DISTINCT TABLE_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND INDEX_NAME = 'PRIMARY'", id.Database)
		if err != nil {
			return []Problem{{Check: "tables", Detail: fmt.Sprintf("cannot read the primary keys of %s: %v", id.Database, err), Fix: "grant SELECT on the included tables"}}
		}
		for _, r := range rows {
			keyed[schema.TableID{Database: id.Database, Table: r[0]}] = true
		}
	}
	var out []Problem
	var noKey, noSelect []string
	for _, id := range tables {
		name := id.Database + "." + id.Table
		if !keyed[id] {
			noKey = append(noKey, name)
		}
		if !g.canSelect(id.Database, id.Table) {
			noSelect = append(noSelect, name)
		}
	}
	if len(noKey) > 0 {
		out = append(out, Problem{Check: "primary_key",
			Detail: fmt.Sprintf("included tables without a primary key (the sink finds the row of each update and delete by its whole before image, a scan of the target table per change; a snapshot cannot resume inside them): %s", listSome(noKey)),
			Fix:    "add a primary key to each (ALTER TABLE ... ADD PRIMARY KEY), or exclude them, or accept it (the sink's keyless_mode)", Warning: true})
	}
	if len(noSelect) > 0 {
		out = append(out, Problem{Check: "privileges",
			Detail: fmt.Sprintf("user %s lacks SELECT on included tables: %s", cfg.User, listSome(noSelect)),
			Fix:    "GRANT SELECT ON each database (db.*) or table TO " + account})
	}
	if len(tables) == 0 {
		fix := "correct include/exclude, or GRANT SELECT on the tables (tables the account cannot access are invisible to it)"
		out = append(out, Problem{Check: "tables", Warning: true,
			Detail: fmt.Sprintf("no table the account can see matches include %q exclude %q", cfg.Include, cfg.Exclude), Fix: fix})
	}
	return out
}

func listSome(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}
