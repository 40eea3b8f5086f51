package runtime

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is a pipeline's configuration file: top-level keys name, source,
// transport, sink and positions. Each section has a "type" that selects the
// component; the component decodes the rest with Section.Decode.
type Config struct {
	File      string
	Name      string
	Source    *Section
	Transport *Section
	Sink      *Section
	Positions *Section
}

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
	return ParseConfig(b, path)
}

// ParseConfig parses YAML with ${ENV} and ${ENV:-default} expansion in values.
func ParseConfig(data []byte, file string) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", file, err, ErrConfig)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: the config must be a YAML mapping with keys name, source, transport, sink, positions: %w", file, ErrConfig)
	}
	root := doc.Content[0]
	if err := expandEnv(file, root); err != nil {
		return nil, err
	}
	c := &Config{File: file}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return nil, cfgErr(file, v.Line, "name", "must be a non-empty string")
			}
			c.Name = v.Value
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
			return nil, cfgErr(file, k.Line, k.Value, "unknown top-level key (known: name, source, transport, sink, positions)")
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
	return fmt.Errorf("%s:%d: %s: %s: %w", file, line, key, msg, ErrConfig)
}

func expandEnv(file string, n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		var missing []string
		n.Value = os.Expand(n.Value, func(name string) string {
			name, def, hasDef := strings.Cut(name, ":-")
			if v, ok := os.LookupEnv(name); ok && v != "" {
				return v
			}
			if !hasDef {
				missing = append(missing, name)
			}
			return def
		})
		if len(missing) > 0 {
			return cfgErr(file, n.Line, "${"+missing[0]+"}", "environment variable is not set (set it, or write ${"+missing[0]+":-default})")
		}
		if n.Style == 0 {
			n.Tag = "" // a plain scalar: let the expanded text resolve as a number or bool
		}
		return nil
	}
	for _, c := range n.Content {
		if err := expandEnv(file, c); err != nil {
			return err
		}
	}
	return nil
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
	return decodeStruct(s.file, s.path, s.node, rv.Elem(), true)
}

var durationType = reflect.TypeOf(time.Duration(0))

func decodeStruct(file, path string, n *yaml.Node, v reflect.Value, top bool) error {
	if n.Kind != yaml.MappingNode {
		return cfgErr(file, n.Line, path, "must be a mapping")
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
			return cfgErr(file, k.Line, key, "unknown key (known: "+strings.Join(names, ", ")+")")
		}
		seen[k.Value] = true
		fv := v.Field(idx)
		switch {
		case fv.Kind() == reflect.Struct:
			if err := decodeStruct(file, key, val, fv, false); err != nil {
				return err
			}
		case fv.Type() == durationType:
			d, err := time.ParseDuration(val.Value)
			if err != nil {
				return cfgErr(file, val.Line, key, fmt.Sprintf("expected a duration such as 500ms or 2s, got %q", val.Value))
			}
			fv.SetInt(int64(d))
		default:
			if err := val.Decode(fv.Addr().Interface()); err != nil {
				return cfgErr(file, val.Line, key, fmt.Sprintf("expected %s, got %q", kindName(fv.Type()), val.Value))
			}
		}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Tag.Get("sluice") == "required" && !seen[name] {
			return cfgErr(file, n.Line, path+"."+name, "is required")
		}
	}
	return nil
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
