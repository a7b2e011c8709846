package main

import (
	"context"
	"log/slog"
)

// lineHandler writes each record of a log as one line: its message with the level in front
// ("warn: ", "debug: ", "error: "; info lines with info in front or not, as the log's style
// says). Records below min are dropped before they are formatted.
type lineHandler struct {
	write func(line string)
	min   slog.Level
	info  string // what an info line starts with: "info: " in the mount's log, "" for a command
}

// newLineLog is a log written by write, one line a record.
func newLineLog(write func(line string), min slog.Level, info string) *slog.Logger {
	return slog.New(lineHandler{write: write, min: min, info: info})
}

func (h lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	prefix := h.info
	switch {
	case r.Level >= slog.LevelError:
		prefix = "error: "
	case r.Level >= slog.LevelWarn:
		prefix = "warn: "
	case r.Level < slog.LevelInfo:
		prefix = "debug: "
	}
	h.write(prefix + r.Message)
	return nil
}

func (h lineHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lineHandler) WithGroup(string) slog.Handler      { return h }
