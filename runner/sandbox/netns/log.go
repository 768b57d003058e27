package netns

import (
	"log"
	"strings"

	"github.com/rs/zerolog"
)

// zerologStd turns an http.Server's own complaints (bad requests, TLS
// noise) into debug lines of the Net's log.
func zerologStd(l zerolog.Logger) *log.Logger {
	return log.New(debugWriter{l}, "", 0)
}

type debugWriter struct{ l zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.l.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
