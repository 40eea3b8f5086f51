// Package admin serves sluice's REST API (shaped like Kafka Connect's) and
// its metrics. It consumes the small Cluster interface below; the cluster
// runtime (`sluice worker`) implements it over the coordinator database,
// and a single process (`sluice run`) over its one pipeline.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/runtime/plugin"
)

// Errors a Cluster returns; the API maps them to HTTP codes.
var (
	ErrNotFound = errors.New("no such connector")             // 404
	ErrExists   = errors.New("connector already exists")      // 409
	ErrInvalid  = errors.New("invalid connector config")      // 400 (wrapped with the reasons)
	ErrConflict = errors.New("changed concurrently, retry")   // 409 (a lost compare-and-set)
	ErrReadOnly = errors.New("not supported by this process") // 405 (e.g. POST /connectors on `sluice run`)
)

// ErrState (409): not possible in the connector's current state, e.g. an
// offset reset while it runs, a pause of a stopped one.
var ErrState = errors.New("not possible in the connector's current state")

// ConnectorInfo is a connector's stored definition. Config is the
// connector's document (the same keys as a `sluice run` YAML file) as a
// JSON object.
type ConnectorInfo struct {
	Name    string          `json:"name"`
	Config  json.RawMessage `json:"config"`
	Tasks   []TaskID        `json:"tasks"`
	Type    string          `json:"type"`    // "source", "sink" or "source_sink" (embedded: one task does both)
	Version int64           `json:"version"` // raised at every config change; compare-and-set token
}

// TaskID names one task of a connector: 0 is the source task; 1..n are sink
// tasks (over RocketMQ). An embedded connector has the one task 0.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// TaskInfo is one task and the config it runs with.
type TaskInfo struct {
	ID     TaskID          `json:"id"`
	Role   string          `json:"role"` // "source", "sink" or "source_sink"
	Config json.RawMessage `json:"config"`
}

// TaskState is where a task runs and how it is.
type TaskState struct {
	ID         int    `json:"id"`
	Role       string `json:"role"`
	State      string `json:"state"` // RUNNING, PAUSED, FAILED, UNASSIGNED, RESTARTING, FINISHED, STOPPED
	WorkerID   string `json:"worker_id"`
	Epoch      int64  `json:"epoch"`      // the lease epoch it runs under (0: no lease)
	Generation int64  `json:"generation"` // the config version it runs
	Trace      string `json:"trace,omitempty"`
	// Extra, a JSON object, adds its members to the task's entry (a
	// cluster: what its worker last reported, as sluice run's status has
	// it: counters, position, lag, snapshot, last_error); the members
	// above win a clash.
	Extra json.RawMessage `json:"-"`
}

// MarshalJSON writes the task's state with Extra's members merged in.
func (s TaskState) MarshalJSON() ([]byte, error) {
	type plain TaskState
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	return withExtra(b, s.Extra, fmt.Sprintf("task %d", s.ID))
}

// ConnectorState is the connector's own state.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
}

// ConnectorStatus is GET /connectors/{name}/status.
type ConnectorStatus struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      string         `json:"type"`
	// Extra, a JSON object, adds its members at the top level of the
	// body (the single process: its counters, position, lag, backlog and
	// snapshot progress); the members above win a clash.
	Extra json.RawMessage `json:"-"`
}

// MarshalJSON writes the status with Extra's members merged in.
func (s ConnectorStatus) MarshalJSON() ([]byte, error) {
	type plain ConnectorStatus
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	return withExtra(b, s.Extra, s.Name)
}

// withExtra merges the members of the JSON object extra (nil or null:
// none) into the object b, b's members winning a clash.
func withExtra(b []byte, extra json.RawMessage, what string) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	var base, more map[string]json.RawMessage
	if err := json.Unmarshal(b, &base); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(extra, &more); err != nil {
		return nil, fmt.Errorf("status of %s: extra fields are not a JSON object: %w", what, err)
	}
	if more == nil { // extra was null
		return b, nil
	}
	for k, v := range base {
		more[k] = v
	}
	return json.Marshal(more)
}

// WorkerInfo is one live or recently seen worker.
type WorkerInfo struct {
	ID            string   `json:"id"`
	URL           string   `json:"url"`
	LastHeartbeat string   `json:"last_heartbeat"` // RFC 3339, the database's clock
	Alive         bool     `json:"alive"`
	Tasks         []string `json:"tasks"` // lease task names it holds
}

// ConfigValue is one key's value and verdict in a validation, Kafka
// Connect's ConfigValueInfo.
type ConfigValue struct {
	Name              string   `json:"name"`  // dotted path, e.g. source.server_id
	Value             any      `json:"value"` // as given; null when absent
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// ConfigInfo is one entry of a validation, Kafka Connect's ConfigInfo:
// the key's definition (null for an entry no key defines, such as the
// servers' verdict) and its value.
type ConfigInfo struct {
	Definition *ConfigKeyInfo `json:"definition"`
	Value      ConfigValue    `json:"value"`
}

// Validation is PUT /connector-plugins/{type}/config/validate, Kafka
// Connect's ConfigInfos: every key of the plugin's section with its
// definition and value, and the problems found.
type Validation struct {
	Name       string       `json:"name"` // the plugin type
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// Problem is an entry of a validation that no key defines: name (such as
// "servers" or "config") and its errors.
func Problem(name string, errs ...string) ConfigInfo {
	return ConfigInfo{Value: ConfigValue{Name: name, Errors: append([]string{}, errs...), RecommendedValues: []string{}, Visible: true}}
}

// Plugin is one registered connector type, in Kafka Connect's shape of
// GET /connector-plugins.
type Plugin struct {
	Class   string `json:"class"`   // the plugin's name or a section type it serves, e.g. mysql, jdbc, postgres
	Type    string `json:"type"`    // "source", "sink" or "transport"
	Version string `json:"version"` // the binary's version (Version)
}

// ConfigKeyInfo is one key's definition in Kafka Connect's shape of GET
// /connector-plugins/{type}/config (its ConfigKeyInfo): the allowed values
// end the documentation.
type ConfigKeyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"` // HIGH for a required key, else MEDIUM
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"` // the section: source, sink, transport
	Width         string   `json:"width"` // NONE
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
	Order         int      `json:"order"` // the key's place in its section, from 1
}

// KeyInfos are the definitions of a section's keys (plugin.ConfigKey) in
// Kafka Connect's shape; group is the section.
func KeyInfos(group string, keys []plugin.ConfigKey) []ConfigKeyInfo {
	out := make([]ConfigKeyInfo, 0, len(keys))
	for i, k := range keys {
		info := ConfigKeyInfo{Name: k.Name, Type: k.Type, Required: k.Required, Importance: "MEDIUM", Documentation: k.Doc,
			Group: &group, Width: "NONE", DisplayName: k.Name, Dependents: []string{}, Order: i + 1}
		if k.Required {
			info.Importance = "HIGH"
		}
		if k.Default != "" {
			d := k.Default
			info.DefaultValue = &d
		}
		if len(k.Values) > 0 {
			info.Documentation += " Allowed values: " + strings.Join(k.Values, ", ") + "."
		}
		out = append(out, info)
	}
	return out
}

// PluginConfigs is a Cluster that serves GET
// /connector-plugins/{type}/config: the definitions of a plugin's keys
// (ErrNotFound for a type no plugin serves).
type PluginConfigs interface {
	PluginConfig(ctx context.Context, pluginType string) ([]ConfigKeyInfo, error)
}

// Cluster is what the API needs from the runtime behind it.
type Cluster interface {
	Connectors(ctx context.Context) ([]string, error)
	Create(ctx context.Context, name string, config json.RawMessage) (ConnectorInfo, error)
	Connector(ctx context.Context, name string) (ConnectorInfo, error)
	// PutConfig creates or replaces; created says which.
	PutConfig(ctx context.Context, name string, config json.RawMessage) (info ConnectorInfo, created bool, err error)
	Delete(ctx context.Context, name string) error
	Status(ctx context.Context, name string) (ConnectorStatus, error)
	Tasks(ctx context.Context, name string) ([]TaskInfo, error)
	Pause(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Restart(ctx context.Context, name string) error
	Validate(ctx context.Context, pluginType string, config json.RawMessage) (Validation, error)
	Plugins(ctx context.Context) ([]Plugin, error)
	Workers(ctx context.Context) ([]WorkerInfo, error)
}
