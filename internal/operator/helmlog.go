package operator

import "github.com/go-logr/logr"

// helmLogVerbosity is the most verbose level the Helm reconciler logs at.
// From V(4) on, helm-operator-plugins prints every rendered manifest, or its
// diff, to standard output whole: an instance's Secret with its flag and
// secretEnv values in clear. No log level may print a secret, so its logger
// never reports V(4) enabled, whatever --zap-log-level says.
const helmLogVerbosity = 3

// helmLogger is base with levels past helmLogVerbosity turned off.
func helmLogger(base logr.Logger) logr.Logger {
	if base.GetSink() == nil {
		return base
	}
	sink := base.GetSink()
	if withDepth, ok := sink.(logr.CallDepthLogSink); ok {
		sink = withDepth.WithCallDepth(1) // the frame of cappedSink.Info
	}
	return logr.New(cappedSink{LogSink: sink, max: helmLogVerbosity})
}

// cappedSink is a LogSink that drops everything more verbose than max.
type cappedSink struct {
	logr.LogSink
	max int
}

// Init does nothing: the sink it wraps was set up by its own logger.
func (s cappedSink) Init(logr.RuntimeInfo) {}

func (s cappedSink) Enabled(level int) bool {
	return level <= s.max && s.LogSink.Enabled(level)
}

func (s cappedSink) Info(level int, msg string, kv ...any) {
	if level <= s.max {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s cappedSink) WithValues(kv ...any) logr.LogSink {
	return cappedSink{LogSink: s.LogSink.WithValues(kv...), max: s.max}
}

func (s cappedSink) WithName(name string) logr.LogSink {
	return cappedSink{LogSink: s.LogSink.WithName(name), max: s.max}
}
