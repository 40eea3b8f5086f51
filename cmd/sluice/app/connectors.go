package app

import (
	"crypto/tls"

	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema/secure"
)

// connectors holds every connector type a config may name. Each owns its
// section's keys (its Config's yaml tags), checks and constructor (BuildTask
// looks it up and calls it); adding one is one Register call here.
var connectors = plugin.NewRegistry()

func init() {
	connectors.Register(mysqlPlugin())
	connectors.Register(jdbcPlugin())
	connectors.Register(embedded.Plugin())
	connectors.Register(rocketmqPlugin())
	connectors.Register(kafkaPlugin())
	connectors.Register(replicatorPlugin())
	// a document validated through the REST API runs in a cluster
	connectors.SetDocumentCheck(func(c *plugin.Config) error {
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
// See plugin.Registry.ValidateConnector.
func ValidateConnector(pluginType string, doc []byte) ([]plugin.FieldError, error) {
	return connectors.ValidateConnector(pluginType, doc)
}

// Plugins lists the registered connector plugins.
func Plugins() []plugin.Plugin { return connectors.Plugins() }

// loadTLS checks a section's ssl_* keys and loads the files they name,
// unless the config holds a TLS config already.
func loadTLS(sec *plugin.Section, mode *string, t **tls.Config, ca, cert, key string) error {
	if *t != nil {
		return nil
	}
	m, c, err := secure.LoadClientTLS(*mode, ca, cert, key)
	if err != nil {
		return sec.Err("ssl_mode", err.Error())
	}
	*mode, *t = m, c
	return nil
}
