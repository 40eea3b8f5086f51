package mysql

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// mysql97 is a catalogue like MySQL 9.7's: no MariaDB collations, NO PAD
// only for binary and the 0900 ones.
func mysql97() Dialect {
	c := &collations{charset: map[string]string{}, noPad: map[string]bool{}}
	for name, cs := range map[string]string{"utf8mb4_bin": "utf8mb4", "utf8mb4_0900_bin": "utf8mb4", "utf8mb4_0900_ai_ci": "utf8mb4",
		"utf8mb4_general_ci": "utf8mb4", "latin1_bin": "latin1", "latin1_swedish_ci": "latin1", "binary": "binary"} {
		c.charset[name] = cs
		c.noPad[name] = name == "binary" || name == "utf8mb4_0900_bin" || name == "utf8mb4_0900_ai_ci"
	}
	return Dialect{coll: c}
}

func textSchema(charset, collation string) *schema.Schema {
	p := map[string]string{schema.ParamCharset: charset}
	if collation != "" {
		p[schema.ParamCollation] = collation
	}
	return &schema.Schema{Type: schema.String, Params: p}
}

// TestKeyMerges: a key column may take the source's keys unless its
// collation could take two of them as one: another collation that is not
// binary, a binary one that pads where the source's does not, or one of a
// narrower character set.
func TestKeyMerges(t *testing.T) {
	d := mysql97()
	for _, c := range []struct {
		src, cur string
		merges   bool
		want     string
	}{
		{"utf8mb4_bin", "utf8mb4_bin", false, ""},
		{"utf8mb4_bin", "utf8mb4_0900_ai_ci", true, "utf8mb4_bin"},
		{"utf8mb4_bin", "utf8mb4_general_ci", true, "utf8mb4_bin"},
		{"utf8mb4_general_ci", "utf8mb4_0900_ai_ci", true, "utf8mb4_general_ci"}, // 'ss' = 'ß' in one only
		{"utf8mb4_general_ci", "utf8mb4_bin", false, ""},                         // binary: stricter
		{"utf8mb4_0900_ai_ci", "utf8mb4_bin", true, "utf8mb4_0900_ai_ci"},        // NO PAD source: 'a' and 'a ' apart
		{"utf8mb4_0900_ai_ci", "utf8mb4_0900_bin", false, ""},
		{"latin1_bin", "utf8mb4_bin", false, ""}, // every latin1 character in utf8mb4
		{"utf8mb4_bin", "latin1_bin", true, "utf8mb4_bin"},
		{"utf8mb4_uca1400_as_cs", "utf8mb4_0900_ai_ci", true, "utf8mb4_0900_bin"}, // MariaDB's, which MySQL lacks
		{"", "utf8mb4_0900_ai_ci", false, ""},                                     // the source did not say
	} {
		want, merges := d.KeyMerges(textSchema("utf8mb4", c.src), c.cur)
		if merges != c.merges || want != c.want {
			t.Errorf("source %s, target %s: merges %v (%s), want %v (%s)", c.src, c.cur, merges, want, c.merges, c.want)
		}
	}
}

// TestCollate: text columns get the source's collation, the strictest
// binary one where the target lacks it or a key's is not known; other
// types, JSON and columns that are no key of unknown collation get none.
func TestCollate(t *testing.T) {
	d := mysql97()
	for _, c := range []struct {
		typ                string
		charset, collation string
		key                bool
		json               bool
		want               string
	}{
		{"varchar(10)", "latin1", "latin1_bin", false, false, " CHARACTER SET latin1 COLLATE latin1_bin"},
		{"enum('','p')", "utf8mb4", "utf8mb4_bin", false, false, " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"},
		{"VARCHAR(255)", "utf8mb4", "utf8mb4_uca1400_ai_ci", true, false, " CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin"},
		{"VARCHAR(255)", "utf8mb4", "", true, false, " CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin"},
		{"LONGTEXT", "utf8mb4", "", false, false, ""},
		{"LONGTEXT", "koi8r", "koi8r_bin", false, false, " CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin"}, // no koi8r here
		{"int", "", "", true, false, ""},
		{"JSON", "utf8mb4", "utf8mb4_bin", false, true, ""},
		{"VARCHAR(255)", "utf8mb4", "utf8mb4_bin; DROP TABLE x", false, false, " CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin"},
	} {
		s := textSchema(c.charset, c.collation)
		if c.json {
			s.Logical = schema.Json
		}
		if got := d.Collate(c.typ, s, c.key); got != c.want {
			t.Errorf("%s %s/%s key %v: %q, want %q", c.typ, c.charset, c.collation, c.key, got, c.want)
		}
	}
}
