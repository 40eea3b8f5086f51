package converter

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// Debezium's connector options that choose how values are written, with
// Debezium's option values. Options documents each one's default here and
// where it differs from Debezium's.
const (
	// bigint.unsigned.handling.mode
	BigintPrecise = "precise" // Connect Decimal, scale 0: exact (sluice's default)
	BigintLong    = "long"    // int64 (Debezium's default): values above 2^63-1 wrap to negative numbers

	// time.precision.mode
	TimeAdaptiveMicros = "adaptive_time_microseconds" // the default (Debezium's too)
	TimeConnect        = "connect"                    // Kafka Connect's Date, Time (int32 ms) and Timestamp (ms)

	// binary.handling.mode
	BinaryBytes         = "bytes" // the default (Debezium's too)
	BinaryBase64        = "base64"
	BinaryBase64URLSafe = "base64-url-safe"
	BinaryHex           = "hex"
)

// Validate checks the option values and says which are allowed.
func (o Options) Validate() error {
	check := func(option, v string, allowed ...string) error {
		if v == "" {
			return nil
		}
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%w: %s must be one of %s, not %q", ErrConfig, option, strings.Join(allowed, ", "), v)
	}
	for _, err := range []error{
		check("decimal.handling.mode", string(o.DecimalMode), string(DecimalPrecise), string(DecimalString), string(DecimalDouble)),
		check("bigint.unsigned.handling.mode", o.BigintUnsignedMode, BigintPrecise, BigintLong),
		check("time.precision.mode", o.TimePrecisionMode, TimeAdaptiveMicros, TimeConnect),
		check("binary.handling.mode", o.BinaryMode, BinaryBytes, BinaryBase64, BinaryBase64URLSafe, BinaryHex),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// fsp is the fractional-second precision of a DATETIME, TIMESTAMP or TIME
// column from its source type ("datetime(3)": 3, "datetime": 0), or -1 when
// the schema does not say (then every digit needed is written).
func fsp(s *schema.Schema) int {
	st := s.Param(schema.ParamSourceType)
	if st == "" {
		return -1
	}
	i := strings.IndexByte(st, '(')
	if i < 0 {
		return 0
	}
	j := strings.IndexByte(st[i:], ')')
	if j < 0 {
		return -1
	}
	n, err := strconv.Atoi(st[i+1 : i+j])
	if err != nil || n < 0 || n > 6 {
		return -1
	}
	return n
}

// sourceTypeIs reports whether the column's source type is name, with or
// without parameters ("point", "float(7,3)").
func sourceTypeIs(s *schema.Schema, name string) bool {
	st := s.Param(schema.ParamSourceType)
	return st == name || strings.HasPrefix(st, name+"(") || strings.HasPrefix(st, name+" ")
}

// floatWithScale reports FLOAT(M,D), which Debezium writes as a double.
func floatWithScale(s *schema.Schema) bool {
	st := s.Param(schema.ParamSourceType)
	return strings.HasPrefix(st, "float(") && strings.Contains(st, ",")
}

// pointXY reads the coordinates of a WKB POINT (either byte order).
func pointXY(wkb []byte) (x, y float64, ok bool) {
	if len(wkb) != 21 {
		return 0, 0, false
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if wkb[0] == 0 {
		bo = binary.BigEndian
	} else if wkb[0] != 1 {
		return 0, 0, false
	}
	if bo.Uint32(wkb[1:5]) != 1 {
		return 0, 0, false
	}
	return math.Float64frombits(bo.Uint64(wkb[5:13])), math.Float64frombits(bo.Uint64(wkb[13:21])), true
}

// appendBinaryText writes bytes as a JSON string per binary.handling.mode.
func appendBinaryText(b, x []byte, mode string) []byte {
	b = append(b, '"')
	switch mode {
	case BinaryHex:
		b = hex.AppendEncode(b, x)
	case BinaryBase64URLSafe:
		b = base64.URLEncoding.AppendEncode(b, x)
	default:
		b = base64.StdEncoding.AppendEncode(b, x)
	}
	return append(b, '"')
}

// decodeBinaryText is the inverse of appendBinaryText.
func decodeBinaryText(s, mode string) ([]byte, error) {
	switch mode {
	case BinaryHex:
		return hex.DecodeString(s)
	case BinaryBase64URLSafe:
		return base64.URLEncoding.DecodeString(s)
	}
	return base64.StdEncoding.DecodeString(s)
}
