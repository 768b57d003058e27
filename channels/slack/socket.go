package slack

import (
	"context"
	"errors"
	"fmt"

	api "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// runSocket takes events over Socket Mode until ctx ends. An envelope is
// acknowledged once what it carries is stored (or is nothing to store):
// one not acknowledged is delivered again by Slack.
func (s *Slack) runSocket(ctx context.Context) error {
	sm := socketmode.New(s.client, socketmode.OptionLog(socketLog{s}))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sm.RunContext(ctx) }()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack: socket mode: %w", err)
		case evt := <-sm.Events:
			s.onSocketEvent(ctx, sm, evt)
		}
	}
}

// onSocketEvent handles one event of the Socket Mode client.
func (s *Slack) onSocketEvent(ctx context.Context, sm *socketmode.Client, evt socketmode.Event) {
	log := s.log
	if evt.Request != nil {
		log = log.With().Str("envelope_id", evt.Request.EnvelopeID).Int("retry_attempt", evt.Request.RetryAttempt).Logger()
	}
	var err error
	switch evt.Type {
	case socketmode.EventTypeConnected:
		log.Info().Msg("slack socket mode connected")
		return
	case socketmode.EventTypeConnectionError, socketmode.EventTypeInvalidAuth:
		ev := log.Warn().Str("event", string(evt.Type))
		if ce, ok := evt.Data.(*api.ConnectionErrorEvent); ok {
			ev = ev.Err(ce.ErrorObj).Int("attempt", ce.Attempt)
		}
		ev.Msg("slack socket mode connection failed; trying again")
		return
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok {
			return
		}
		if in, conversation, ok := s.fromEvent(ev.InnerEvent); ok {
			_, err = s.take(ctx, log, in, conversation)
		}
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(api.InteractionCallback)
		if !ok {
			return
		}
		if in, conversation, ok := s.fromPress(cb); ok {
			var stored bool
			if stored, err = s.take(ctx, log, in, conversation); stored {
				s.settlePress(ctx, log, cb)
			}
		}
	default:
		return
	}
	if err != nil || evt.Request == nil {
		return // not acknowledged: Slack delivers it again
	}
	if err := sm.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil && !errors.Is(err, context.Canceled) {
		log.Warn().Err(err).Msg("slack envelope not acknowledged; Slack will deliver it again")
	}
}

// socketLog is the Socket Mode client's log, at debug level.
type socketLog struct{ s *Slack }

func (l socketLog) Output(_ int, msg string) error {
	l.s.log.Debug().Str("from", "socketmode").Msg(msg)
	return nil
}
