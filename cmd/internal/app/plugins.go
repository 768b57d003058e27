package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/slack"
	"github.com/textslash/textslash/kit"
)

// A plug-in channel is a channel built with the kit (kit/, channels.md):
// textslash serve runs it beside ingress and egress, over the same NATS,
// when its settings turn it on (its token set), and cmd/<name> runs it as
// a process of its own. Registering one is an entry in plugins and its
// settings embedded in config (slack.go and discord.go here are the whole
// of Slack's and Discord's).

// plugin is one plug-in channel as this program runs it.
type plugin struct {
	// on reports whether the settings turn the channel on: token, the
	// variable that does, is set.
	on    func(*config) bool
	token string
	// open makes the channel from the settings, without touching the
	// network: a refused setting is a *contract.ConfigError of the
	// channel's service (the channel's name), which explain names by its
	// variable.
	open func(*config, zerolog.Logger) (channel.Channel, error)
}

// routes are what ch serves over HTTP (the Events API's), publishing
// with h, if any.
func routes(ch channel.Channel, h channel.Host) map[string]http.Handler {
	if r, ok := ch.(channel.Router); ok {
		return r.Routes(h)
	}
	return nil
}

// plugins are the plug-in channels, by name (their subject token).
var plugins = map[string]plugin{
	slack.Channel:   slackPlugin,
	discord.Channel: discordPlugin,
}

// pluginsOn are the names of the plug-in channels the settings turn on.
func (c *config) pluginsOn() []string {
	var on []string
	for _, name := range slices.Sorted(maps.Keys(plugins)) {
		if plugins[name].on(c) {
			on = append(on, name)
		}
	}
	return on
}

// runsPlugins reports whether this process runs the plug-in channels
// turned on: textslash serve does where it runs both edges (ingress and
// egress); a single service's binary never does (cmd/<name> runs each).
func (c *config) runsPlugins() bool { return c.Provision && c.runs(Ingress) && c.runs(Egress) }

// validatePlugins has the plug-in channels this process runs check their
// settings before anything starts.
func (c *config) validatePlugins() error {
	if !c.runsPlugins() {
		return nil
	}
	var errs []error
	for _, name := range c.pluginsOn() {
		_, err := plugins[name].open(c, zerolog.Nop())
		errs = append(errs, err)
	}
	return explain(errors.Join(errs...))
}

// pluginPart is the part of this process that runs plug-in channel name
// with the kit over env's NATS: opened now (the streams are there), run
// with the process.
func pluginPart(ctx context.Context, name string, cfg *config, env partEnv) (part, error) {
	ch, err := plugins[name].open(cfg, env.log)
	if err != nil {
		return part{}, explain(err)
	}
	k, err := kit.Open(ctx, env.js.Conn(), ch, env.log)
	if err != nil {
		return part{}, fmt.Errorf("%s: %w", name, err)
	}
	return part{run: k.Run, routes: routes(ch, k)}, nil
}
