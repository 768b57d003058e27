package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/runner"
)

// The services a process can run.
const (
	Ingress    = "ingress"
	Dispatcher = "dispatcher"
	Runner     = "runner"
	Media      = "media"
	Egress     = "egress"
)

// All is every service, in the order they start.
var All = []string{Ingress, Dispatcher, Runner, Media, Egress}

// config is everything `textslash serve` reads from flags and environment.
type config struct {
	Services   []string
	Data       string
	NATSListen string
	NATSURL    string
	NATSUser   string
	NATSPass   string
	Provision  bool
	NATSSync   bool
	Host       string
	Port       int
	Web        bool
	WebToken   string
	// AllowedHosts names more hosts the HTTP listener answers for.
	AllowedHosts string
	Agent        string
	ClaudeBin    string
	Workspaces   string
	AgentUser    string
	// The runs' sandbox and limits.
	Sandbox      string
	SandboxShare string
	RunMemory    string
	RunPids      int
	RunCPU       float64
	// Projects: the most a clone may take, snapshots, git credentials.
	ProjectMax  string
	Snapshots   bool
	SnapshotMax string
	Credentials string
	Chromium    string
	ShotAddr    string
	Concurrency int
	RunnerID    string
	IdleExit    time.Duration
	Timeout     time.Duration
	StopGrace   time.Duration
	Approval    time.Duration
	Permission  time.Duration
	DefaultMode string
	Budgets     dispatcher.Budgets
	TimeZone    string
	Admins      string
	ShowCost    bool
	// Voice notes.
	TranscribeURL      string
	TranscribeKey      string
	TranscribeModel    string
	TranscribeLanguage string
	TranscribeCommand  string
	VoiceMax           time.Duration
	VoiceGrace         time.Duration
	DescribeImages     bool
	Replicas           int
	LogLevel           string
	PprofAddr          string
	LogFormat          string

	TwilioSID       string
	TwilioToken     string
	TwilioFrom      string
	TwilioService   string
	TwilioAPI       string
	TwilioWindow    string
	PublicURL       string
	Allowed         string
	StatusCallbacks bool
	ProgressEvery   time.Duration
	LongReplies     string

	TelegramToken   string
	TelegramSecret  string
	TelegramAllowed string
	TelegramAPI     string

	MediaKey  string
	MediaTTL  time.Duration
	MediaKeep int

	Notion notionConfig
}

// envFlags defines flags whose defaults come from environment variables,
// and remembers which variable each reads, for --help.
type envFlags struct {
	*flag.FlagSet
	errs []error
}

func (f *envFlags) str(p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = v
	}
	f.StringVar(p, name, def, usage+" ($"+env+")")
}

func (f *envFlags) int(p *int, name, env string, def int, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not a number", env, v))
		}
		def = n
	}
	f.IntVar(p, name, def, usage+" ($"+env+")")
}

func (f *envFlags) bool(p *bool, name, env string, def bool, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not true or false", env, v))
		}
		def = b
	}
	f.BoolVar(p, name, def, usage+" ($"+env+")")
}

func (f *envFlags) float(p *float64, name, env string, def float64, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not a number", env, v))
		}
		def = n
	}
	f.Float64Var(p, name, def, usage+" ($"+env+")")
}

func (f *envFlags) dur(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not a duration like 300s or 5m", env, v))
		}
		def = d
	}
	f.DurationVar(p, name, def, usage+" ($"+env+")")
}

const serveUsage = `Usage: textslash serve [flags]

Runs NATS (embedded, unless --nats-url is given) and every textslash service
in one process, with one HTTP listener:

  GET  /              the web chat (no login while only this machine reaches
                      it; else open the URL with ?token= printed at start)
  POST /api/messages  a web chat message        GET /api/events  its replies (SSE)
  GET  /images/<id>   images of replies (signed links)
  GET  /files/<id>/<name>  files the agent sent, as downloads (signed links)
  GET  /healthz, /readyz, /metrics (Prometheus; the last two not to
                      requests through PUBLIC_URL, a proxy or a tunnel)
  POST /webhook       Twilio's WhatsApp and SMS webhook (also /sms), and
  POST /twilio/status Twilio's status callbacks: on when TWILIO_* are set

WhatsApp and SMS through Twilio need TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN,
TWILIO_PHONE_NUMBER, PUBLIC_URL and ALLOWED_PHONE_NUMBERS; point the Twilio
number's (or WhatsApp sender's) incoming-message webhook at PUBLIC_URL/webhook.

Tap what happens with the nats CLI against --nats-listen. The embedded NATS
takes logins only, which textslash keeps in <data>/nats/ as the NATS_URL,
NATS_USER and NATS_PASSWORD lines the nats CLI reads from its environment:
tap.env reads ts.> and lists the streams, admin.env may do anything.
  (set -a; . ./data/nats/tap.env; set +a; nats sub 'ts.>')
(scripts/nats in the repository does that; subjects.md lists every subject,
stream and bucket).

Flags (each also read from the environment variable in brackets):
`

const serviceUsage = `Usage: %[1]s [flags]

Runs textslash's %[1]s service alone against the NATS server at NATS_URL
(required). Its HTTP port serves GET /healthz, /readyz, /metrics%[2]s.
The other services run as processes of their own (cmd/ingress,
cmd/dispatcher, cmd/runner, cmd/media, cmd/egress), or all together in
textslash serve.

Flags (each also read from the environment variable in brackets; those of
other services are accepted and ignored, so every service can share one
environment file):
`

// serviceRoutes is what a single service serves besides its health.
var serviceRoutes = map[string]string{
	Ingress: ",\nPOST /webhook, /sms, /twilio/status and /telegram/webhook",
	Media:   ",\nGET /images/<id>.jpeg and /files/<id>/<name>",
	Runner:  ";\nagents reach the screenshot endpoint on TEXTSLASH_SHOT_ADDR",
}

// parseConfig reads flags over environment over defaults, for a process
// running services (nil: all of them, `textslash serve`).
func parseConfig(name string, services []string, args []string, stderr io.Writer) (config, error) {
	var c config
	f := &envFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.SetOutput(stderr)
	f.Usage = func() {
		if len(services) == 1 {
			fmt.Fprintf(stderr, serviceUsage, services[0], serviceRoutes[services[0]])
		} else {
			fmt.Fprint(stderr, serveUsage)
		}
		f.PrintDefaults()
	}
	var svcList string
	// textslash serve creates the streams, consumers and buckets; a service
	// of its own waits for them (textslash provision), as its NATS user may
	// not create them.
	c.Provision = services == nil
	if services == nil {
		f.str(&svcList, "services", "TEXTSLASH_SERVICES", strings.Join(All, ","), "the services this process runs, comma-separated (the others run elsewhere against the same NATS_URL)")
	} else {
		svcList = strings.Join(services, ",")
	}
	f.str(&c.Data, "data", "TEXTSLASH_DATA", "./data", "directory for JetStream's files, the embedded NATS's logins (nats/) and, by default, the workspaces")
	f.str(&c.NATSListen, "nats-listen", "TEXTSLASH_NATS_LISTEN", "127.0.0.1:4222", "host:port where the embedded NATS takes clients such as the nats CLI, logged in as tap (reads ts.>) or admin with <data>/nats/tap.env or admin.env; off for none")
	f.str(&c.NATSURL, "nats-url", "NATS_URL", "", "use this NATS server instead of embedding one")
	f.str(&c.NATSUser, "nats-user", "NATS_USER", "", "user to connect to NATS_URL as (nats.conf gives each service its own, allowed only its own subjects)")
	f.str(&c.NATSPass, "nats-password", "NATS_PASSWORD", "", "that user's password")
	f.bool(&c.NATSSync, "nats-sync", "TEXTSLASH_NATS_SYNC", false, "the embedded NATS writes every message through to disk before acknowledging it; the server dies with this process, so without it a crash loses the last milliseconds of acknowledged messages")
	f.str(&c.Host, "host", "TEXTSLASH_HOST", "127.0.0.1", "address the HTTP listener binds; anything but loopback requires the web chat token")
	f.int(&c.Port, "port", "PORT", 3000, "HTTP port")
	f.bool(&c.Web, "web", "TEXTSLASH_WEB", true, "serve the local web chat (needs ingress and egress in this process)")
	f.str(&c.WebToken, "web-token", "TEXTSLASH_WEB_TOKEN", "", "token the web chat requires when others can reach it (bound beyond loopback, PUBLIC_URL, a provider or TEXTSLASH_ALLOWED_HOSTS set); made once and kept in <data>/web/token when empty, and logged in the web chat's URL")
	f.str(&c.AllowedHosts, "allowed-hosts", "TEXTSLASH_ALLOWED_HOSTS", "", "comma-separated host names the HTTP listener answers besides localhost and PUBLIC_URL's (a tunnel's or proxy's name); requests for any other name are refused, as a DNS-rebinding page's are")
	f.str(&c.Agent, "agent", "TEXTSLASH_AGENT", "", "agent: shell (bash in the workspace), claude (Claude Code headless), or any command line (run with bash -c; the message on stdin, the reply on stdout, lines ::progress:: <text> and ::approval:: as markers); default claude when installed and runnable (not as root without --agent-user), else shell")
	f.str(&c.ClaudeBin, "claude-bin", "TEXTSLASH_CLAUDE_BIN", "", "Claude Code binary; default claude from PATH")
	f.str(&c.Workspaces, "workspaces", "TEXTSLASH_WORKSPACES", "", "directory with one workspace per user; default <data>/workspaces")
	f.str(&c.AgentUser, "agent-user", "TEXTSLASH_AGENT_USER", "", "unprivileged OS user agents run as when textslash runs as root (required for claude as root)")
	f.str(&c.Sandbox, "sandbox", "TEXTSLASH_SANDBOX", "on", "on: every run is sandboxed with bubblewrap (its own workspace and home, the system read-only, nothing of textslash or other people) and limited; off: agents run unconfined as the agent user (textslash refuses to start without a working sandbox unless this is off)")
	f.str(&c.SandboxShare, "sandbox-share", "TEXTSLASH_SANDBOX_SHARE", "", "comma-separated host directories bound read-write into every sandbox (a shared cache); nothing by default")
	f.str(&c.RunMemory, "run-memory", "TEXTSLASH_RUN_MEMORY", "2G", "most memory one run may use (512M, 2G; 0 for no limit); a run reaching it is stopped and the person told")
	f.int(&c.RunPids, "run-pids", "TEXTSLASH_RUN_PIDS", 512, "most processes and threads one run may have at once (0 for no limit); a run reaching it is stopped and the person told")
	f.float(&c.RunCPU, "run-cpu", "TEXTSLASH_RUN_CPU", 2, "most CPU one run may use, in cores (0 for no limit)")
	f.str(&c.Chromium, "chromium", "TEXTSLASH_CHROMIUM", "", "Chromium binary for screenshots (textslash shot, approval diffs); default Debian's chromium-headless-shell (the lightest), else chromium, chromium-browser or google-chrome from PATH")
	f.str(&c.ShotAddr, "shot-addr", "TEXTSLASH_SHOT_ADDR", "127.0.0.1:0", "host:port of the runner's screenshot endpoint, which agents reach with textslash shot or curl ($TEXTSLASH_SHOT_URL); default a free loopback port")
	f.int(&c.Concurrency, "concurrency", "TEXTSLASH_CONCURRENCY", 4, "how many users' messages run at once")
	f.str(&c.RunnerID, "runner-id", "TEXTSLASH_RUNNER_ID", runner.DefaultID(), "this runner's name among runners sharing the jobs (letters, digits, - and _): each user's messages run on the runner holding their workspace while it is alive; keep it the same across restarts with the same workspaces")
	f.dur(&c.Timeout, "timeout", "TEXTSLASH_TIMEOUT", 300*time.Second, "longest a single run may take")
	f.dur(&c.StopGrace, "stop-grace", "TEXTSLASH_STOP_GRACE", 20*time.Second, "on SIGTERM or Ctrl-C, how long runs under way may go on to finish (no new one starts); then they are stopped and reported interrupted; a second Ctrl-C stops at once")
	idleExit := time.Duration(0)
	if slices.Equal(services, []string{Runner}) {
		idleExit = 30 * time.Minute
	}
	f.dur(&c.IdleExit, "idle-exit", "TEXTSLASH_IDLE_EXIT", idleExit, "a process running the runner exits after this long without a job (0: never; default 30m for the runner binary alone, 0 elsewhere); jobs wait in JetStream for the next start")
	f.str(&c.ProjectMax, "project-max", "TEXTSLASH_PROJECT_MAX", "2G", "most disk space a project cloned with clone <url> may take (512M, 2G); a bigger clone is removed and the person told both sizes")
	f.bool(&c.Snapshots, "snapshots", "TEXTSLASH_SNAPSHOTS", slices.Equal(services, []string{Runner}), "after each run, store a snapshot of the project's workspace (its git history, uncommitted files and the agent's session) in JetStream, so that a runner taking a person over from a runner gone rebuilds it; default on for the runner binary alone (runners on separate machines), off elsewhere (one runner, one disk)")
	f.str(&c.SnapshotMax, "snapshot-max", "TEXTSLASH_SNAPSHOT_MAX", "100M", "most one snapshot may hold, before compression; beyond it the history is left out when the project has a remote to fetch it from, then the largest uncommitted files, and the person is told what did not move")
	f.str(&c.Credentials, "credentials", "TEXTSLASH_CREDENTIALS", "", "directory of people's git credentials for private repositories: one subdirectory per person (phone.<digits>, telegram.<chat id>, web.<id>) with git-credentials and/or ssh/ (a key, known_hosts); each of their runs gets a read-only copy at /tmp/textslash/credentials and no other run sees any; needs the sandbox")
	f.dur(&c.Approval, "approval-timeout", "TEXTSLASH_APPROVAL_TIMEOUT", 30*time.Minute, "how long an approval request waits for approve or reject; then the changes stay on disk, uncommitted")
	f.dur(&c.Permission, "permission-timeout", "TEXTSLASH_PERMISSION_TIMEOUT", 10*time.Minute, "how long a question from the agent (may it run this command?) waits for yes, no or always; then the agent is told no")
	f.str(&c.DefaultMode, "default-mode", "TEXTSLASH_DEFAULT_MODE", "ask", "permission mode of people who have not chosen one with the mode keyword: ask (Claude Code asks before each change), auto (it acts without asking, inside the sandbox) or plan (it only plans; go carries the plan out)")
	f.float(&c.Budgets.PersonDaily, "budget-person-daily", "TEXTSLASH_BUDGET_PERSON_DAILY", 0, "most each person's runs may cost in a day, in USD (0: no limit); a run that would start over it is refused, one that reaches it is stopped with what it did so far")
	f.float(&c.Budgets.PersonMonthly, "budget-person-monthly", "TEXTSLASH_BUDGET_PERSON_MONTHLY", 0, "most each person's runs may cost in a month, in USD (0: no limit)")
	f.float(&c.Budgets.Daily, "budget-daily", "TEXTSLASH_BUDGET_DAILY", 0, "most everybody's runs together may cost in a day, in USD (0: no limit)")
	f.float(&c.Budgets.Monthly, "budget-monthly", "TEXTSLASH_BUDGET_MONTHLY", 0, "most everybody's runs together may cost in a month, in USD (0: no limit)")
	f.str(&c.TimeZone, "time-zone", "TEXTSLASH_TIME_ZONE", "", "time zone (IANA name, like Europe/Paris) of the days and months of costs and budgets, and of schedules for people who set none with tz; default the server's")
	f.str(&c.Admins, "admins", "TEXTSLASH_ADMINS", "", "comma-separated people who may pair others in (the pair, people and revoke keywords): numbers (+15551234567) and telegram:<chat id>")
	f.bool(&c.ShowCost, "show-cost", "TEXTSLASH_SHOW_COST", false, "end each reply with what its run cost and the tokens it used")
	f.str(&c.TranscribeURL, "transcribe-url", "TEXTSLASH_TRANSCRIBE_URL", "", "base URL of an OpenAI-compatible speech-to-text API that turns voice notes into messages (https://api.openai.com/v1, https://api.groq.com/openai/v1, a local whisper.cpp or faster-whisper server's http://127.0.0.1:8000/v1); without it or a command, voice notes are saved in the inbox and the person told")
	f.str(&c.TranscribeKey, "transcribe-key", "TEXTSLASH_TRANSCRIBE_KEY", "", "API key of the speech-to-text API (sent as Authorization: Bearer)")
	f.str(&c.TranscribeModel, "transcribe-model", "TEXTSLASH_TRANSCRIBE_MODEL", "whisper-1", "speech-to-text model (whisper-1, gpt-4o-transcribe; whisper-large-v3 on Groq)")
	f.str(&c.TranscribeLanguage, "transcribe-language", "TEXTSLASH_TRANSCRIBE_LANGUAGE", "", "language of the voice notes, ISO-639-1 (en, fr); default the API's guess")
	f.str(&c.TranscribeCommand, "transcribe-command", "TEXTSLASH_TRANSCRIBE_COMMAND", "", "a local speech-to-text program instead of the API, run with bash -c in the person's sandbox: 16 kHz mono WAV on stdin, the text on stdout (Debian's pocketsphinx: pocketsphinx_continuous -infile /dev/stdin -logfn /dev/null)")
	f.dur(&c.VoiceMax, "voice-max", "TEXTSLASH_VOICE_MAX", 5*time.Minute, "longest voice note taken; longer ones are refused with a message and kept in the inbox")
	f.dur(&c.VoiceGrace, "voice-grace", "TEXTSLASH_VOICE_GRACE", 5*time.Second, "after the person is sent what was heard in a voice note, how long the agent waits before running it, so that cancel can stop a misheard instruction (0: no wait)")
	f.bool(&c.DescribeImages, "describe-screenshots", "TEXTSLASH_DESCRIBE_SCREENSHOTS", false, "ask the agent, in a second read-only run, for a short description of each image it hands over without a caption (at most 3 per reply; Claude Code only: it can look at images), sent as the image's caption")
	f.int(&c.Replicas, "replicas", "TEXTSLASH_REPLICAS", 1, "replicas of each stream and bucket (3 on a NATS cluster)")
	f.str(&c.TwilioSID, "twilio-account-sid", "TWILIO_ACCOUNT_SID", "", "Twilio account; setting it (with the token) turns WhatsApp and SMS on")
	f.str(&c.TwilioToken, "twilio-auth-token", "TWILIO_AUTH_TOKEN", "", "Twilio auth token: checks webhook signatures and sends messages")
	f.str(&c.TwilioFrom, "twilio-phone-number", "TWILIO_PHONE_NUMBER", "", "Twilio number replies come from, E.164 (+15551234567); WhatsApp sends from whatsapp:<it>")
	f.str(&c.TwilioService, "twilio-messaging-service-sid", "TWILIO_MESSAGING_SERVICE_SID", "", "send through this Messaging Service instead of the phone number")
	f.str(&c.TwilioAPI, "twilio-api-url", "TEXTSLASH_TWILIO_API_URL", "", "send Twilio API requests to this base URL instead of https://api.twilio.com (tests, proxies)")
	f.str(&c.TwilioWindow, "twilio-content-sid-window", "TWILIO_CONTENT_SID_WINDOW", "", "Content SID (HX…) of an approved WhatsApp template without variables that tells a person a reply waits for them (Your task finished. Reply to see the result.), sent once when WhatsApp refuses a message outside its 24-hour window; the refused messages are held and go out when the person writes, with or without it")
	f.str(&c.PublicURL, "public-url", "PUBLIC_URL", "", "the https URL Twilio reaches this server at (webhook signatures, image links, status callbacks); set Twilio's webhook to <it>/webhook")
	f.str(&c.Allowed, "allowed-phone-numbers", "ALLOWED_PHONE_NUMBERS", "", "comma-separated E.164 numbers that may use textslash over WhatsApp or SMS; others are ignored")
	f.bool(&c.StatusCallbacks, "twilio-status-callbacks", "TEXTSLASH_TWILIO_STATUS_CALLBACKS", true, "ask Twilio for delivery status and send a person's next message only after the previous one is sent, so replies arrive in order")
	f.dur(&c.ProgressEvery, "progress-every", "TEXTSLASH_PROGRESS_EVERY", 10*time.Second, "least time between two progress messages to one WhatsApp or SMS user; the latest progress wins")
	f.str(&c.LongReplies, "long-replies", "TEXTSLASH_LONG_REPLIES", "page", "replies over a channel's limit (1600 characters on WhatsApp and SMS, 4096 on Telegram): page (the person replies MORE) or truncate (at 1500 characters)")
	f.str(&c.TelegramToken, "telegram-bot-token", "TELEGRAM_BOT_TOKEN", "", "Telegram bot token (from @BotFather); setting it turns Telegram on (set the bot's webhook to <PUBLIC_URL>/telegram/webhook)")
	f.str(&c.TelegramSecret, "telegram-webhook-secret", "TELEGRAM_WEBHOOK_SECRET", "", "secret_token given to setWebhook (16+ characters): updates without it are refused")
	f.str(&c.TelegramAllowed, "telegram-allowed-chats", "TELEGRAM_ALLOWED_CHATS", "", "comma-separated Telegram chat ids that may use textslash; others are ignored")
	f.str(&c.TelegramAPI, "telegram-api-url", "TEXTSLASH_TELEGRAM_API_URL", "", "send Telegram Bot API requests to this base URL instead of https://api.telegram.org (tests, a local Bot API server)")
	c.Notion.flags(f)
	f.str(&c.MediaKey, "media-key", "TEXTSLASH_MEDIA_KEY", "", "secret (16+ characters) that signs image links; generated at each start when empty (set it when media and egress run as separate processes)")
	f.dur(&c.MediaTTL, "media-ttl", "TEXTSLASH_MEDIA_TTL", 30*time.Minute, "how long images (and their links) last")
	f.int(&c.MediaKeep, "media-keep", "TEXTSLASH_MEDIA_KEEP", 100, "most images kept; the oldest go first")
	f.str(&c.LogLevel, "log-level", "TEXTSLASH_LOG_LEVEL", "info", "debug, info, warn or error")
	f.str(&c.PprofAddr, "pprof-addr", "TEXTSLASH_PPROF_ADDR", "", "host:port serving Go's profiles at /debug/pprof/ (CPU, heap, goroutines) for debugging; off when empty, keep it on loopback")
	f.str(&c.LogFormat, "log-format", "TEXTSLASH_LOG_FORMAT", "auto", "json, console, or auto (console on a terminal)")
	if err := f.Parse(args); err != nil {
		return c, err
	}
	if f.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", f.Arg(0))
	}
	if len(f.errs) > 0 {
		return c, errors.Join(f.errs...)
	}
	webSet := false
	f.Visit(func(fl *flag.Flag) { webSet = webSet || fl.Name == "web" })
	if _, ok := os.LookupEnv("TEXTSLASH_WEB"); ok {
		webSet = true
	}
	if err := c.setServices(svcList, webSet); err != nil {
		return c, err
	}
	return c, c.validate()
}

// setServices checks the list of services and what running only some of
// them asks for.
func (c *config) setServices(list string, webSet bool) error {
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(All, s) {
			return fmt.Errorf("TEXTSLASH_SERVICES: unknown service %q (want some of %s)", s, strings.Join(All, ", "))
		}
		if !slices.Contains(c.Services, s) {
			c.Services = append(c.Services, s)
		}
	}
	if len(c.Services) == 0 {
		return errors.New("TEXTSLASH_SERVICES: no service to run")
	}
	if c.Web && !(c.runs(Ingress) && c.runs(Egress)) {
		if webSet {
			return errors.New("TEXTSLASH_WEB: the web chat needs ingress and egress in one process (set TEXTSLASH_WEB=false)")
		}
		c.Web = false
	}
	if len(c.Services) < len(All) {
		if c.NATSURL == "" {
			return errors.New("NATS_URL: required when a process runs only some of the services (they meet on that NATS)")
		}
		if c.TelegramToken != "" && c.runs(Egress) && !c.runs(Media) && c.PublicURL == "" {
			return errors.New("PUBLIC_URL: Telegram fetches images from it when media runs in another process")
		}
		if c.MediaKey == "" && (c.runs(Media) != c.runs(Egress)) {
			return errors.New("TEXTSLASH_MEDIA_KEY: required when media and egress run in different processes (egress signs image links, media checks them)")
		}
	}
	return nil
}

// runs reports whether this process runs service s.
func (c *config) runs(s string) bool { return slices.Contains(c.Services, s) }

func (c *config) validate() error {
	if c.Data == "" {
		return errors.New("TEXTSLASH_DATA: must not be empty")
	}
	if c.Workspaces == "" {
		c.Workspaces = filepath.Join(c.Data, "workspaces")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("PORT=%d: not a port", c.Port)
	}
	if c.NATSListen != "off" && c.NATSURL == "" {
		if _, _, err := net.SplitHostPort(c.NATSListen); err != nil {
			return fmt.Errorf("TEXTSLASH_NATS_LISTEN=%q: want host:port or off", c.NATSListen)
		}
	}
	if c.Concurrency < 1 {
		return fmt.Errorf("TEXTSLASH_CONCURRENCY=%d: must be at least 1", c.Concurrency)
	}
	if c.Timeout < time.Second || c.Timeout > 9*time.Minute {
		return fmt.Errorf("TEXTSLASH_TIMEOUT=%s: must be between 1s and 9m", c.Timeout)
	}
	if c.StopGrace < 0 {
		return fmt.Errorf("TEXTSLASH_STOP_GRACE=%s: must not be negative", c.StopGrace)
	}
	if c.IdleExit < 0 {
		return fmt.Errorf("TEXTSLASH_IDLE_EXIT=%s: must not be negative", c.IdleExit)
	}
	if err := c.validateNotion(); err != nil {
		return err
	}
	if _, err := c.admins(); err != nil {
		return fmt.Errorf("TEXTSLASH_ADMINS: %w", err)
	}
	if _, err := time.LoadLocation(c.TimeZone); err != nil {
		return fmt.Errorf("TEXTSLASH_TIME_ZONE=%q: %v", c.TimeZone, err)
	}
	if c.Approval < time.Second {
		return fmt.Errorf("TEXTSLASH_APPROVAL_TIMEOUT=%s: must be at least 1s", c.Approval)
	}
	if c.Sandbox != "on" && c.Sandbox != "off" {
		return fmt.Errorf("TEXTSLASH_SANDBOX=%q: want on or off", c.Sandbox)
	}
	if _, err := parseBytes(c.RunMemory); err != nil {
		return fmt.Errorf("TEXTSLASH_RUN_MEMORY=%q: want a size like 512M or 2G, or 0", c.RunMemory)
	}
	for _, v := range []struct{ name, val string }{{"TEXTSLASH_PROJECT_MAX", c.ProjectMax}, {"TEXTSLASH_SNAPSHOT_MAX", c.SnapshotMax}} {
		if n, err := parseBytes(v.val); err != nil || n <= 0 {
			return fmt.Errorf("%s=%q: want a size like 100M or 2G", v.name, v.val)
		}
	}
	if c.RunPids < 0 || (c.RunPids > 0 && c.RunPids < 16) {
		return fmt.Errorf("TEXTSLASH_RUN_PIDS=%d: 0 (no limit) or at least 16", c.RunPids)
	}
	if c.RunCPU < 0 || (c.RunCPU > 0 && c.RunCPU < 0.1) {
		return fmt.Errorf("TEXTSLASH_RUN_CPU=%g: 0 (no limit) or at least 0.1", c.RunCPU)
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return fmt.Errorf("TEXTSLASH_REPLICAS=%d: must be 1 to 5", c.Replicas)
	}
	if c.MediaKey == "" {
		c.MediaKey = newToken()
	}
	if len(c.MediaKey) < 16 {
		return errors.New("TEXTSLASH_MEDIA_KEY: at least 16 characters")
	}
	if c.MediaTTL < time.Minute {
		return fmt.Errorf("TEXTSLASH_MEDIA_TTL=%s: at least 1m", c.MediaTTL)
	}
	if c.MediaKeep < 1 {
		return fmt.Errorf("TEXTSLASH_MEDIA_KEEP=%d: at least 1", c.MediaKeep)
	}
	if err := c.validateTwilio(); err != nil {
		return err
	}
	if err := c.validateTelegram(); err != nil {
		return err
	}
	switch c.LogFormat {
	case "auto", "json", "console":
	default:
		return fmt.Errorf("TEXTSLASH_LOG_FORMAT=%q: want json, console or auto", c.LogFormat)
	}
	return nil
}

// sandbox is the runner's sandbox; nil when TEXTSLASH_SANDBOX=off.
// transcriber is the speech engine of voice notes: the API, else the
// command, else none.
func (c *config) transcriber() runner.Transcriber {
	switch {
	case c.TranscribeURL != "":
		return &runner.OpenAITranscriber{URL: c.TranscribeURL, Key: c.TranscribeKey, Model: c.TranscribeModel, Language: c.TranscribeLanguage}
	case c.TranscribeCommand != "":
		return &runner.CommandTranscriber{Command: c.TranscribeCommand}
	}
	return nil
}

func (c *config) sandbox() *runner.Sandbox {
	if c.Sandbox == "off" {
		return nil
	}
	mem, _ := parseBytes(c.RunMemory) // validated
	return &runner.Sandbox{
		Hide:   []string{c.Data},
		Share:  ingress.ParseList(c.SandboxShare),
		Limits: runner.Limits{Memory: mem, Pids: c.RunPids, CPU: c.RunCPU},
	}
}

// parseBytes reads a size: a number of bytes, or one ending in K, M or G.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for suffix, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if t, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = t, m
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q", s)
	}
	return int64(n * float64(mult)), nil
}

// loopback reports whether host only takes connections from this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// twilio reports whether WhatsApp and SMS are on.
func (c *config) twilio() bool { return c.TwilioSID != "" || c.TwilioToken != "" }

// validateTwilio checks what the services check again, to name the
// variables at fault before anything starts. Only ingress and egress speak
// to Twilio: the others run without its token (compose gives it only to
// those two).
func (c *config) validateTwilio() error {
	if !c.twilio() || !(c.runs(Ingress) || c.runs(Egress)) {
		return nil
	}
	var missing []string
	for _, v := range []struct{ name, val string }{
		{"TWILIO_ACCOUNT_SID", c.TwilioSID}, {"TWILIO_AUTH_TOKEN", c.TwilioToken},
		{"PUBLIC_URL", c.PublicURL}, {"ALLOWED_PHONE_NUMBERS", c.Allowed},
	} {
		if v.val == "" {
			missing = append(missing, v.name)
		}
	}
	if c.TwilioFrom == "" && c.TwilioService == "" {
		missing = append(missing, "TWILIO_PHONE_NUMBER")
	}
	if len(missing) > 0 {
		return fmt.Errorf("WhatsApp and SMS need %s too", strings.Join(missing, ", "))
	}
	if c.LongReplies != "page" && c.LongReplies != "truncate" {
		return fmt.Errorf("TEXTSLASH_LONG_REPLIES=%q: want page or truncate", c.LongReplies)
	}
	if c.ProgressEvery < 0 {
		return fmt.Errorf("TEXTSLASH_PROGRESS_EVERY=%s: must not be negative", c.ProgressEvery)
	}
	return nil
}

func (c *config) twilioIngress() *ingress.Twilio {
	if !c.twilio() {
		return nil
	}
	return &ingress.Twilio{AuthToken: c.TwilioToken, AccountSID: c.TwilioSID, APIURL: c.TwilioAPI,
		PublicURL: c.PublicURL, Allowed: ingress.ParseList(c.Allowed)}
}

func (c *config) twilioEgress() *egress.Twilio {
	if !c.twilio() {
		return nil
	}
	rules := egress.Rules{Truncate: c.LongReplies == "truncate", ProgressEvery: c.ProgressEvery}
	return &egress.Twilio{
		AccountSID: c.TwilioSID, AuthToken: c.TwilioToken, From: c.TwilioFrom, MessagingServiceSID: c.TwilioService,
		APIURL: c.TwilioAPI, PublicURL: c.PublicURL, StatusCallbacks: c.StatusCallbacks, WindowContentSID: c.TwilioWindow,
		Allowed: ingress.ParseList(c.Allowed), WhatsApp: rules, SMS: rules,
	}
}

// telegram reports whether Telegram is on.
func (c *config) telegram() bool { return c.TelegramToken != "" }

// validateTelegram: ingress checks webhooks with the secret; egress needs
// only the token (and, like ingress, whom it may answer).
func (c *config) validateTelegram() error {
	if !c.telegram() || !(c.runs(Ingress) || c.runs(Egress)) {
		return nil
	}
	if c.runs(Ingress) && c.TelegramSecret == "" {
		return errors.New("Telegram needs TELEGRAM_WEBHOOK_SECRET too")
	}
	if c.TelegramAllowed == "" {
		return errors.New("Telegram needs TELEGRAM_ALLOWED_CHATS too")
	}
	return nil
}

func (c *config) telegramIngress() *ingress.Telegram {
	if !c.telegram() {
		return nil
	}
	return &ingress.Telegram{BotToken: c.TelegramToken, Secret: c.TelegramSecret,
		Allowed: ingress.ParseList(c.TelegramAllowed), APIURL: c.TelegramAPI}
}

// telegramEgress: Telegram fetches images from PUBLIC_URL when there is
// one; else egress uploads them, read from this process's own listener.
func (c *config) telegramEgress() *egress.Telegram {
	if !c.telegram() {
		return nil
	}
	return &egress.Telegram{BotToken: c.TelegramToken, APIURL: c.TelegramAPI, PublicURL: c.PublicURL,
		Allowed:  ingress.ParseList(c.TelegramAllowed),
		LocalURL: c.localURL(),
		Rules:    egress.Rules{Truncate: c.LongReplies == "truncate"}}
}

// localURL is where this process reaches its own HTTP listener (media's
// routes, when media runs here).
func (c *config) localURL() string {
	host := c.Host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(c.Port))
}

// location is TEXTSLASH_TIME_ZONE's (checked by validate), or the server's.
func (c *config) location() *time.Location {
	if c.TimeZone == "" {
		return time.Local
	}
	loc, _ := time.LoadLocation(c.TimeZone)
	return loc
}

// admins are TEXTSLASH_ADMINS as people bucket keys.
func (c *config) admins() ([]string, error) {
	var keys []string
	for _, a := range strings.Split(c.Admins, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		k, err := contract.AddressKey(a)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// size is a size setting already validated.
func size(s string) int64 {
	n, _ := parseBytes(s)
	return n
}
