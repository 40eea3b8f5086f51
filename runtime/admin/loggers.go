package admin

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Option changes what NewHandler serves.
type Option func(*api)

// WithLogLevel serves Kafka Connect's /admin/loggers over lv, the level of
// the process's logger: GET /admin/loggers, GET /admin/loggers/root and
// PUT /admin/loggers/root {"level": "DEBUG"}. sluice has one logger,
// "root"; Kafka Connect's level names are taken (TRACE is DEBUG-4, FATAL
// is ERROR+4, OFF silences it).
func WithLogLevel(lv *slog.LevelVar) Option {
	return func(a *api) { a.loggers = &loggers{lv: lv} }
}

// rootLogger is the one logger name sluice has.
const rootLogger = "root"

type loggers struct {
	lv       *slog.LevelVar
	mu       sync.Mutex
	modified *int64 // ms since the epoch of the last PUT; nil before one
}

// LoggerLevel is Kafka Connect's description of one logger.
type LoggerLevel struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

var levelNames = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4, "OFF": slog.LevelError + 100,
}

// levelName is lv in Kafka Connect's names.
func levelName(lv slog.Level) string {
	best, name := slog.Level(-1000), "TRACE"
	for n, l := range levelNames {
		if l <= lv && l > best {
			best, name = l, n
		}
	}
	return name
}

func (l *loggers) current() LoggerLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LoggerLevel{Level: levelName(l.lv.Level()), LastModified: l.modified}
}

func (a *api) listLoggers(rw http.ResponseWriter, r *http.Request) {
	if a.loggers == nil {
		writeError(rw, http.StatusNotFound, "this process serves no log levels")
		return
	}
	writeJSON(rw, http.StatusOK, map[string]LoggerLevel{rootLogger: a.loggers.current()})
}

func (a *api) getLogger(rw http.ResponseWriter, r *http.Request) {
	if a.loggers == nil || r.PathValue("logger") != rootLogger {
		writeError(rw, http.StatusNotFound, fmt.Sprintf("no logger %q: sluice has one, %q", r.PathValue("logger"), rootLogger))
		return
	}
	writeJSON(rw, http.StatusOK, a.loggers.current())
}

func (a *api) putLogger(rw http.ResponseWriter, r *http.Request) {
	if a.loggers == nil || r.PathValue("logger") != rootLogger {
		writeError(rw, http.StatusNotFound, fmt.Sprintf("no logger %q: sluice has one, %q", r.PathValue("logger"), rootLogger))
		return
	}
	if scope := r.URL.Query().Get("scope"); scope != "" && !strings.EqualFold(scope, "worker") {
		writeError(rw, http.StatusBadRequest, fmt.Sprintf("scope %q: only scope=worker (this process) is supported", scope))
		return
	}
	var body struct {
		Level string `json:"level"`
	}
	if err := decodeBody(rw, r, &body); err != nil {
		writeError(rw, http.StatusBadRequest, err.Error())
		return
	}
	lv, ok := levelNames[strings.ToUpper(strings.TrimSpace(body.Level))]
	if !ok {
		writeError(rw, http.StatusBadRequest, fmt.Sprintf(`level %q: send {"level": "TRACE|DEBUG|INFO|WARN|ERROR|FATAL|OFF"}`, body.Level))
		return
	}
	l := a.loggers
	l.mu.Lock()
	old := l.lv.Level()
	l.lv.Set(lv)
	now := time.Now().UnixMilli()
	l.modified = &now
	l.mu.Unlock()
	slog.Info("log level changed through REST", "logger", rootLogger, "from", levelName(old), "to", levelName(lv), "remote", r.RemoteAddr)
	writeJSON(rw, http.StatusOK, []string{rootLogger})
}
