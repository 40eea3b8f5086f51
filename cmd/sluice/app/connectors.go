package app

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
)

// connectors holds every connector type a config may name. Each owns its
// section's keys (its Config's yaml tags), checks and constructor (BuildTask
// looks it up and calls it); adding one is one Register call here.
var connectors = runtime.NewRegistry()

func init() {
	connectors.Register(mysqlPlugin())
	connectors.Register(jdbcPlugin())
	connectors.Register(embedded.Plugin())
	connectors.Register(rocketmqPlugin())
	connectors.Register(kafkaPlugin())
	// a document validated through the REST API runs in a cluster
	connectors.SetDocumentCheck(func(c *runtime.Config) error {
		_, err := decodeTask(c, "", true)
		return err
	})
}

// ValidateConnector checks one connector's config without connecting, as
// `sluice validate` does, for PUT /connector-plugins/{type}/config/validate.
// pluginType is a plugin name (mysql, jdbc, embedded, kafka, rocketmq) or a section
// type (mariadb, postgres, ...); doc is JSON or YAML: the connector's
// section alone (its keys; "type" optional; paths come back as
// "source.server_id") or a whole pipeline document (name, source,
// transport, sink, positions), of which the plugin's section is checked.
// See runtime.Registry.ValidateConnector.
func ValidateConnector(pluginType string, doc []byte) ([]runtime.FieldError, error) {
	return connectors.ValidateConnector(pluginType, doc)
}

// Plugins lists the registered connector plugins.
func Plugins() []runtime.Plugin { return connectors.Plugins() }

// loadTLS checks a section's ssl_* keys and loads the files they name,
// unless the config holds a TLS config already.
func loadTLS(sec *runtime.Section, mode *string, t **tls.Config, ca, cert, key string) error {
	if *t != nil {
		return nil
	}
	m, c, err := schema.LoadClientTLS(*mode, ca, cert, key)
	if err != nil {
		return sec.Err("ssl_mode", err.Error())
	}
	*mode, *t = m, c
	return nil
}

// codecOptions are the event format the source's Debezium options ask for.
func codecOptions(c *binlog.Config) converter.Options {
	return converter.Options{Schemas: true, DecimalMode: converter.DecimalMode(c.DecimalHandlingMode),
		BigintUnsignedMode: c.BigintUnsignedHandlingMode, TimePrecisionMode: c.TimePrecisionMode,
		BinaryMode: c.BinaryHandlingMode, OmitTransaction: !truthy(c.ProvideTransactionMetadata, true)}
}

func truthy(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// mysqlPlugin is the MySQL/MariaDB binlog source: binlog.Config.
func mysqlPlugin() runtime.Plugin {
	return runtime.Plugin{Kind: runtime.KindSource, Name: "mysql", Types: []string{"mysql", "mariadb"},
		New: func() any { return &binlog.Config{} },
		Validate: func(v any, sec *runtime.Section, doc *runtime.Config) error {
			c := v.(*binlog.Config)
			if c.Flavor == "" {
				c.Flavor = sec.Type
			}
			if c.ServerName == "" {
				c.ServerName = doc.Name
			}
			c.HistoryFile = doc.Resolve(c.HistoryFile)
			c.SSLCA, c.SSLCert, c.SSLKey = doc.Resolve(c.SSLCA), doc.Resolve(c.SSLCert), doc.Resolve(c.SSLKey)
			if err := loadTLS(sec, &c.TLSMode, &c.TLS, c.SSLCA, c.SSLCert, c.SSLKey); err != nil {
				return err
			}
			if err := codecOptions(c).Validate(); err != nil {
				return err
			}
			if err := c.Validate(); err != nil {
				return err
			}
			// Every check NewSource makes (it does not connect), so that
			// validate refuses what run would.
			_, err := binlog.NewSource(*c, slog.New(slog.DiscardHandler))
			return err
		},
		NewSource: newBinlogSource,
		NewTables: binlogTables}
}

// jdbcPlugin is the PostgreSQL and MySQL sink: sink.Config.
func jdbcPlugin() runtime.Plugin {
	return runtime.Plugin{Kind: runtime.KindSink, Name: "jdbc", Types: []string{"postgres", "mysql"}, Aliases: []string{"postgresql", "mariadb"},
		// the defaults of absent boolean keys; the others' zero values
		// mean their defaults
		New: func() any { return &sink.Config{AutoCreate: true, AutoEvolve: true, TimeAsInterval: true} },
		Validate: func(v any, sec *runtime.Section, doc *runtime.Config) error {
			c := v.(*sink.Config)
			c.Dialect = sink.DialectPostgres
			if sec.Type == "mysql" || sec.Type == "mariadb" {
				c.Dialect = sink.DialectMySQL
			}
			c.Pipeline = doc.Name
			c.SSLCA, c.SSLCert, c.SSLKey = doc.Resolve(c.SSLCA), doc.Resolve(c.SSLCert), doc.Resolve(c.SSLKey)
			if err := loadTLS(sec, &c.TLSMode, &c.TLS, c.SSLCA, c.SSLCert, c.SSLKey); err != nil {
				return err
			}
			switch c.OnError {
			case "", sink.OnErrorFail, sink.OnErrorSkip:
			case sink.OnErrorDLQ:
				if doc.Transport != nil && doc.Transport.Type != "rocketmq" {
					return sec.Err("on_error", "dlq writes to a RocketMQ topic: it needs the rocketmq transport")
				}
			default:
				return sec.Err("on_error", fmt.Sprintf("must be fail, skip or dlq, not %q", c.OnError))
			}
			// Every check sink.New makes before it connects.
			return sink.Validate(*c)
		},
		NewSink: newJDBCSink}
}

// rocketmqPlugin is the RocketMQ transport: rocketmq.Config.
func rocketmqPlugin() runtime.Plugin {
	return runtime.Plugin{Kind: runtime.KindTransport, Name: "rocketmq", Types: []string{"rocketmq"},
		New: func() any { return &rocketmq.Config{} },
		Validate: func(v any, sec *runtime.Section, doc *runtime.Config) error {
			c := v.(*rocketmq.Config)
			c.Pipeline = doc.Name
			return checkTransport(sec, "name server", c.NameServers, c.MaxCachedRecords, int64(c.MaxCachedBytes), c.Validate)
		},
		NewTransport: newRocketMQ}
}

// kafkaPlugin is the Kafka transport: kafka.Config.
func kafkaPlugin() runtime.Plugin {
	return runtime.Plugin{Kind: runtime.KindTransport, Name: "kafka", Types: []string{"kafka"},
		New: func() any { return &kafka.Config{} },
		Validate: func(v any, sec *runtime.Section, doc *runtime.Config) error {
			c := v.(*kafka.Config)
			c.Pipeline = doc.Name
			return checkTransport(sec, "broker", c.Brokers, c.MaxInFlight, int64(c.MaxInFlightBytes), c.Validate)
		},
		NewTransport: newKafka}
}

// checkTransport is a broker transport's check: a warning for each address
// off loopback, the memory limits, then the config's own validate.
func checkTransport(sec *runtime.Section, what string, addrs []string, records int, bytes int64, validate func() error) error {
	for _, a := range addrs {
		if host, _, _ := strings.Cut(a, ":"); host != "127.0.0.1" && host != "localhost" {
			slog.Warn(what+" is not on loopback", "address", a)
		}
	}
	if err := runtime.CheckInFlight(sec, records, bytes); err != nil {
		return err
	}
	return validate()
}
