package integration

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// matrixStatements reads testdata/matrix/matrix.sql (format in its header):
// the statements before the "-- @streaming" line and those after it, each
// without its final ";".
func matrixStatements(t testing.TB) (snapshot, streaming []string) {
	t.Helper()
	return matrixFileStatements(t, "matrix.sql")
}

// matrixFileStatements is matrixStatements for file, a matrix of
// testdata/matrix in matrix.sql's format (matrix-mysql.sql: MySQL's).
func matrixFileStatements(t testing.TB, file string) (snapshot, streaming []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "matrix", file))
	if err != nil {
		t.Fatal(err)
	}
	var cur strings.Builder
	part := &snapshot
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "-- @streaming" {
			part = &streaming
			continue
		}
		if strings.HasPrefix(trimmed, "--") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(trimmed, ";") {
			*part = append(*part, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		t.Fatalf("%s ends inside a statement: %q", file, cur.String())
	}
	return snapshot, streaming
}

// execMatrix runs statements on db, one connection (so SET time_zone and
// BEGIN/COMMIT hold), with database as the default database.
func execMatrix(t testing.TB, db *sql.DB, database string, stmts []string) {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "USE "+quoteMy(database)); err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("matrix.sql: %v\n%s", err, q)
		}
	}
}

func quoteMy(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
