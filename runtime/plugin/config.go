package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/storage"
	"gopkg.in/yaml.v3"
)

// Config is a pipeline's configuration file: top-level keys name, source,
// transport, sink and positions. Each section has a "type" that selects the
// component; the component decodes the rest with Section.Decode.
type Config struct {
	File string
	// Dir is the config file's folder (absolute), which its relative paths
	// resolve against (Resolve); "" for a config read from no file (a
	// document of the REST API): its relative paths stay relative to the
	// working directory.
	Dir       string
	Name      string
	Source    *Section
	Transport *Section
	Sink      *Section
	Positions *Section
	// MemoryLimit (top-level memory_limit) is the Go memory limit of the
	// process running the pipeline (ApplyMemoryLimit); 0: the default,
	// DefaultMemoryLimit; negative ("off"): none. GOMEMLIMIT in the
	// environment wins over both.
	MemoryLimit runtime.ByteSize
	// StartRetries (top-level start_retries) bounds the restarts of a
	// pipeline that has not yet reported RUNNING (Worker.MaxStartRetries,
	// as Config.MaxStartRetries gives it); nil: DefaultStartRetries.
	StartRetries *int
}

// DefaultStartRetries is how many times `sluice run` restarts, after a
// retriable error, a pipeline that has never reached RUNNING before it is
// FAILED: with the restart backoff (1 s, doubling) about 7 s plus the
// attempts' own time.
const DefaultStartRetries = 3

// MaxStartRetries is c's start_retries as Worker.MaxStartRetries takes it:
// the default when unset, -1 (not one restart) for 0, and 0 (no bound)
// for a negative value.
func (c *Config) MaxStartRetries() int {
	switch {
	case c.StartRetries == nil:
		return DefaultStartRetries
	case *c.StartRetries == 0:
		return -1
	case *c.StartRetries < 0:
		return 0
	}
	return *c.StartRetries
}

// TopLevelKeys are the keys of a pipeline document, as ParseConfig reads
// them (TopLevelDocs documents each).
var TopLevelKeys = []string{"name", "memory_limit", "start_retries", "source", "transport", "sink", "positions"}

// Section is one part of the config, decoded later by the component that
// its type selects.
type Section struct {
	file string
	path string
	Type string
	node *yaml.Node
}

// Line is where the section starts, for messages.
func (s *Section) Line() int { return s.node.Line }

// Path is the section's dotted key, e.g. "source".
func (s *Section) Path() string { return s.path }

// LoadConfig reads and parses a config file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := ParseConfig(b, path)
	if err != nil {
		return nil, err
	}
	if c.Dir, err = filepath.Abs(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return c, nil
}

// Resolve returns path as the config means it: a relative path is relative
// to the config file's folder, whatever the working directory (a service
// manager's may be another). An empty or absolute path, or any path of a
// config read from no file, is returned as it is.
func (c *Config) Resolve(path string) string {
	if c == nil || c.Dir == "" || path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(c.Dir, path)
}

// ParseConfig parses YAML with ${ENV} and ${ENV:-default} expansion in values.
func ParseConfig(data []byte, file string) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", file, err, runtime.ErrConfig)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: the config must be a YAML mapping with keys name, source, transport, sink, positions: %w", file, runtime.ErrConfig)
	}
	root := doc.Content[0]
	if err := expandEnv(file, root); err != nil {
		return nil, err
	}
	c := &Config{File: file}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, cfgErr(file, k.Line, k.Value, "is given twice")
		}
		seen[k.Value] = true
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return nil, cfgErr(file, v.Line, "name", "must be a non-empty string")
			}
			if !storage.SafeName.MatchString(v.Value) {
				return nil, cfgErr(file, v.Line, "name", fmt.Sprintf("%q: use letters, digits, '.', '_' and '-' (it names the position file, topics and the consumer group)", v.Value))
			}
			c.Name = v.Value
		case "memory_limit":
			if err := decodeValue(file, "memory_limit", v, reflect.ValueOf(&c.MemoryLimit).Elem()); err != nil {
				return nil, err
			}
			if c.MemoryLimit == 0 {
				return nil, cfgErr(file, v.Line, "memory_limit", "0 is no limit: write off for none, or a size such as 200MiB")
			}
		case "start_retries":
			n := 0
			if err := decodeValue(file, "start_retries", v, reflect.ValueOf(&n).Elem()); err != nil {
				return nil, err
			}
			c.StartRetries = &n
		case "source", "transport", "sink", "positions":
			sec, err := newSection(file, k.Value, v)
			if err != nil {
				return nil, err
			}
			switch k.Value {
			case "source":
				c.Source = sec
			case "transport":
				c.Transport = sec
			case "sink":
				c.Sink = sec
			case "positions":
				c.Positions = sec
			}
		default:
			return nil, cfgErr(file, k.Line, k.Value, unknownKey("top-level key", k.Value, TopLevelKeys))
		}
	}
	if c.Name == "" {
		return nil, cfgErr(file, root.Line, "name", "is required")
	}
	if c.Transport == nil {
		return nil, cfgErr(file, root.Line, "transport", "is required")
	}
	if c.Source == nil && c.Sink == nil {
		return nil, cfgErr(file, root.Line, "source", "a source or a sink is required")
	}
	return c, nil
}

func newSection(file, path string, n *yaml.Node) (*Section, error) {
	if n.Kind != yaml.MappingNode {
		return nil, cfgErr(file, n.Line, path, "must be a mapping with a type key")
	}
	s := &Section{file: file, path: path, node: n}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			s.Type = n.Content[i+1].Value
		}
	}
	if s.Type == "" {
		return nil, cfgErr(file, n.Line, path+".type", "is required")
	}
	return s, nil
}

func cfgErr(file string, line int, key, msg string) error {
	return &KeyError{File: file, Line: line, Key: key, Msg: msg}
}

// KeyError is a config error about one key: the file, the line the key is
// on and its dotted path (e.g. "source.mask[0].kind"). It matches ErrConfig
// with errors.Is, and the connector's own error when it retells one
// (Section.Explain).
type KeyError struct {
	File string
	Line int
	Key  string
	Msg  string
	err  error // the connector's error it retells, if any
}

func (e *KeyError) Error() string {
	if errors.Is(e.err, runtime.ErrConfig) {
		// The connector's message already says it is a config error
		// ("binlog: invalid config: …"): say it once.
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s: %s", e.File, e.Line, e.Key, e.Msg, runtime.ErrConfig)
}

func (e *KeyError) Unwrap() []error {
	if e.err == nil {
		return []error{runtime.ErrConfig}
	}
	return []error{e.err, runtime.ErrConfig}
}

// expandEnv replaces ${NAME} and ${NAME:-default} in every scalar; $${
// keeps a literal ${ (so a sink's schema: "$${db}" reaches the sink as
// ${db}). A $ not followed by { is left alone. A plain scalar is resolved
// again after expansion (a number stays a number), but a value from the
// environment never becomes null: null or ~ stay strings.
func expandEnv(file string, n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		out, missing := expandString(n.Value)
		if missing != "" {
			msg := "environment variable is not set (set it, or write ${" + missing + ":-default}; write $${ for a literal ${)"
			if missing == "db" || missing == "table" {
				msg = "environment variable is not set: a sink placeholder is written $${" + missing + "} in a config file"
			}
			return cfgErr(file, n.Line, "${"+missing+"}", msg)
		}
		if n.Style == 0 {
			n.Tag = "" // a plain scalar: let the expanded text resolve as a number or bool
			if out != "" && resolvesToNull(out) {
				n.Tag = "!!str"
			}
		}
		n.Value = out
		return nil
	}
	for _, c := range n.Content {
		if err := expandEnv(file, c); err != nil {
			return err
		}
	}
	return nil
}

// expandString expands s, returning the first unset variable's name if any.
func expandString(s string) (string, string) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), ""
		}
		if i > 0 && s[i-1] == '$' { // $${: a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s[i:])
			return b.String(), ""
		}
		name, def, hasDef := strings.Cut(s[i+2:i+j], ":-")
		if v, ok := os.LookupEnv(name); ok && v != "" {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			return "", name
		}
		s = s[i+j+1:]
	}
}

// resolvesToNull reports whether YAML reads the plain scalar s as null.
func resolvesToNull(s string) bool {
	var v any = 0
	n := yaml.Node{Kind: yaml.ScalarNode, Value: s}
	return n.Decode(&v) == nil && v == nil
}

// Decode fills into (a pointer to a struct with yaml tags) strictly: an
// unknown key, a missing key tagged `sluice:"required"` or a value of the
// wrong type is an error naming the key and its line. The "type" key is
// accepted and ignored.
func (s *Section) Decode(into any) error {
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: Decode needs a pointer to a struct, got %T", into)
	}
	return decodeStruct(s.file, s.path, s.node, rv.Elem(), true, nil)
}

// decodeAll is Decode reporting every key's problem rather than the
// first: unknown and repeated keys, bad values (the first problem inside
// each) and missing required keys, as Problems in the order of the
// section. For validation, which lists every problem at once.
func (s *Section) decodeAll(into any) error {
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: Decode needs a pointer to a struct, got %T", into)
	}
	var errs []error
	if err := decodeStruct(s.file, s.path, s.node, rv.Elem(), true, &errs); err != nil {
		return err
	}
	if len(errs) == 0 {
		return nil
	}
	return Problems(errs)
}

// Problems are several problems of one config section, each a *KeyError
// (errors.As finds the first).
type Problems []error

func (p Problems) Error() string {
	msgs := make([]string, len(p))
	for i, e := range p {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (p Problems) Unwrap() []error { return p }

var (
	durationType    = reflect.TypeOf(time.Duration(0))
	byteSizeType    = reflect.TypeOf(runtime.ByteSize(0))
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// hasOption reports whether a struct field's sluice tag lists opt:
// "required" (the key must be given) or "bytes" (an int field that takes
// a size such as 16MiB).
func hasOption(f reflect.StructField, opt string) bool {
	for _, o := range strings.Split(f.Tag.Get("sluice"), ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// decodeStruct decodes mapping n into struct v. With all nil it returns
// the first problem; otherwise it appends each key's problem to *all and
// goes on with the next key.
func decodeStruct(file, path string, n *yaml.Node, v reflect.Value, top bool, all *[]error) error {
	if n.Kind != yaml.MappingNode {
		return cfgErr(file, n.Line, path, "must be a mapping, got "+nodeKind(n))
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = i
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := path + "." + k.Value
		if top && k.Value == "type" {
			continue
		}
		idx, ok := fields[k.Value]
		if !ok {
			if err := problem(all, cfgErr(file, k.Line, key, unknownKey("key", k.Value, names))); err != nil {
				return err
			}
			continue
		}
		if seen[k.Value] {
			if err := problem(all, cfgErr(file, k.Line, key, "is given twice")); err != nil {
				return err
			}
			continue
		}
		seen[k.Value] = true
		fv := v.Field(idx)
		if hasOption(t.Field(idx), "bytes") && fv.Kind() == reflect.Int {
			// an int field holding a size: 16MiB as well as a number
			var b runtime.ByteSize
			if err := decodeValue(file, key, val, reflect.ValueOf(&b).Elem()); err != nil {
				if err := problem(all, err); err != nil {
					return err
				}
				continue
			}
			fv.SetInt(int64(b))
			continue
		}
		if err := decodeValue(file, key, val, fv); err != nil {
			if err := problem(all, err); err != nil {
				return err
			}
		}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if hasOption(f, "required") && !seen[name] {
			if err := problem(all, cfgErr(file, n.Line, path+"."+name, "is required")); err != nil {
				return err
			}
		}
	}
	return nil
}

// problem returns err when all is nil (stop at the first problem), and
// otherwise appends it to *all and returns nil (go on).
func problem(all *[]error, err error) error {
	if all == nil {
		return err
	}
	*all = append(*all, err)
	return nil
}

// decodeValue decodes val into fv as strictly as decodeStruct: structs in
// lists, maps and pointers reject unknown keys too.
func decodeValue(file, key string, val *yaml.Node, fv reflect.Value) error {
	if val.Kind == yaml.AliasNode && val.Alias != nil {
		val = val.Alias
	}
	null := val.Kind == yaml.ScalarNode && val.ShortTag() == "!!null"
	switch {
	case fv.Kind() != reflect.Pointer && reflect.PointerTo(fv.Type()).Implements(unmarshalerType):
		// a connector's own type (e.g. a list also written comma-separated)
		if null {
			fv.SetZero()
			return nil
		}
		if err := val.Decode(fv.Addr().Interface()); err != nil {
			return cfgErr(file, val.Line, key, err.Error())
		}
	case fv.Type() == durationType:
		if null {
			return nil
		}
		d, err := time.ParseDuration(val.Value)
		if err != nil || val.Kind != yaml.ScalarNode {
			return cfgErr(file, val.Line, key, fmt.Sprintf("expected a duration such as 500ms or 2s, got %s", nodeKind(val)))
		}
		fv.SetInt(int64(d))
	case fv.Type() == byteSizeType:
		if null {
			return nil
		}
		b, err := runtime.ParseByteSize(val.Value)
		if err != nil || val.Kind != yaml.ScalarNode {
			return cfgErr(file, val.Line, key, fmt.Sprintf("expected a size such as 16MiB, 512KiB or a number of bytes, got %s", nodeKind(val)))
		}
		fv.SetInt(int64(b))
	case fv.Kind() == reflect.Struct:
		if null {
			return nil
		}
		return decodeStruct(file, key, val, fv, false, nil)
	case fv.Kind() == reflect.Pointer:
		if null {
			fv.SetZero()
			return nil
		}
		e := reflect.New(fv.Type().Elem())
		if err := decodeValue(file, key, val, e.Elem()); err != nil {
			return err
		}
		fv.Set(e)
	case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() != reflect.Uint8:
		if null {
			fv.SetZero()
			return nil
		}
		if val.Kind != yaml.SequenceNode {
			return cfgErr(file, val.Line, key, "expected a list, got "+nodeKind(val))
		}
		out := reflect.MakeSlice(fv.Type(), len(val.Content), len(val.Content))
		for i, el := range val.Content {
			if err := decodeValue(file, fmt.Sprintf("%s[%d]", key, i), el, out.Index(i)); err != nil {
				return err
			}
		}
		fv.Set(out)
	case fv.Kind() == reflect.Map && fv.Type().Key().Kind() == reflect.String:
		if null {
			fv.SetZero()
			return nil
		}
		if val.Kind != yaml.MappingNode {
			return cfgErr(file, val.Line, key, "expected a mapping, got "+nodeKind(val))
		}
		out := reflect.MakeMapWithSize(fv.Type(), len(val.Content)/2)
		for i := 0; i+1 < len(val.Content); i += 2 {
			k := val.Content[i].Value
			mk := reflect.New(fv.Type().Key()).Elem()
			mk.SetString(k)
			if out.MapIndex(mk).IsValid() {
				return cfgErr(file, val.Content[i].Line, key+"."+k, "is given twice")
			}
			e := reflect.New(fv.Type().Elem()).Elem()
			if err := decodeValue(file, key+"."+k, val.Content[i+1], e); err != nil {
				return err
			}
			out.SetMapIndex(mk, e)
		}
		fv.Set(out)
	default:
		if val.Kind != yaml.ScalarNode {
			return cfgErr(file, val.Line, key, fmt.Sprintf("expected %s, got %s", kindName(fv.Type()), nodeKind(val)))
		}
		if err := val.Decode(fv.Addr().Interface()); err != nil {
			return cfgErr(file, val.Line, key, fmt.Sprintf("expected %s, got %q", kindName(fv.Type()), val.Value))
		}
	}
	return nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping"
	}
	return t.String()
}

// lookup finds the node of a key below the section: "mask[1].kind" (the
// section's own path first is optional). It returns nil when absent.
func (s *Section) lookup(key string) *yaml.Node {
	key = strings.TrimPrefix(strings.TrimPrefix(key, s.path), ".")
	n := s.node
	for key != "" && n != nil {
		part, rest, _ := strings.Cut(key, ".")
		key = rest
		name, idx, hasIdx := strings.Cut(part, "[")
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				next = n.Content[i+1]
			}
		}
		n = next
		if hasIdx && n != nil {
			var i int
			if _, err := fmt.Sscanf(idx, "%d]", &i); err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		}
	}
	return n
}

// Err is a config error about key (a path below the section such as
// "zero_dates" or "mask[1].kind"; "" for the section itself), naming the
// key and the line it is on (the section's line when the key is absent).
func (s *Section) Err(key, msg string) error {
	path, line := s.path, s.node.Line
	if key != "" {
		path = s.path + "." + key
		// An absent key: the line of the nearest enclosing one.
		for k := key; k != ""; k = parentKey(k) {
			if n := s.lookup(k); n != nil {
				line = n.Line
				break
			}
		}
	}
	return cfgErr(s.file, line, path, msg)
}

func parentKey(k string) string {
	if i := strings.LastIndexAny(k, ".["); i > 0 {
		return k[:i]
	}
	return ""
}

// keyOfValue finds the key path of a scalar below n whose value is v.
func keyOfValue(n *yaml.Node, prefix, v string) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == v {
			return prefix
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := keyOfValue(n.Content[i+1], strings.TrimPrefix(prefix+"."+n.Content[i].Value, "."), v); k != "" {
				return k
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if k := keyOfValue(c, fmt.Sprintf("%s[%d]", prefix, i), v); k != "" {
				return k
			}
		}
	}
	return ""
}

// Explain turns err, from a connector's check of the settings decoded from
// this section into shape (the struct given to Decode), into a config error
// that names YAML keys instead of the connector's Go field names: a
// connector's Config field and the YAML struct field carrying it share a
// name (Mask[1] ... Kind becomes mask[1] ... kind), so new keys need no
// table. The error names the deepest key it found and its line, and still
// matches err with errors.Is.
func (s *Section) Explain(err error, shape any) error {
	if err == nil {
		return nil
	}
	t := reflect.TypeOf(shape)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	msg := err.Error()
	var b strings.Builder
	top, ctx, ctxKey, best := t, t, "", ""
	quoted := false
	for i := 0; i < len(msg); {
		c := msg[i]
		if c == '"' {
			quoted = !quoted
		}
		if quoted || c < 'A' || c > 'Z' || (i > 0 && isIdent(msg[i-1])) {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(msg) && isIdent(msg[j]) {
			j++
		}
		word, index := msg[i:j], ""
		if j < len(msg) && msg[j] == '[' {
			if k := strings.IndexByte(msg[j:], ']'); k > 0 {
				index = msg[j : j+k+1]
			}
		}
		name, ft, ok := yamlField(ctx, word)
		base := ctxKey
		if !ok && ctx != top {
			if name, ft, ok = yamlField(top, word); ok {
				base = ""
			}
		}
		if !ok {
			b.WriteString(word)
			i = j
			continue
		}
		key := strings.TrimPrefix(base+"."+name+index, ".")
		best = key
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && index != "" {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			ctx, ctxKey = ft, key
		} else {
			ctx, ctxKey = top, ""
			if base != "" {
				ctx, ctxKey = typeAt(top, base), base
			}
		}
		b.WriteString(name + index)
		i = j + len(index)
	}
	if best == "" {
		// No setting named: a quoted value the section holds tells which
		// (table pattern "shop" is include[0]).
		for _, q := range quotedRe.FindAllStringSubmatch(msg, -1) {
			if k := keyOfValue(s.node, "", q[1]); k != "" && k != "type" {
				best = k
				break
			}
		}
	}
	ke := s.Err(best, b.String()).(*KeyError)
	ke.err = err
	return ke
}

var quotedRe = regexp.MustCompile(`"((?:[^"\\]|\\.)+)"`)

// typeAt is the struct type of a key path such as "mask[1]" below t.
func typeAt(t reflect.Type, key string) reflect.Type {
	for _, part := range strings.Split(key, ".") {
		name, _, hasIdx := strings.Cut(part, "[")
		f, ok := fieldByYAML(t, name)
		if !ok {
			return t
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if hasIdx && ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			return t
		}
		t = ft
	}
	return t
}

func fieldByYAML(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlField finds the field of struct t named goName and returns its YAML key.
func yamlField(t reflect.Type, goName string) (string, reflect.Type, bool) {
	f, ok := t.FieldByName(goName)
	if !ok || len(f.Index) != 1 {
		return "", nil, false
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" || name == "-" {
		return "", nil, false
	}
	return name, f.Type, true
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// MaxTasks bounds a source section's tasks key.
const MaxTasks = 64

// Tasks is the section's tasks key: how many tasks of a cluster split a
// source that can split its work (the RocketMQ replicator; any other
// source's decoder refuses the key). 1 when absent.
func (s *Section) Tasks() (int, error) {
	n := s.lookup("tasks")
	if n == nil {
		return 1, nil
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v < 1 || v > MaxTasks {
		return 0, s.Err("tasks", fmt.Sprintf("a whole number from 1 to %d", MaxTasks))
	}
	return v, nil
}
