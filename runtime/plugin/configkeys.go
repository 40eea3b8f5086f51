package plugin

import (
	"fmt"
	"github.com/sluicecdc/sluice/runtime"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KeyDoc documents one config key: a one-line Doc, and what the config
// struct cannot say itself: Default when the zero value stands for a
// default computed later (the pipeline's name, the section's type), and
// Values, the values the key allows.
type KeyDoc struct {
	Doc     string
	Default string
	Values  []string
}

// KeyDocs documents a section's keys by path below the section: "host",
// "mask[].kind" for a key of a list's elements, "tls.ca" for a key of a
// mapping.
type KeyDocs map[string]KeyDoc

// ConfigKey is one key's definition, as GET
// /connector-plugins/{type}/config and docs/configuration.md give it.
type ConfigKey struct {
	// Name is the path below the section (KeyDocs).
	Name string
	// Type is Kafka Connect's name of the value's type where it has one
	// (BOOLEAN, INT, LONG, DOUBLE, STRING, LIST, PASSWORD), else DURATION
	// (such as 500ms), SIZE (such as 16MiB) or MAP.
	Type     string
	Required bool
	// Default is the value an absent key means, as it would be written;
	// "" for none.
	Default string
	Values  []string
	Doc     string
}

// ConfigKeys lists the keys of p's section: "type" (documented by
// p.Keys["type"] if given), then every key of the struct New returns, in
// the struct's order, with p.Keys' docs. An
// error names each key without a doc and each doc without a key, so the
// struct and its docs cannot drift apart.
func (p *Plugin) ConfigKeys() ([]ConfigKey, error) {
	typ := ConfigKey{Name: "type", Type: "STRING", Required: true, Values: append(append([]string(nil), p.Types...), p.Aliases...),
		Doc: fmt.Sprintf("Selects the %s plugin %s.", p.Kind, p.Name)}
	docs := p.Keys
	if d, ok := p.Keys["type"]; ok {
		// the section's type, which no config struct holds
		typ.Doc = d.Doc
		docs = KeyDocs{}
		for k, v := range p.Keys {
			if k != "type" {
				docs[k] = v
			}
		}
	}
	keys, err := DescribeKeys(p.New(), docs)
	return append([]ConfigKey{typ}, keys...), err
}

// DescribeKeys lists the keys of shape (a pointer to a struct with yaml
// tags, holding the defaults of absent keys, as Section.Decode fills it)
// with their docs; see Plugin.ConfigKeys.
func DescribeKeys(shape any, docs KeyDocs) ([]ConfigKey, error) {
	v := reflect.ValueOf(shape)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var keys []ConfigKey
	describeStruct(v, "", &keys)
	var problems []string
	seen := map[string]bool{}
	for i := range keys {
		k := &keys[i]
		seen[k.Name] = true
		d, ok := docs[k.Name]
		if !ok || strings.TrimSpace(d.Doc) == "" {
			problems = append(problems, k.Name+" has no doc")
			continue
		}
		k.Doc, k.Values = d.Doc, d.Values
		if d.Default != "" {
			k.Default = d.Default
		}
	}
	var extra []string
	for name := range docs {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		problems = append(problems, name+" is documented but is no key")
	}
	if len(problems) > 0 {
		return keys, fmt.Errorf("config keys of %s: %s", v.Type(), strings.Join(problems, "; "))
	}
	return keys, nil
}

// describeStruct appends the keys of struct v below prefix.
func describeStruct(v reflect.Value, prefix string, keys *[]ConfigKey) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		name = prefix + name
		fv, ft := v.Field(i), f.Type
		k := ConfigKey{Name: name, Required: hasOption(f, "required"), Type: typeName(ft, hasOption(f, "bytes"))}
		if secretKey(name) {
			k.Type = "PASSWORD"
		}
		k.Default = defaultOf(fv)
		*keys = append(*keys, k)
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case custom(ft):
		case ft.Kind() == reflect.Struct:
			describeStruct(reflect.New(ft).Elem(), name+".", keys)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && !custom(ft.Elem()):
			describeStruct(reflect.New(ft.Elem()).Elem(), name+"[].", keys)
		}
	}
}

// custom reports whether t decodes itself (a duration, a size, or a
// connector's own yaml.Unmarshaler).
func custom(t reflect.Type) bool {
	return t == durationType || t == byteSizeType || reflect.PointerTo(t).Implements(unmarshalerType)
}

// typeName is the ConfigKey type of a field of type t; bytes: an int
// holding a size (sluice:"bytes").
func typeName(t reflect.Type, bytes bool) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "DURATION"
	case t == byteSizeType || bytes:
		return "SIZE"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "BOOLEAN"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return "INT"
	case reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "LONG"
	case reflect.Float32, reflect.Float64:
		return "DOUBLE"
	case reflect.Slice:
		return "LIST"
	case reflect.Map, reflect.Struct:
		return "MAP"
	}
	return "STRING"
}

// defaultOf writes a default set in the shape's field v, "" when it is
// the zero value (a zero that means a default is in the KeyDoc).
func defaultOf(v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	switch {
	case v.Type() == durationType:
		return time.Duration(v.Int()).String()
	case v.Type() == byteSizeType:
		return runtime.ByteSize(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Pointer:
		return defaultOf(v.Elem())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.String:
		return v.String()
	}
	return ""
}

// Suggest returns the known name closest to key when it is close enough
// to be a misspelling ("" otherwise), for "did you mean".
func Suggest(key string, known []string) string {
	best, bestD := "", len(key)/3+2
	for _, k := range known {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unknownKey is the message for an unknown key among known; what says
// which key ("key", "top-level key").
func unknownKey(what, key string, known []string) string {
	msg := "unknown " + what + " (known: " + strings.Join(known, ", ") + ")"
	if s := Suggest(key, known); s != "" {
		msg += ": did you mean " + s + "?"
	}
	return msg
}

// TopLevelDocs documents the keys of a pipeline document (TopLevelKeys),
// which ParseConfig reads itself.
var TopLevelDocs = []ConfigKey{
	{Name: "name", Type: "STRING", Required: true, Doc: "Name of the pipeline: letters, digits, '.', '_' and '-'; it names the position, the topics and the consumer group."},
	{Name: "memory_limit", Type: "SIZE", Default: runtime.DefaultMemoryLimit.String(), Doc: "Go memory limit of the process; off for none. GOMEMLIMIT in the environment wins."},
	{Name: "start_retries", Type: "INT", Default: fmt.Sprint(DefaultStartRetries), Doc: "Restarts after a retriable error of a pipeline that never reached RUNNING; 0: none, negative: no bound."},
	{Name: "source", Type: "MAP", Doc: "The source connector: its type selects the plugin (below)."},
	{Name: "transport", Type: "MAP", Required: true, Doc: "The transport between source and sink: its type selects the plugin (below)."},
	{Name: "sink", Type: "MAP", Doc: "The sink connector: its type selects the plugin (below). A source or a sink is required."},
	{Name: "positions", Type: "MAP", Doc: "Where the source's position is kept: its type is file, postgres or mysql (below)."},
}
