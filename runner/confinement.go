package runner

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// What a person's sandbox has on this machine, and what it lacks and why:
// homes, their network of its own, limits of each run's own and a disk
// bound per person depend on how textslash runs (root or not, a
// container's devices, cgroup delegation). Each part says it at start
// where it is decided, with how to have it; confinement gathers them into
// one line at the runner's start, the textslash_sandbox gauge, and the
// sentence status shows the person (Event.Sandbox).

// part is one part of the sandbox: on, or off and why (for the log).
type part struct {
	on  bool
	why string
}

// confinement is the parts of the sandbox on this runner.
type confinement struct {
	homes, network, limits, disk part
}

// namedPart is a part with its name (the log's, the gauge's) and what a
// person reads of it when it is off.
type namedPart struct {
	name   string
	p      part
	person string
}

// parts are the confinement's parts, named.
func (c confinement) parts() []namedPart {
	return []namedPart{
		{"homes", c.homes, "your runs start cold (no home is kept between them)"},
		{"network", c.network, "your agent shares this machine's network"},
		{"limits", c.limits, "no memory, process or CPU limit of your own"},
		{"disk", c.disk, "no disk bound of your own"},
	}
}

// person is what status tells the person of the parts that are off; ""
// when none is.
func (c confinement) person() string {
	var off []string
	for _, p := range c.parts() {
		if !p.p.on {
			off = append(off, p.person)
		}
	}
	if len(off) == 0 {
		return ""
	}
	return "Sandbox here: " + strings.Join(off, "; ") + "."
}

// line is the start-up line: what is on, and what is off and why.
func (c confinement) line() (string, bool) {
	var on, off []string
	for _, p := range c.parts() {
		if p.p.on {
			on = append(on, p.name)
		} else {
			off = append(off, p.name+" ("+p.p.why+")")
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

// tell logs the confinement's line and sets the gauge.
func (c confinement) tell(r *Runner) {
	for _, p := range c.parts() {
		v := 0.0
		if p.p.on {
			v = 1
		}
		sandboxParts.WithLabelValues(p.name).Set(v)
	}
	line, all := c.line()
	ev := r.log.Warn()
	if all {
		ev = r.log.Info()
	}
	ev.Msg(line)
}
