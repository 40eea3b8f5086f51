package converter

import (
	"errors"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// envelopeParts splits {"schema":…,"payload":…} as a compact transport
// carries it: the schema apart from the payload.
func envelopeParts(t *testing.T, b []byte) (sch, payload []byte) {
	t.Helper()
	if b == nil {
		return nil, nil
	}
	sch, payload, err := splitEnvelope(b, func([]byte) int { return 0 })
	if err != nil {
		t.Fatalf("split %s: %v", b, err)
	}
	return sch, payload
}

// TestDecodePartsEqualsDecode: DecodeParts of the schemas and payloads gives
// what Decode of the whole envelopes gives, cold and warm, for every type,
// for a key whose schema travels with it, and for no key.
func TestDecodePartsEqualsDecode(t *testing.T) {
	for _, tc := range typeCases() {
		t.Run(tc.name, func(t *testing.T) {
			enc := NewJSON(DefaultOptions())
			c := NewJSON(DefaultOptions())
			for i, r := range typeRecords(tc) {
				k, v, err := enc.Encode(&r)
				if err != nil {
					t.Fatal(err)
				}
				want, err := enc.Decode(k, v)
				if err != nil {
					t.Fatal(err)
				}
				ks, kp := envelopeParts(t, k)
				vs, vp := envelopeParts(t, v)
				for pass := range 2 { // cold caches, then warm
					got, err := c.DecodeParts(ks, kp, vs, vp)
					if err != nil {
						t.Fatalf("record %d pass %d: %v", i, pass, err)
					}
					if d := recordDiff(&want, &got); d != "" {
						t.Fatalf("record %d pass %d: %s", i, pass, d)
					}
				}
				if k != nil { // the key whole, its schema not split off
					got, err := c.DecodeParts(nil, k, vs, vp)
					if err != nil || recordDiff(&want, &got) != "" {
						t.Fatalf("record %d, whole key: %v", i, err)
					}
				}
				got, err := c.DecodeParts(ks, nil, vs, vp)
				if err != nil || got.Key != nil || got.KeySchema != nil {
					t.Fatalf("record %d, no key: %v %v", i, err, got.Key)
				}
			}
		})
	}
}

// TestDecodePartsRejects: a payload is one JSON value, and a bad schema or
// payload is a syntax error, as in Decode.
func TestDecodePartsRejects(t *testing.T) {
	c := NewJSON(DefaultOptions())
	r := typeRecords(typeCases()[3])[0]
	k, v, err := c.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	ks, kp := envelopeParts(t, k)
	vs, vp := envelopeParts(t, v)
	for name, parts := range map[string][4][]byte{
		"value payload followed by a member": {ks, kp, vs, append(append([]byte(nil), vp...), `,"schema":{}`...)},
		"key payload followed by junk":       {ks, append(append([]byte(nil), kp...), ` x`...), vs, vp},
		"empty value payload":                {ks, kp, vs, nil},
		"value schema not JSON":              {ks, kp, []byte(`{"type":`), vp},
		"key schema not a struct":            {[]byte(`{"type":"int64"}`), kp, vs, vp},
	} {
		if _, err := c.DecodeParts(parts[0], parts[1], parts[2], parts[3]); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: err %v, want ErrSyntax", name, err)
		}
	}
}

// FuzzDecodeParts: outside bytes in either part never panic, and what
// decodes equals Decode of the envelope built from the parts.
func FuzzDecodeParts(f *testing.F) {
	c := NewJSON(DefaultOptions())
	for _, tc := range typeCases() {
		r := typeRecords(tc)[0]
		k, v, err := c.Encode(&r)
		if err != nil {
			f.Fatal(err)
		}
		ks, kp, _ := splitEnvelope(k, func([]byte) int { return 0 })
		vs, vp, _ := splitEnvelope(v, func([]byte) int { return 0 })
		f.Add(ks, kp, vs, vp)
	}
	f.Fuzz(func(t *testing.T, ks, kp, vs, vp []byte) {
		c := NewJSON(DefaultOptions())
		got, err := c.DecodeParts(ks, kp, vs, vp)
		if err != nil {
			return
		}
		v := append(append(append(append([]byte(`{"schema":`), vs...), `,"payload":`...), vp...), '}')
		var k []byte
		if len(kp) > 0 && ks != nil {
			k = append(append(append(append([]byte(`{"schema":`), ks...), `,"payload":`...), kp...), '}')
		} else if len(kp) > 0 {
			k = kp
		}
		want, err := NewJSON(DefaultOptions()).Decode(k, v)
		if err != nil {
			t.Fatalf("DecodeParts took what Decode of the envelope refuses: %v", err)
		}
		if d := recordDiff(&want, &got); d != "" {
			t.Fatalf("differs from Decode: %s", d)
		}
	})
}

// TestEncodePayloadsEqualsEnvelopePayloads: EncodePayloads writes exactly
// the payloads of Encode's envelopes, key and value, for every type, in
// every option mode, cold and after Encode warmed the caches (and the
// other way round); without schemas it writes what Encode writes; it
// refuses what is not a data record.
func TestEncodePayloadsEqualsEnvelopePayloads(t *testing.T) {
	modes := []Options{DefaultOptions(),
		{Schemas: true, DecimalMode: DecimalString, BigintUnsignedMode: BigintLong, BinaryMode: BinaryHex, OmitTransaction: true},
		{Schemas: true, DecimalMode: DecimalDouble, BinaryMode: BinaryBase64},
	}
	for _, opts := range modes {
		for _, tc := range typeCases() {
			for _, payloadsFirst := range []bool{false, true} {
				c := NewJSON(opts)
				plain := NewJSON(Options{DecimalMode: opts.DecimalMode, BigintUnsignedMode: opts.BigintUnsignedMode,
					TimePrecisionMode: opts.TimePrecisionMode, BinaryMode: opts.BinaryMode, OmitTransaction: opts.OmitTransaction})
				for i, r := range typeRecords(tc) {
					var pk, pv []byte
					var err error
					if payloadsFirst {
						if pk, pv, err = c.EncodePayloads(&r); err != nil {
							t.Fatal(err)
						}
					}
					k, v, err := c.Encode(&r)
					if err != nil {
						t.Fatal(err)
					}
					if !payloadsFirst {
						if pk, pv, err = c.EncodePayloads(&r); err != nil {
							t.Fatal(err)
						}
					}
					_, wantK := envelopeParts(t, k)
					_, wantV := envelopeParts(t, v)
					if string(pk) != string(wantK) || string(pv) != string(wantV) {
						t.Fatalf("%s %+v record %d: payloads\n%s\n%s\nwant\n%s\n%s", tc.name, opts, i, pk, pv, wantK, wantV)
					}
					if (pk == nil) != (k == nil) {
						t.Fatalf("%s record %d: key nil %v, envelope key nil %v", tc.name, i, pk == nil, k == nil)
					}
					ok, ov, err := plain.Encode(&r)
					if err != nil {
						t.Fatal(err)
					}
					if string(ok) != string(pk) || string(ov) != string(pv) {
						t.Fatalf("%s record %d: a converter without schemas writes\n%s\n%s\nnot\n%s\n%s", tc.name, i, ok, ov, pk, pv)
					}
					if pk2, pv2, err := plain.EncodePayloads(&r); err != nil || string(pk2) != string(ok) || string(pv2) != string(ov) {
						t.Fatalf("%s record %d: EncodePayloads without schemas differs from Encode: %v", tc.name, i, err)
					}
				}
			}
		}
	}
	for _, op := range []schema.Op{schema.OpSchemaChange, schema.OpCommit} {
		r := schema.Record{Op: op, Table: schema.TableID{Database: "d", Table: "t"}}
		if _, _, err := NewJSON(DefaultOptions()).EncodePayloads(&r); !errors.Is(err, ErrValue) {
			t.Fatalf("%s: %v, want ErrValue", op, err)
		}
	}
}
