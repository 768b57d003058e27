package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/alecthomas/kong"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// streamsOf names the streams each service uses (a bucket is the stream
// KV_<bucket>, an object store OBJ_<bucket>): a service of its own waits
// for them at start and is ready only while they are there.
var streamsOf = map[string][]string{
	Ingress: {contract.StreamIn, contract.StreamEvents, bus.ObjectStream(contract.BucketMedia), bus.KVStream(contract.BucketPeople)},
	Dispatcher: {contract.StreamIn, contract.StreamQueue, contract.StreamJobs, contract.StreamEvents, contract.StreamTimers,
		bus.KVStream(contract.BucketUsers), bus.KVStream(contract.BucketCosts), bus.KVStream(contract.BucketPeople), bus.KVStream(contract.BucketPairing)},
	Runner: {contract.StreamJobs, contract.StreamEvents, bus.KVStream(contract.BucketUsers), bus.KVStream(contract.BucketRunners),
		bus.KVStream(contract.BucketWorkspaces), bus.ObjectStream(contract.BucketMedia)},
	Media:  {bus.ObjectStream(contract.BucketMedia)},
	Egress: {contract.StreamEvents, bus.KVStream(contract.BucketEgress), bus.KVStream(contract.BucketPeople)},
}

// streams is every stream the process's services use.
func (c *config) streams() []string {
	var names []string
	for _, s := range c.Services {
		for _, name := range streamsOf[s] {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// waitStreams returns once every named stream exists, saying every 30 s
// which one it still waits for; textslash provision creates them.
func waitStreams(ctx context.Context, js jetstream.JetStream, names []string, log zerolog.Logger) error {
	var told time.Time
	for {
		missing, err := missingStream(ctx, js, names)
		if missing == "" {
			return nil
		}
		if time.Since(told) > 30*time.Second {
			log.Warn().Err(err).Str("stream", missing).Msg("waiting for the streams: run textslash provision against this NATS")
			told = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: %w", missing, err)
		case <-time.After(time.Second):
		}
	}
}

// missingStream is the first of names that cannot be looked up, and why.
func missingStream(ctx context.Context, js jetstream.JetStream, names []string) (string, error) {
	for _, name := range names {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := js.Stream(sctx, name)
		cancel()
		if err != nil {
			return name, err
		}
	}
	return "", nil
}

const provisionUsage = `Creates or updates every stream, consumer and bucket textslash uses on the
NATS server at NATS_URL, then exits. The services started on their own
(ingress, dispatcher, runner, media, egress) wait for them; run it once
per NATS (again after an upgrade), as a user allowed to manage JetStream
(nats.conf's admin). textslash serve does it itself at every start.

Each flag is also read from the environment variable in brackets.`

// adminVars fill the help of the settings admin commands share with
// serve.
func adminVars(natsURL string) kong.Vars {
	vars := defaults()
	vars["nats_url_help"] = natsURL
	vars["data_help"] = "textslash serve's data directory, for its admin login"
	return vars
}

// connectAdmin logs in to NATS for the command name.
func connectAdmin(cc common, name string, stderr io.Writer) (jetstream.JetStream, zerolog.Logger, func(), error) {
	c := config{common: cc, Services: []string{name}}
	log := newLogger(c, stderr)
	nc, closeNATS, err := connectNATS(c, log)
	if err != nil {
		return nil, log, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		closeNATS()
		return nil, log, nil, err
	}
	return js, log, closeNATS, nil
}

// Provision is `textslash provision`.
func Provision(args []string, stderr io.Writer) int {
	var c struct {
		common  `embed:""`
		storage `embed:""`
	}
	_, err := parse("textslash provision", provisionUsage, &c, adminVars("the NATS server (required)"), args, os.LookupEnv, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err == nil && c.NATSURL == "" {
		err = errors.New("NATS_URL: required")
	}
	if err == nil {
		err = c.storage.validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "textslash provision: %v\n", err)
		return 2
	}
	js, log, closeNATS, err := connectAdmin(c.common, "provision", stderr)
	if err == nil {
		defer closeNATS()
		err = bus.Provision(context.Background(), js, c.storage.options())
	}
	if err != nil {
		log.Error().Err(err).Msg("provision failed")
		return 1
	}
	log.Info().Int("replicas", c.Replicas).Msg("streams, consumers and buckets ready")
	return 0
}
