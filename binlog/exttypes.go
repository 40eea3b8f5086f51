package binlog

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
)

// MariaDB's data types that the table map describes only by their storage:
// UUID and INET6 are BINARY(16), INET4 is BINARY(4), JSON is LONGTEXT with
// a json_valid CHECK. Their kind comes from information_schema (snapshot,
// and the stream's type hints) or from the schema history.
const (
	extUUID  = "uuid"
	extInet6 = "inet6"
	extInet4 = "inet4"
	extJSON  = "json"
	// extTinyint1 marks TINYINT(1), the only display width the binlog
	// loses that matters: JDBC drivers read tinyint(1) as a boolean, so a
	// MySQL target keeps it.
	extTinyint1 = "tinyint(1)"
)

// UUIDSchemaName is the Connect schema name of a MariaDB UUID column, as
// Debezium names it.
const UUIDSchemaName = "io.debezium.data.Uuid"

// applyExt turns a column whose storage the table map gave into the
// MariaDB type ext names. It reports false (and changes nothing) when the
// storage does not fit ext, e.g. a hint read after the column changed.
func applyExt(c *column, sch *schema.Schema, srcType *string, ext string) bool {
	switch ext {
	case extUUID, extInet6, extInet4:
		n := 16
		if ext == extInet4 {
			n = 4
		}
		if c.kind != kBytes || c.pad != n {
			return false
		}
		c.kind = map[string]kind{extUUID: kUUID, extInet6: kInet6, extInet4: kInet4}[ext]
		sch.Type, sch.Logical = schema.String, schema.None
		if ext == extUUID {
			sch.Name = UUIDSchemaName
		}
		delete(sch.Params, schema.ParamLength)
		*srcType = ext
		return true
	case extTinyint1:
		if c.kind != kInt || !strings.HasPrefix(*srcType, "tinyint") || strings.HasPrefix(*srcType, "tinyint(") {
			return false
		}
		*srcType = "tinyint(1)" + strings.TrimPrefix(*srcType, "tinyint")
		return true
	case extJSON:
		if c.kind != kString || !strings.HasSuffix(*srcType, "text") {
			return false
		}
		c.kind = kJSON // c.charset stays: the text is decoded from it
		sch.Type, sch.Logical = schema.String, schema.Json
		delete(sch.Params, schema.ParamCharset)
		*srcType = "json"
		return true
	}
	return false
}

// extValue renders the binary form of a UUID, INET6 or INET4 value as the
// server prints it (CAST(col AS CHAR)).
func extValue(c *column, b []byte) (string, error) {
	switch c.kind {
	case kUUID:
		if len(b) != 16 {
			break
		}
		h := hex.EncodeToString(b)
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
	case kInet6:
		if len(b) != 16 {
			break
		}
		return formatInet6(b), nil
	case kInet4:
		if len(b) != 4 {
			break
		}
		return netip.AddrFrom4([4]byte(b)).String(), nil
	}
	return "", schema.Fatal(fmt.Errorf("%w: column %s: %d-byte value is not a %s", ErrUnsupported, c.name, len(b), map[kind]string{kUUID: "UUID", kInet6: "INET6", kInet4: "INET4"}[c.kind]))
}

// extBinary parses the server's text form of a UUID, INET6 or INET4 value
// (the snapshot reads it so) into its binary form, which extValue renders:
// both paths give the same text by construction.
func extBinary(c *column, text []byte) ([]byte, error) {
	s := string(text)
	switch c.kind {
	case kUUID:
		h := strings.ReplaceAll(s, "-", "")
		if b, err := hex.DecodeString(h); err == nil && len(b) == 16 {
			return b, nil
		}
	case kInet6:
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
			b := a.As16()
			return b[:], nil
		}
	case kInet4:
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			b := a.As4()
			return b[:], nil
		}
	}
	return nil, schema.Fatal(fmt.Errorf("%w: column %s: cannot read %q", ErrUnsupported, c.name, truncate(text, 64)))
}

// formatInet6 prints an IPv6 address the way MariaDB does: the longest
// run of zero groups (even a single one; the first of equal runs) as "::",
// IPv4-compatible (::a.b.c.d) and IPv4-mapped (::ffff:a.b.c.d) addresses
// with a dotted tail, groups in lower-case hex.
func formatInet6(b []byte) string {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	gpos, glen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > glen {
			gpos, glen = i, j-i
		}
		i = j
	}
	dotted := func() string { return netip.AddrFrom4([4]byte(b[12:16])).String() }
	if gpos == 0 && glen == 6 {
		return "::" + dotted()
	}
	if gpos == 0 && glen == 5 && w[5] == 0xffff {
		return "::ffff:" + dotted()
	}
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		if i == gpos {
			sb.WriteString("::")
			i += glen - 1
			continue
		}
		if i > 0 && i != gpos+glen {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(w[i]), 16))
	}
	return sb.String()
}

// typeHints reads the MariaDB types of a table's columns that its table
// map cannot show, for a stream without a schema history: one query on
// information_schema when a table map is first seen. It describes the
// table as it is now, which is the table map's shape unless DDL changed
// the table since that event; applyExt ignores a hint the storage does not
// fit.
// hintTimeout bounds each read and write of a type-hints query.
const hintTimeout = 30 * time.Second

type typeHints struct {
	cfg Config // Flavor: MySQL has no CHECK_CONSTRAINTS.LEVEL (nor MariaDB's JSON)
	mu  sync.Mutex
	c   *client.Conn
}

func (h *typeHints) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c != nil {
		h.c.Close()
		h.c = nil
	}
}

// colHint is what information_schema says of a column that its table map
// does not: the MariaDB type its storage stands for (ext), its COLUMN_TYPE
// (lower case: FLOAT(M,D), the geometry subtype) and its COLUMN_DEFAULT.
type colHint struct {
	ext     string
	colType string
	def     *string // nil: no default (or NULL)
}

// get returns column name -> hint for every column of the table. An error
// is retriable (the server is unreachable).
func (h *typeHints) get(id schema.TableID) (map[string]colHint, error) {
	var m map[string]colHint
	err := h.query(id, "read the column types of", func(c *client.Conn) (err error) {
		m, err = queryHints(c, id, h.cfg.Flavor == FlavorMariaDB)
		return err
	})
	return m, err
}

// showCreate returns the table's SHOW CREATE TABLE text: its shape now.
func (h *typeHints) showCreate(id schema.TableID) (string, error) {
	var ddl string
	err := h.query(id, "read the shape of", func(c *client.Conn) error {
		r, err := c.Execute("SHOW CREATE TABLE " + quoteIdent(id.Database) + "." + quoteIdent(id.Table))
		if err != nil {
			return err
		}
		ddl, err = r.GetString(0, 1)
		return err
	})
	return ddl, err
}

// query runs f on the connection, connecting first, and once more on a
// new connection when it fails; errors are retriable.
func (h *typeHints) query(id schema.TableID, what string, f func(c *client.Conn) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if h.c == nil {
			ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
			// With the source's TLS settings, like every connection of the
			// source; a hung server fails the query, not the stream for good.
			c, err := dialServer(ctx, &h.cfg, tlsFor(&h.cfg), nil,
				func(c *client.Conn) error {
					c.ReadTimeout, c.WriteTimeout = hintTimeout, hintTimeout
					return nil
				})
			cancel()
			if err != nil {
				return schema.Retriable(fmt.Errorf("binlog: %s %s: connect: %w", what, id, err))
			}
			h.c = c
		}
		err := f(h.c)
		if err == nil {
			return nil
		}
		h.c.Close()
		h.c = nil
		if attempt > 0 {
			return schema.Retriable(fmt.Errorf("binlog: %s %s from the server: %w", what, id, err))
		}
	}
}

// jsonChecked lists the columns of id with a json_valid CHECK (MariaDB's
// JSON is LONGTEXT with one), in one query with the table named: a
// subquery on CHECK_CONSTRAINTS for each column, naming the table through
// the outer query, read every table of the server for every column (tens
// of seconds a table on a server with 3,000 tables).
func jsonChecked(ctx context.Context, q catalogQuery, id schema.TableID) (map[string]bool, error) {
	rows, err := q(ctx, `SELECT CONSTRAINT_NAME FROM information_schema.CHECK_CONSTRAINTS
  WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ? AND LEVEL = 'Column' AND CHECK_CLAUSE LIKE 'json_valid(%'`, id.Database, id.Table)
	if err != nil {
		return nil, fmt.Errorf("binlog: the json_valid checks of %s: %w", id, err)
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r[0]] = true
	}
	return out, nil
}

func queryHints(c *client.Conn, id schema.TableID, mariadb bool) (map[string]colHint, error) {
	var checked map[string]bool
	if mariadb {
		var err error
		if checked, err = jsonChecked(context.Background(), clientCatalog(c), id); err != nil {
			return nil, err
		}
	}
	r, err := c.Execute(`SELECT c.COLUMN_NAME, LOWER(c.DATA_TYPE), LOWER(c.COLUMN_TYPE), c.COLUMN_DEFAULT
  FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ?`,
		id.Database, id.Table)
	if err != nil {
		return nil, err
	}
	m := map[string]colHint{}
	for i := 0; i < r.RowNumber(); i++ {
		name, _ := r.GetString(i, 0)
		typ, _ := r.GetString(i, 1)
		colType, _ := r.GetString(i, 2)
		h := colHint{colType: colType}
		if isNull, _ := r.IsNull(i, 3); !isNull {
			d, _ := r.GetString(i, 3)
			h.def = &d
		}
		switch {
		case typ == "longtext" && checked[name]:
			h.ext = extJSON
		case typ == "tinyint" && strings.HasPrefix(colType, "tinyint(1)"):
			h.ext = extTinyint1
		case typ == extUUID || typ == extInet6 || typ == extInet4:
			h.ext = typ
		}
		m[name] = h
	}
	return m, nil
}
