package sandbox

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"
)

// What a person's sandbox has on this machine, and what it lacks and why:
// homes, their network of its own, limits of each run's own and a disk
// bound per person depend on how textslash runs (root or not, a
// container's devices, cgroup delegation). Each part says it at start
// where it is decided, with how to have it; confinement gathers them into
// one line at the runner's start, the textslash_sandbox gauge, and the
// sentence status shows the person (Event.Sandbox); the runner fills it
// in at start.

// Part is one part of the sandbox: On, or off and Why (for the log).
type Part struct {
	On  bool
	Why string
}

// Confinement is the parts of a person's sandbox on a runner.
type Confinement struct {
	Homes, Network, Limits, Disk Part
}

// namedPart is a part with its name (the log's, the gauge's) and what a
// person reads of it when it is off.
type namedPart struct {
	name   string
	p      Part
	person string
}

// parts are the confinement's parts, named.
func (c Confinement) parts() []namedPart {
	return []namedPart{
		{"homes", c.Homes, "your runs start cold (no home is kept between them)"},
		{"network", c.Network, "your agent shares this machine's network"},
		{"limits", c.Limits, "no memory, process or CPU limit of your own"},
		{"disk", c.Disk, "no disk bound of your own"},
	}
}

// Person is what status tells the person of the parts that are off; ""
// when none is.
func (c Confinement) Person() string {
	var off []string
	for _, p := range c.parts() {
		if !p.p.On {
			off = append(off, p.person)
		}
	}
	if len(off) == 0 {
		return ""
	}
	return "Sandbox here: " + strings.Join(off, "; ") + "."
}

// line is the start-up line: what is on, and what is off and why.
func (c Confinement) line() (string, bool) {
	var on, off []string
	for _, p := range c.parts() {
		if p.p.On {
			on = append(on, p.name)
		} else {
			off = append(off, p.name+" ("+p.p.Why+")")
		}
	}
	if len(off) == 0 {
		return "sandbox: " + strings.Join(on, ", ") + ": all on", true
	}
	s := "sandbox: OFF here: " + strings.Join(off, "; ")
	if len(on) > 0 {
		s += "; on: " + strings.Join(on, ", ")
	}
	return s, false
}

// sandboxParts is the confinement on /metrics.
var sandboxParts = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Name: "textslash_sandbox",
	Help: "Parts of a person's sandbox on this runner: 1 on, 0 off (homes, network of their own, limits of each run's own, disk bound); the runner's start-up line says why one is off.",
}, []string{"part"})

// Tell logs the confinement's line and sets the gauge.
func (c Confinement) Tell(log zerolog.Logger) {
	for _, p := range c.parts() {
		v := 0.0
		if p.p.On {
			v = 1
		}
		sandboxParts.WithLabelValues(p.name).Set(v)
	}
	line, all := c.line()
	ev := log.Warn()
	if all {
		ev = log.Info()
	}
	ev.Msg(line)
}
