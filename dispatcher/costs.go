package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/textslash/textslash/contract"
)

// Budgets are spending limits in USD; zero is no limit. Days and months
// are those of the dispatcher's time zone.
type Budgets struct {
	// PersonDaily and PersonMonthly bound each person's runs.
	PersonDaily, PersonMonthly float64
	// Daily and Monthly bound everybody's runs together.
	Daily, Monthly float64
}

func (b Budgets) any() bool {
	return b.PersonDaily > 0 || b.PersonMonthly > 0 || b.Daily > 0 || b.Monthly > 0
}

// costs keeps what runs cost in the costs bucket: per person and day or
// month, the same for the whole deployment, and each person's last run.
type costs struct {
	kv      jetstream.KeyValue
	loc     *time.Location
	budgets Budgets
	agent   string // what the runners run, for what it reports

	// written is each entry as this dispatcher last wrote it, at its
	// revision: add starts from it rather than reading the entry again
	// (the deployment's entries change with every run). Its
	// compare-and-set fails when the entry changed since (another
	// dispatcher counted a run, or the entry expired), and add reads it
	// then. Emptied when it holds writtenKept entries.
	mu      sync.Mutex
	written map[string]costEntry
	// adding serializes this dispatcher's adds to each entry (a lock for
	// the entries whose keys hash alike): of adds to one entry at once,
	// all but one would fail their compare-and-set and read it again, as
	// the deployment's entries would with every run.
	adding [16]sync.Mutex
	seed   maphash.Seed
}

// costEntry is an entry of the costs bucket at a revision.
type costEntry struct {
	sum contract.Cost
	rev uint64
}

// writtenKept bounds costs.written: the day's and month's entries of as
// many people at once, a few KB each (their Jobs).
const writtenKept = 1024

// everybody owns the deployment's entries.
const everybody = "all"

func dayKey(owner string, t time.Time) string   { return owner + ".d." + t.Format("2006-01-02") }
func monthKey(owner string, t time.Time) string { return owner + ".m." + t.Format("2006-01") }
func lastKey(u contract.User) string            { return u.Key() + ".last" }

// record counts a run and its cost once, however often its done event is
// read. A run that cost nothing (the shell's, or one that never reached
// the model) is counted too; a job refused because a budget was used up
// ("Not run: …") is no run.
func (c *costs) record(ctx context.Context, ev contract.Event) error {
	if ev.Status == contract.StatusBudget && ev.CostUSD == 0 && ev.InputTokens == 0 && ev.OutputTokens == 0 {
		return nil
	}
	at := ev.At.In(c.loc)
	for i, key := range []string{dayKey(ev.User.Key(), at), monthKey(ev.User.Key(), at), dayKey(everybody, at), monthKey(everybody, at)} {
		added, err := c.add(ctx, key, ev)
		if err != nil {
			return fmt.Errorf("count cost: %w", err)
		}
		if i == 0 && added {
			costUSD.WithLabelValues(ev.User.Channel).Add(ev.CostUSD)
			tokens.WithLabelValues(ev.User.Channel, "input").Add(float64(ev.InputTokens))
			tokens.WithLabelValues(ev.User.Channel, "output").Add(float64(ev.OutputTokens))
		}
	}
	last := contract.Cost{USD: ev.CostUSD, InputTokens: ev.InputTokens, OutputTokens: ev.OutputTokens, Runs: 1, At: ev.At}
	data, err := contract.Encode(&last)
	if err != nil {
		return err
	}
	if _, err := c.kv.Put(ctx, lastKey(ev.User), data); err != nil {
		return fmt.Errorf("last run's cost: %w", err)
	}
	return nil
}

// add adds ev's cost to the entry at key by compare-and-set, unless it is
// counted there already.
func (c *costs) add(ctx context.Context, key string, ev contract.Event) (bool, error) {
	lock := &c.adding[maphash.String(c.seed, key)%uint64(len(c.adding))]
	lock.Lock()
	defer lock.Unlock()
	sum, rev, known := c.lastWritten(key)
	for {
		if !known {
			var err error
			if sum, rev, err = c.get(ctx, key); err != nil {
				return false, err
			}
		}
		known = false
		if slices.Contains(sum.Jobs, ev.JobID) {
			return false, nil
		}
		sum.USD += ev.CostUSD
		sum.InputTokens += ev.InputTokens
		sum.OutputTokens += ev.OutputTokens
		sum.Runs++
		sum.At = ev.At
		sum.Jobs = append(sum.Jobs, ev.JobID)
		if n := len(sum.Jobs) - contract.FinishedKept; n > 0 {
			sum.Jobs = sum.Jobs[n:]
		}
		data, err := contract.Encode(&sum)
		if err != nil {
			return false, err
		}
		var wrote uint64
		if rev == 0 {
			wrote, err = c.kv.Create(ctx, key, data)
		} else {
			wrote, err = c.kv.Update(ctx, key, data, rev)
		}
		if conflict(err) {
			continue // another run counted meanwhile, or the entry expired: read it
		}
		if err != nil {
			return false, err
		}
		c.remember(key, sum, wrote)
		return true, nil
	}
}

// lastWritten is the entry at key as this dispatcher last wrote it, its
// Jobs a copy of their own; false when it wrote none lately.
func (c *costs) lastWritten(key string) (contract.Cost, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.written[key]
	e.sum.Jobs = slices.Clone(e.sum.Jobs)
	return e.sum, e.rev, ok
}

// remember keeps sum as the entry at key at revision rev, unless a later
// revision is kept already.
func (c *costs) remember(key string, sum contract.Cost, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.written[key]; ok && e.rev >= rev {
		return
	}
	if c.written == nil || len(c.written) >= writtenKept {
		c.written = make(map[string]costEntry)
	}
	c.written[key] = costEntry{sum: sum, rev: rev}
}

// get reads an entry; a missing one is zero at revision 0.
func (c *costs) get(ctx context.Context, key string) (contract.Cost, uint64, error) {
	var sum contract.Cost
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return sum, 0, nil
	}
	if err != nil {
		return sum, 0, err
	}
	if err := contract.Decode(e.Value(), &sum); err != nil {
		return sum, 0, err
	}
	return sum, e.Revision(), nil
}

// limit is one budget and what was spent against it.
type limit struct {
	of    string
	max   float64
	spent float64
}

func (l limit) left() float64 { return l.max - l.spent }

// limits are the budgets that apply to u now, with what was spent.
func (c *costs) limits(ctx context.Context, u contract.User, now time.Time) ([]limit, error) {
	now = now.In(c.loc)
	var out []limit
	for _, l := range []struct {
		of  string
		max float64
		key string
	}{
		{"your daily budget", c.budgets.PersonDaily, dayKey(u.Key(), now)},
		{"your monthly budget", c.budgets.PersonMonthly, monthKey(u.Key(), now)},
		{"everybody's daily budget", c.budgets.Daily, dayKey(everybody, now)},
		{"everybody's monthly budget", c.budgets.Monthly, monthKey(everybody, now)},
	} {
		if l.max <= 0 {
			continue
		}
		sum, _, err := c.get(ctx, l.key)
		if err != nil {
			return nil, fmt.Errorf("budget: %w", err)
		}
		out = append(out, limit{of: l.of + " of " + dollars(l.max), max: l.max, spent: sum.USD})
	}
	return out, nil
}

// budget is what u's next run may spend, or nil without budgets.
func (c *costs) budget(ctx context.Context, u contract.User) (*contract.Budget, error) {
	if !c.budgets.any() {
		return nil, nil
	}
	ls, err := c.limits(ctx, u, time.Now())
	if err != nil {
		return nil, err
	}
	least := slices.MinFunc(ls, func(a, b limit) int { return cmpFloat(a.left(), b.left()) })
	return &contract.Budget{LeftUSD: least.left(), Of: least.of}, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// report answers the cost keyword: today, this week (from Monday), the
// last run, and the budgets.
func (c *costs) report(ctx context.Context, u contract.User) (string, error) {
	now := time.Now().In(c.loc)
	today, _, err := c.get(ctx, dayKey(u.Key(), now))
	if err != nil {
		return "", err
	}
	var week contract.Cost
	monday := now.AddDate(0, 0, -((int(now.Weekday()) + 6) % 7))
	for d := monday; !d.After(now); d = d.AddDate(0, 0, 1) {
		day, _, err := c.get(ctx, dayKey(u.Key(), d))
		if err != nil {
			return "", err
		}
		week.USD, week.Runs = week.USD+day.USD, week.Runs+day.Runs
		week.InputTokens, week.OutputTokens = week.InputTokens+day.InputTokens, week.OutputTokens+day.OutputTokens
	}
	last, _, err := c.get(ctx, lastKey(u))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(c.spent("Today", today, "%s in %s.", contract.Plural(today.Runs, "run")))
	b.WriteString("\n" + c.spent("This week", week, "%s in %s.", contract.Plural(week.Runs, "run")))
	if last.Runs > 0 {
		b.WriteString("\n" + c.spent("Last run", last, "%s (%s).", contract.Duration(time.Since(last.At).Round(time.Second))+" ago"))
	}
	if s := week.Unreported(c.agent); s != "" {
		b.WriteString("\n" + s)
	}
	ls, err := c.limits(ctx, u, now)
	if err != nil {
		return "", err
	}
	for _, l := range ls {
		of := strings.Replace(l.of, "your ", "", 1)
		fmt.Fprintf(&b, "\n%s%s: %s left.", strings.ToUpper(of[:1]), of[1:], dollars(max(l.left(), 0)))
	}
	return b.String(), nil
}

// spent is one line of the cost report, format taking what was spent
// and when or how often: "Today: $0.50, … in 2 runs.", or "Today: 2
// runs." for an agent that reported nothing.
func (c *costs) spent(label string, cost contract.Cost, format, when string) string {
	if what := cost.Of(c.agent); what != "" {
		return label + ": " + fmt.Sprintf(format, what, when)
	}
	return label + ": " + when + "."
}

// dollars writes an amount in cents, or finer when it is below a cent.
func dollars(usd float64) string {
	if usd != 0 && usd < 0.01 {
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

var (
	costUSD = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_cost_usd_total",
		Help: "What agent runs cost, in USD as the agent reports it, by channel.",
	}, []string{"channel"})
	tokens = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_tokens_total",
		Help: "The model's tokens agent runs used, by channel and kind (input, with cache reads and writes; output).",
	}, []string{"channel", "kind"})
)
