package mysql

import (
	"slices"

	"github.com/sluicecdc/sluice/sink/dialect"
)

var myIntRank = map[string]int{"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 5}

// myTextCap and myBlobCap are the byte capacities of the TEXT and BLOB
// size classes.
var myTextCap = map[string]int64{"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}
var myBlobCap = map[string]int64{"tinyblob": 255, "blob": 65535, "mediumblob": 16777215, "longblob": 4294967295}

// widenMySQL decides what turning a MySQL column of type cur into want
// means; both are type texts.
func widenMySQL(cur, want string) dialect.TypeChange {
	return dialect.CompareTypes(cur, want, dialect.ParseMySQLType, myChange)
}

func myChange(c, w dialect.ColType) dialect.TypeChange {
	// MariaDB's JSON is LONGTEXT with a check: the same column.
	if c.Base == "longtext" && w.Base == "json" && !c.Unsigned && !w.Unsigned {
		return dialect.TypeSame
	}
	if myWidens(c, w) {
		return dialect.TypeWiden
	}
	return dialect.TypeDiffer
}

func myWidens(c, w dialect.ColType) bool {
	// Signed never becomes unsigned; unsigned may become signed when the
	// target is wider.
	if w.Unsigned && !c.Unsigned {
		return false
	}
	switch c.Base {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		switch w.Base {
		case "tinyint", "smallint", "mediumint", "int", "bigint":
			// A larger rank holds every value, signed or not, of a smaller
			// one (signed to unsigned is refused above).
			return myIntRank[w.Base] > myIntRank[c.Base]
		case "decimal":
			return w.Args[0]-w.Args[1] >= dialect.IntDigits(c.Base, c.Unsigned)
		}
	case "decimal":
		return w.Base == "decimal" && dialect.DecimalHolds(c.Args, w.Args)
	case "float":
		return w.Base == "double"
	case "char", "varchar":
		chars := int64(c.Args[0])
		switch w.Base {
		case "varchar":
			return w.Args[0] > c.Args[0] || (c.Base == "char" && w.Args[0] == c.Args[0])
		case "char":
			return c.Base == "char" && w.Args[0] > c.Args[0]
		}
		if capacity, ok := myTextCap[w.Base]; ok {
			return chars*4 <= capacity // utf8mb4: up to 4 bytes a character
		}
	case "tinytext", "text", "mediumtext", "longtext":
		capacity, ok := myTextCap[w.Base]
		return ok && capacity > myTextCap[c.Base]
	case "binary", "varbinary":
		switch w.Base {
		case "varbinary":
			// binary(n) holds n bytes exactly (zero-padded): varbinary(m ≥ n)
			// keeps them; binary(m > n) would pad further.
			return w.Args[0] > c.Args[0] || (c.Base == "binary" && w.Args[0] == c.Args[0])
		}
		if capacity, ok := myBlobCap[w.Base]; ok {
			return int64(c.Args[0]) <= capacity
		}
	case "tinyblob", "blob", "mediumblob", "longblob":
		capacity, ok := myBlobCap[w.Base]
		return ok && capacity > myBlobCap[c.Base]
	case "bit":
		return w.Base == "bit" && w.Args[0] > c.Args[0]
	case "time", "datetime", "timestamp":
		return w.Base == c.Base && w.Args[0] > c.Args[0]
	case "enum", "set":
		// An ENUM given the error label '' first (withErrorLabel) holds
		// every value of the column without it: MODIFY COLUMN maps ENUM
		// values by their text.
		if c.Base == "enum" && w.Base == "enum" && len(w.Labels) > 0 && w.Labels[0] == "" && !slices.Contains(c.Labels, "") {
			w.Labels = w.Labels[1:]
			if len(w.Labels) == len(c.Labels) {
				return slices.Equal(w.Labels, c.Labels)
			}
		}
		// New labels at the end keep the stored numbers of the old ones.
		if w.Base != c.Base || len(w.Labels) <= len(c.Labels) {
			return false
		}
		for i, l := range c.Labels {
			if w.Labels[i] != l {
				return false
			}
		}
		return true
	}
	return false
}
