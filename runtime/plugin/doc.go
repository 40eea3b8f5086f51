// Package plugin reads a pipeline's configuration and knows its
// connectors. A pipeline's YAML (Config) has one section per piece; a
// Registry maps each section's type to the Plugin that owns its keys (its
// config struct's yaml tags, decoded strictly by Section.Decode), their
// checks and its constructor (NewSource, NewSink or NewTransport, given
// the decoded config and the Task), and ValidateConnector answers REST's
// validate. The command registers the connectors and builds a task by
// calling the constructors of its sections' plugins. KeyDocs documents
// every key, from which the configuration reference is generated.
package plugin
