// Package secure holds what every client connection of sluice shares and
// must get right once: MySQL's ssl-mode vocabulary and the TLS
// configuration it implies (used by the source and by both sink dialects,
// which may not import each other), and the redaction of DSNs and their
// passwords from error texts, so that no secret reaches a log or a status.
package secure
