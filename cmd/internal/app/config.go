package app

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/alecthomas/kong"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/voice"
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

// common are the settings of every command that connects to NATS.
type common struct {
	NATSURL   string `name:"nats-url" var:"NATS_URL" help:"${nats_url_help}"`
	NATSUser  string `name:"nats-user" var:"NATS_USER" help:"user to connect to NATS_URL as (nats.conf gives each service its own, allowed only its own subjects)"`
	NATSPass  string `name:"nats-password" var:"NATS_PASSWORD" help:"that user's password"`
	LogFormat string `name:"log-format" var:"TEXTSLASH_LOG_FORMAT" default:"auto" help:"json, console, or auto (console on a terminal)"`
}

// storage are the settings of the streams and buckets textslash provisions.
type storage struct {
	Replicas int           `name:"replicas" var:"TEXTSLASH_REPLICAS" default:"1" help:"replicas of each stream and bucket (3 on a NATS cluster)"`
	MediaTTL time.Duration `name:"media-ttl" var:"TEXTSLASH_MEDIA_TTL" default:"${media_ttl}" help:"how long images (and their links) last"`
	Channels []string      `name:"channels" var:"TEXTSLASH_CHANNELS" placeholder:"NAME,..." help:"plug-in channels of your own (channels.md), run as programs of their own against this textslash: each gets its media store (media-<name>) and egress bucket (egress-<name>), and textslash serve makes it a NATS login of its own, channel-<name>, with nothing but a channel's rights (<data>/nats/channel-<name>.env); Slack and Discord need not be named"`
}

// config is everything `textslash serve` and the single-service binaries
// read (those of other services too, so that every service can share one
// environment file).
type config struct {
	common              `embed:""`
	storage             `embed:""`
	Data                string        `name:"data" var:"TEXTSLASH_DATA" default:"./data" help:"${data_help}"`
	NATSListen          string        `name:"nats-listen" var:"TEXTSLASH_NATS_LISTEN" default:"127.0.0.1:4222" help:"host:port where the embedded NATS takes clients such as the nats CLI, logged in as tap (reads ts.>) or admin with <data>/nats/tap.env or admin.env; off for none"`
	NATSSync            bool          `name:"nats-sync" var:"TEXTSLASH_NATS_SYNC" help:"the embedded NATS writes every message through to disk before acknowledging it; the server dies with this process, so without it a crash loses the last milliseconds of acknowledged messages"`
	Host                string        `name:"host" var:"TEXTSLASH_HOST" default:"127.0.0.1" help:"address the HTTP listener binds; anything but loopback requires the web chat token"`
	Port                int           `name:"port" var:"PORT" default:"3000" help:"HTTP port"`
	Web                 bool          `name:"web" var:"TEXTSLASH_WEB" default:"true" negatable:"" help:"serve the local web chat (needs ingress and egress in this process)"`
	WebToken            string        `name:"web-token" var:"TEXTSLASH_WEB_TOKEN" help:"token the web chat requires when others can reach it (bound beyond loopback, PUBLIC_URL, a provider or TEXTSLASH_ALLOWED_HOSTS set); made once and kept in <data>/web/token when empty, and logged in the web chat's URL when required (on loopback alone it still lets you in when others used up the new sessions: open /?token=<it>)"`
	AllowedHosts        string        `name:"allowed-hosts" var:"TEXTSLASH_ALLOWED_HOSTS" help:"comma-separated host names the HTTP listener answers besides localhost and PUBLIC_URL's (a tunnel's or proxy's name); requests for any other name are refused, as a DNS-rebinding page's are"`
	Agent               string        `name:"agent" var:"TEXTSLASH_AGENT" sets:"runner.Agent,dispatcher.Agent" help:"agent: shell (bash in the workspace), claude (Claude Code headless), gemini, codex or opencode (Gemini CLI, Codex through codex-acp, opencode: spoken to over the Agent Client Protocol), acp:<command line> (any other agent speaking it), or any command line (run with bash -c; the message on stdin, the reply on stdout, lines ::progress:: <text> and ::approval:: as markers); default claude when installed and runnable (not as root without --agent-user), else shell"`
	ClaudeBin           string        `name:"claude-bin" var:"TEXTSLASH_CLAUDE_BIN" sets:"runner.ClaudeBin" help:"Claude Code binary; default claude from PATH"`
	AgentBin            string        `name:"agent-bin" var:"TEXTSLASH_AGENT_BIN" sets:"runner.AgentBin" help:"program of the gemini, codex or opencode agent; default gemini, codex-acp or opencode from PATH"`
	Workspaces          string        `name:"workspaces" var:"TEXTSLASH_WORKSPACES" sets:"runner.Workspaces" help:"directory with one workspace per user; default <data>/workspaces"`
	AgentUser           string        `name:"agent-user" var:"TEXTSLASH_AGENT_USER" sets:"runner.AgentUser" help:"unprivileged OS user agents run as when textslash runs as root (required for claude as root)"`
	Sandbox             onOff         `name:"sandbox" var:"TEXTSLASH_SANDBOX" sets:"runner.Sandbox" default:"on" help:"on: every run is sandboxed with bubblewrap (its own workspace and home, the system read-only, nothing of textslash or other people) and limited; off: agents run unconfined as the agent user (textslash refuses to start without a working sandbox unless this is off)"`
	SandboxShare        string        `name:"sandbox-share" var:"TEXTSLASH_SANDBOX_SHARE" sets:"runner.Sandbox.Share" help:"comma-separated host directories bound read-write into every sandbox (a shared cache); nothing by default"`
	RunMemory           size          `name:"run-memory" var:"TEXTSLASH_RUN_MEMORY" sets:"runner.Sandbox.Limits.Memory" default:"2G" help:"most memory one run may use (512M, 2G; 0 for no limit); a run reaching it is stopped and the person told"`
	RunPids             int           `name:"run-pids" var:"TEXTSLASH_RUN_PIDS" sets:"runner.Sandbox.Limits.Pids" default:"512" help:"most processes and threads one run may have at once (0 for no limit); a run reaching it is stopped and the person told"`
	RunCPU              float64       `name:"run-cpu" var:"TEXTSLASH_RUN_CPU" sets:"runner.Sandbox.Limits.CPU" default:"2" help:"most CPU one run may use, in cores (0 for no limit)"`
	Chromium            string        `name:"chromium" var:"TEXTSLASH_CHROMIUM" sets:"runner.Chromium" help:"Chromium binary for screenshots (textslash shot, approval diffs); default Debian's chromium-headless-shell (the lightest), else chromium, chromium-browser or google-chrome from PATH"`
	ShotAddr            string        `name:"shot-addr" var:"TEXTSLASH_SHOT_ADDR" sets:"runner.ShotAddr" default:"127.0.0.1:0" help:"host:port of the runner's screenshot endpoint, which agents reach with textslash shot or curl ($TEXTSLASH_SHOT_URL); default a free loopback port"`
	HomesMax            int           `name:"homes-max" var:"TEXTSLASH_HOMES_MAX" sets:"runner.HomesMax" default:"0" help:"most people's homes kept warm at once (a home: the person's sandbox, made at their first message and kept between runs, so a follow-up starts at once); past it the least recently used goes; 0: as many as memory allows (a warm agent is let go before its home, to make room for a run); -1 keeps none (each run in a sandbox of its own)"`
	PreviewAddr         string        `name:"preview-addr" var:"TEXTSLASH_PREVIEW_ADDR" sets:"runner.PreviewAddr" default:"127.0.0.1:3002" help:"host:port of the preview links' listener (the runner's; previews need homes with a network of their own): a fixed port for the tunnel or proxy of TEXTSLASH_PREVIEW_URL to point at; on loopback the default links open only on this machine; taken at start, textslash stops and says so (127.0.0.1:0: any free port)"`
	PreviewURL          string        `name:"preview-url" var:"TEXTSLASH_PREVIEW_URL" sets:"runner.PreviewURL" help:"the preview links' URL with * where a link's id goes: a wildcard host of its own, never the web chat's (https://*.preview.example.com behind a tunnel or proxy to TEXTSLASH_PREVIEW_ADDR); default http://*.preview.localhost:<its port>, which browsers resolve to this machine"`
	PreviewTTL          time.Duration `name:"preview-ttl" var:"TEXTSLASH_PREVIEW_TTL" sets:"runner.PreviewTTL" default:"1h" help:"how long a preview link opens the app; preview off ends them sooner, and the home's end too"`
	HomeIdle            time.Duration `name:"home-idle" var:"TEXTSLASH_HOME_IDLE" sets:"runner.HomeIdle" default:"${home_idle}" help:"a home is taken down this long after its person's last run"`
	Concurrency         int           `name:"concurrency" var:"TEXTSLASH_CONCURRENCY" sets:"runner.Concurrency" default:"0" help:"how many users' messages run at once; 0: as many as memory allows (a message starts once its agent fits and TEXTSLASH_MEMORY_FREE stays free; a Claude Code run counts 300 MB, a shell run 16 MB)"`
	MemoryFree          size          `name:"memory-free" var:"TEXTSLASH_MEMORY_FREE" sets:"runner.MemoryFree" help:"memory runs and homes leave free on the machine, or under its container's limit (1G, 512M); default a tenth of it, between 256M and 2G; with TEXTSLASH_CONCURRENCY 0"`
	RunnerID            string        `name:"runner-id" var:"TEXTSLASH_RUNNER_ID" sets:"runner.ID" default:"${runner_id}" help:"this runner's name among runners sharing the jobs (letters, digits, - and _): each user's messages run on the runner holding their workspace while it is alive; keep it the same across restarts with the same workspaces"`
	Timeout             time.Duration `name:"timeout" var:"TEXTSLASH_TIMEOUT" sets:"runner.Timeout" default:"${timeout}" help:"longest a single run may take"`
	StopGrace           time.Duration `name:"stop-grace" var:"TEXTSLASH_STOP_GRACE" sets:"runner.StopGrace" default:"20s" help:"on SIGTERM or Ctrl-C, how long runs under way may go on to finish (no new one starts); then they are stopped and reported interrupted; a second Ctrl-C stops at once"`
	IdleExit            time.Duration `name:"idle-exit" var:"TEXTSLASH_IDLE_EXIT" sets:"runner.IdleExit" default:"${idle_exit}" help:"a process running the runner exits after this long without a job (0: never; default 30m for the runner binary alone, 0 elsewhere); jobs wait in JetStream for the next start"`
	ProjectMax          size          `name:"project-max" var:"TEXTSLASH_PROJECT_MAX" sets:"runner.ProjectMaxBytes" default:"2G" help:"most disk space a project cloned with clone <url> may take (512M, 2G); a bigger clone is removed and the person told both sizes"`
	DiskQuota           size          `name:"disk-quota" var:"TEXTSLASH_DISK_QUOTA" sets:"runner.DiskQuota" default:"5G" help:"most disk space each person may take on a runner, their workspace, projects, worktrees and agent's home together (512M, 5G; 0 for no bound): a write past it fails inside the run and the person is told their workspace is full; each person gets an ext4 image of that size, loop-mounted, which needs root and loop devices (without them the runner says so and runs without bounds)"`
	Snapshots           bool          `name:"snapshots" var:"TEXTSLASH_SNAPSHOTS" sets:"runner.Snapshots" default:"${snapshots}" help:"after each run, store a snapshot of the project's workspace (its git history, uncommitted files and the agent's session) in JetStream, so that a runner taking a person over from a runner gone rebuilds it; default on for the runner binary alone (runners on separate machines), off elsewhere (one runner, one disk)"`
	SnapshotMax         size          `name:"snapshot-max" var:"TEXTSLASH_SNAPSHOT_MAX" sets:"runner.SnapshotMax" default:"100M" help:"most one snapshot may hold, before compression; beyond it the history is left out when the project has a remote to fetch it from, then the largest uncommitted files, and the person is told what did not move"`
	Credentials         string        `name:"credentials" var:"TEXTSLASH_CREDENTIALS" sets:"runner.Credentials" help:"directory of people's git credentials for private repositories: one subdirectory per person (phone.<digits>, telegram.<chat id>, web.<id>) with git-credentials and/or ssh/ (a key, known_hosts); each of their runs gets a read-only copy at /tmp/textslash/credentials and no other run sees any; needs the sandbox"`
	Approval            time.Duration `name:"approval-timeout" var:"TEXTSLASH_APPROVAL_TIMEOUT" sets:"dispatcher.ApprovalTimeout" default:"${approval_timeout}" help:"how long an approval request waits for approve or reject; then the changes stay on disk, uncommitted"`
	Permission          time.Duration `name:"permission-timeout" var:"TEXTSLASH_PERMISSION_TIMEOUT" sets:"dispatcher.PermissionTimeout,runner.PermissionTimeout" default:"${permission_timeout}" help:"how long a question from the agent (may it run this command?) waits for yes, no or always; then the agent is told no"`
	DefaultMode         string        `name:"default-mode" var:"TEXTSLASH_DEFAULT_MODE" sets:"dispatcher.DefaultMode,runner.DefaultMode" default:"ask" help:"permission mode of people who have not chosen one with the mode keyword: ask (Claude Code asks before each change), auto (it acts without asking, inside the sandbox) or plan (it only plans; go carries the plan out)"`
	BudgetPersonDaily   float64       `name:"budget-person-daily" var:"TEXTSLASH_BUDGET_PERSON_DAILY" sets:"dispatcher.Budgets.PersonDaily" help:"most each person's runs may cost in a day, in USD (0: no limit); a run that would start over it is refused, one that reaches it is stopped with what it did so far"`
	BudgetPersonMonthly float64       `name:"budget-person-monthly" var:"TEXTSLASH_BUDGET_PERSON_MONTHLY" sets:"dispatcher.Budgets.PersonMonthly" help:"most each person's runs may cost in a month, in USD (0: no limit)"`
	BudgetDaily         float64       `name:"budget-daily" var:"TEXTSLASH_BUDGET_DAILY" sets:"dispatcher.Budgets.Daily" help:"most everybody's runs together may cost in a day, in USD (0: no limit)"`
	BudgetMonthly       float64       `name:"budget-monthly" var:"TEXTSLASH_BUDGET_MONTHLY" sets:"dispatcher.Budgets.Monthly" help:"most everybody's runs together may cost in a month, in USD (0: no limit)"`
	TimeZone            zone          `name:"time-zone" var:"TEXTSLASH_TIME_ZONE" sets:"dispatcher.Location" placeholder:"STRING" help:"time zone (IANA name, like Europe/Paris) of the days and months of costs and budgets, and of schedules for people who set none with tz; default the server's"`
	Admins              people        `name:"admins" var:"TEXTSLASH_ADMINS" sets:"dispatcher.Admins" placeholder:"STRING" help:"comma-separated people who may pair others in (the pair, people and revoke keywords): numbers (+15551234567) and <channel>:<id> (telegram:<chat id>, slack:<user id>)"`
	ShowCost            bool          `name:"show-cost" var:"TEXTSLASH_SHOW_COST" sets:"runner.ShowCost" help:"end each reply with what its run cost and the tokens it used"`
	TranscribeURL       string        `name:"transcribe-url" var:"TEXTSLASH_TRANSCRIBE_URL" help:"base URL of an OpenAI-compatible speech-to-text API that turns voice notes into messages (https://api.openai.com/v1, https://api.groq.com/openai/v1, a local whisper.cpp or faster-whisper server's http://127.0.0.1:8000/v1); without it or a command, voice notes are saved in the inbox and the person told"`
	TranscribeKey       string        `name:"transcribe-key" var:"TEXTSLASH_TRANSCRIBE_KEY" help:"API key of the speech-to-text API (sent as Authorization: Bearer)"`
	TranscribeModel     string        `name:"transcribe-model" var:"TEXTSLASH_TRANSCRIBE_MODEL" default:"whisper-1" help:"speech-to-text model (whisper-1, gpt-4o-transcribe; whisper-large-v3 on Groq)"`
	TranscribeLanguage  string        `name:"transcribe-language" var:"TEXTSLASH_TRANSCRIBE_LANGUAGE" help:"language of the voice notes, ISO-639-1 (en, fr); default the API's guess"`
	TranscribeCommand   string        `name:"transcribe-command" var:"TEXTSLASH_TRANSCRIBE_COMMAND" help:"a local speech-to-text program instead of the API, run with bash -c in the person's sandbox: 16 kHz mono WAV on stdin, the text on stdout (Debian's pocketsphinx: pocketsphinx_continuous -infile /dev/stdin -logfn /dev/null)"`
	VoiceMax            time.Duration `name:"voice-max" var:"TEXTSLASH_VOICE_MAX" sets:"runner.VoiceMax" default:"${voice_max}" help:"longest voice note taken; longer ones are refused with a message and kept in the inbox"`
	VoiceGrace          time.Duration `name:"voice-grace" var:"TEXTSLASH_VOICE_GRACE" sets:"runner.VoiceGrace" default:"5s" help:"after the person is sent what was heard in a voice note, how long the agent waits before running it, so that cancel can stop a misheard instruction (0: no wait)"`
	DescribeImages      bool          `name:"describe-screenshots" var:"TEXTSLASH_DESCRIBE_SCREENSHOTS" sets:"runner.DescribeImages" help:"ask the agent, in a second read-only run, for a short description of each image it hands over without a caption (at most 3 per reply; Claude Code only: it can look at images), sent as the image's caption"`
	TwilioSID           string        `name:"twilio-account-sid" var:"TWILIO_ACCOUNT_SID" sets:"twilio.AccountSID" help:"Twilio account; setting it (with the token) turns WhatsApp and SMS on"`
	TwilioToken         string        `name:"twilio-auth-token" var:"TWILIO_AUTH_TOKEN" sets:"twilio.AuthToken" help:"Twilio auth token: checks webhook signatures and sends messages"`
	TwilioFrom          string        `name:"twilio-phone-number" var:"TWILIO_PHONE_NUMBER" sets:"twilio.From" help:"Twilio number replies come from, E.164 (+15551234567) or as Twilio writes a WhatsApp sender (whatsapp:+15551234567); WhatsApp sends from whatsapp:<number>, SMS from the number"`
	TwilioService       string        `name:"twilio-messaging-service-sid" var:"TWILIO_MESSAGING_SERVICE_SID" sets:"twilio.MessagingServiceSID" help:"send through this Messaging Service instead of the phone number"`
	TwilioAPI           string        `name:"twilio-api-url" var:"TEXTSLASH_TWILIO_API_URL" sets:"twilio.APIURL" help:"send Twilio API requests to this base URL instead of https://api.twilio.com (tests, proxies)"`
	TwilioWindow        string        `name:"twilio-content-sid-window" var:"TWILIO_CONTENT_SID_WINDOW" sets:"twilio.WindowContentSID" help:"Content SID (HX…) of an approved WhatsApp template without variables that tells a person a reply waits for them (Your task finished. Reply to see the result.), sent once when WhatsApp refuses a message outside its 24-hour window; the refused messages are held and go out when the person writes, with or without it"`
	PublicURL           string        `name:"public-url" var:"PUBLIC_URL" sets:"webchat.PublicURL,twilio.PublicURL,telegram.PublicURL,slack.PublicURL,runner.ChatURL" help:"the https URL Twilio reaches this server at (webhook signatures, image links, status callbacks); set Twilio's webhook to <it>/webhook (and Slack's Events API request URL to <it>/slack/events when SLACK_APP_TOKEN is not set); Telegram's webhook is set to <it>/telegram/webhook at start"`
	Allowed             string        `name:"allowed-phone-numbers" var:"ALLOWED_PHONE_NUMBERS" sets:"twilio.Allowed" help:"comma-separated E.164 numbers that may use textslash over WhatsApp or SMS; others are ignored"`
	StatusCallbacks     bool          `name:"twilio-status-callbacks" var:"TEXTSLASH_TWILIO_STATUS_CALLBACKS" sets:"twilio.StatusCallbacks" default:"true" negatable:"" help:"ask Twilio for delivery status and send a person's next message only after the previous one is sent, so replies arrive in order"`
	ProgressEvery       time.Duration `name:"progress-every" var:"TEXTSLASH_PROGRESS_EVERY" sets:"twilio.WhatsApp.ProgressEvery,twilio.SMS.ProgressEvery" default:"${progress_every}" help:"least time between two progress messages to one WhatsApp or SMS user; the latest progress wins"`
	LongReplies         longReplies   `name:"long-replies" var:"TEXTSLASH_LONG_REPLIES" sets:"twilio.WhatsApp.Truncate,twilio.SMS.Truncate,telegram.Rules.Truncate" default:"page" help:"replies over a channel's limit (1600 characters on WhatsApp and SMS, 4096 on Telegram): page (the person replies MORE) or truncate (at 1500 characters)"`
	TelegramToken       string        `name:"telegram-bot-token" var:"TELEGRAM_BOT_TOKEN" sets:"telegram.BotToken" help:"Telegram bot token (from @BotFather); setting it turns Telegram on: without an https PUBLIC_URL textslash polls Telegram for the bot's messages (no public URL needed); with one it sets the bot's webhook to <PUBLIC_URL>/telegram/webhook at start"`
	TelegramSecret      string        `name:"telegram-webhook-secret" var:"TELEGRAM_WEBHOOK_SECRET" sets:"telegram.Secret" help:"the webhook's secret_token (16 to 256 letters, digits, _ or -), required with an https PUBLIC_URL: textslash gives it to setWebhook, and refuses updates posted without it"`
	TelegramAllowed     string        `name:"telegram-allowed-chats" var:"TELEGRAM_ALLOWED_CHATS" sets:"telegram.Allowed" help:"comma-separated Telegram chat ids that may use textslash; others are ignored"`
	TelegramAPI         string        `name:"telegram-api-url" var:"TEXTSLASH_TELEGRAM_API_URL" sets:"telegram.APIURL" help:"send Telegram Bot API requests to this base URL instead of https://api.telegram.org (tests, a local Bot API server)"`
	MediaKey            string        `name:"media-key" var:"TEXTSLASH_MEDIA_KEY" help:"secret (16+ characters) that signs image links; generated at each start when empty (set it when media and egress run as separate processes)"`
	MediaKeep           int           `name:"media-keep" var:"TEXTSLASH_MEDIA_KEEP" sets:"media.Keep" default:"${media_keep}" help:"most images kept; the oldest go first"`
	LogLevel            string        `name:"log-level" var:"TEXTSLASH_LOG_LEVEL" default:"info" help:"debug, info, warn or error"`
	PprofAddr           string        `name:"pprof-addr" var:"TEXTSLASH_PPROF_ADDR" help:"host:port serving Go's profiles at /debug/pprof/ (CPU, heap, goroutines) for debugging; off when empty, keep it on loopback"`
	Notion              notionConfig  `embed:""`
	Slack               slackConfig   `embed:""`
	Discord             discordConfig `embed:""`

	// Set after parsing.
	Services  []string `kong:"-"`
	Provision bool     `kong:"-"`
}

// notionConfig is the Notion integration's settings: a database whose
// pages become one person's tasks.
type notionConfig struct {
	Token      string        `name:"notion-token" var:"NOTION_TOKEN" sets:"ingress.Notion.Client,egress.Notion.Client" help:"secret of a Notion integration (ntn_…); setting it (with the database and the person) turns Notion tasks on"`
	Database   string        `name:"notion-database" var:"NOTION_DATABASE_ID" sets:"ingress.Notion.Database,egress.Notion.Database" help:"id of the Notion database whose pages become tasks (from its URL; share the database with the integration)"`
	API        string        `name:"notion-api-url" var:"TEXTSLASH_NOTION_API_URL" help:"send Notion API requests to this base URL instead of https://api.notion.com (tests, proxies)"`
	Person     string        `name:"notion-person" var:"TEXTSLASH_NOTION_PERSON" sets:"ingress.Notion.User" help:"whose tasks the pages become: whatsapp:+15551234567, sms:+15551234567, telegram:<chat id> or web:<id>; they get the usual messages and approve changes"`
	Property   string        `name:"notion-status-property" var:"TEXTSLASH_NOTION_STATUS_PROPERTY" sets:"ingress.Notion.StatusProperty,egress.Notion.StatusProperty" default:"Status" help:"the database's status (or select) property"`
	Todo       string        `name:"notion-todo" var:"TEXTSLASH_NOTION_TODO" sets:"ingress.Notion.Todo" default:"To do" help:"the status of pages that ask for work"`
	InProgress string        `name:"notion-in-progress" var:"TEXTSLASH_NOTION_IN_PROGRESS" sets:"egress.Notion.InProgress" default:"In progress" help:"the status a page gets when its task starts"`
	Done       string        `name:"notion-done" var:"TEXTSLASH_NOTION_DONE" sets:"egress.Notion.Done" default:"Done" help:"the status a page gets when its task ends well"`
	Failed     string        `name:"notion-failed" var:"TEXTSLASH_NOTION_FAILED" sets:"egress.Notion.Failed" default:"Failed" help:"the status a page gets when its task fails, times out or is cancelled"`
	Every      time.Duration `name:"notion-poll" var:"TEXTSLASH_NOTION_POLL" sets:"ingress.Notion.Every" default:"30s" help:"time between two queries of the Notion database"`
}

const serveUsage = `Runs NATS (embedded, unless --nats-url is given) and every textslash service
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

Each flag is also read from the environment variable in brackets; a flag
given on the command line wins.`

const serviceUsage = `Runs textslash's %[1]s service alone against the NATS server at NATS_URL
(required). Its HTTP port serves GET /healthz, /readyz, /metrics%[2]s.
The other services run as processes of their own (cmd/ingress,
cmd/dispatcher, cmd/runner, cmd/media, cmd/egress), or all together in
textslash serve.

Each flag is also read from the environment variable in brackets (a flag
given on the command line wins); those of other services are accepted and
ignored, so that every service can share one environment file.`

// serviceRoutes is what a single service serves besides its health.
var serviceRoutes = map[string]string{
	Ingress: ",\nPOST /webhook, /sms, /twilio/status and /telegram/webhook",
	Media:   ",\nGET /images/<id>.jpeg and /files/<id>/<name>",
	Runner:  ";\nagents reach the screenshot endpoint on TEXTSLASH_SHOT_ADDR",
}

// defaults are the defaults the services and the contract declare, for
// the settings' tags (${name}): each is written once, where it is used.
func defaults() kong.Vars {
	return kong.Vars{
		"media_ttl": flagDuration(contract.MediaTTL), "media_keep": strconv.Itoa(contract.MediaKeep),
		"approval_timeout": flagDuration(contract.ApprovalTimeout), "permission_timeout": flagDuration(contract.PermissionTimeout),
		"progress_every": flagDuration(channel.DefaultProgressEvery),
		"timeout":        flagDuration(runner.DefaultTimeout),
		"home_idle":      flagDuration(sandbox.DefaultHomeIdle),
		"voice_max":      flagDuration(runner.DefaultVoiceMax),
	}
}

// flagDuration writes d as a person reads it and a flag takes it: 30m,
// 1h30m (not Go's 30m0s).
func flagDuration(d time.Duration) string {
	return strings.ReplaceAll(contract.Duration(d), " ", "")
}

// serveFlags are serve's settings: the services it runs, and the rest.
type serveFlags struct {
	List   string `name:"services" var:"TEXTSLASH_SERVICES" default:"${all}" help:"the services this process runs, comma-separated (the others run elsewhere against the same NATS_URL)"`
	config `embed:""`
}

// parseConfig reads flags over environment over defaults, for a process
// running services (nil: all of them, `textslash serve`).
func parseConfig(name string, services []string, args []string, env lookupEnv, stderr io.Writer) (config, error) {
	alone := slices.Equal(services, []string{Runner}) // runners on machines of their own
	vars := settingsVars(alone)
	var f serveFlags
	var target any = &f
	usage := serveUsage
	if services != nil {
		// A single service's binary has no --services.
		target = &f.config
		f.List = strings.Join(services, ",")
		usage = fmt.Sprintf(serviceUsage, services[0], serviceRoutes[services[0]])
	}
	// Every bad setting is reported at once: those whose values do not
	// parse, then those the checks refuse.
	set, err := parse(name, usage, target, vars, args, env, stderr)
	var bad *badVariables
	if err != nil && !errors.As(err, &bad) {
		return f.config, err
	}
	c := f.config
	// textslash serve creates the streams, consumers and buckets; a service
	// of its own waits for them (textslash provision), as its NATS user may
	// not create them.
	c.Provision = services == nil
	if err := c.setServices(f.List, set["web"]); err != nil {
		return c, joinBad(bad, err)
	}
	return c, joinBad(bad, c.validate())
}

// joinBad puts the variables that did not parse (if any) before err.
func joinBad(bad *badVariables, err error) error {
	if bad == nil {
		return err
	}
	return errors.Join(bad, err)
}

// settingsVars fill in the settings' tags of a process (alone: a runner on
// a machine of its own).
func settingsVars(alone bool) kong.Vars {
	vars := defaults()
	maps.Copy(vars, kong.Vars{
		"all": strings.Join(All, ","), "runner_id": runner.DefaultID(),
		"idle_exit": "0s", "snapshots": strconv.FormatBool(alone),
		"data_help":     "directory for JetStream's files, the embedded NATS's logins (nats/) and, by default, the workspaces",
		"nats_url_help": "use this NATS server instead of embedding one",
	})
	if alone {
		vars["idle_exit"] = "30m"
	}
	return vars
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
	// The web chat is ingress's channel, but its browsers pull their
	// events from EVENTS, which nats.conf's ingress user may not read: it
	// runs where egress, whose user may, runs too.
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

// validate checks the settings and the services' settings, and says
// every one refused.
func (c *config) validate() error {
	var errs []error
	if c.Data == "" {
		errs = append(errs, errors.New("TEXTSLASH_DATA: must not be empty"))
	}
	if c.Workspaces == "" {
		c.Workspaces = filepath.Join(c.Data, "workspaces")
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("PORT=%d: not a port", c.Port))
	}
	if c.NATSListen != "off" && c.NATSURL == "" {
		if _, _, err := net.SplitHostPort(c.NATSListen); err != nil {
			errs = append(errs, fmt.Errorf("TEXTSLASH_NATS_LISTEN=%q: want host:port or off", c.NATSListen))
		}
	}
	errs = append(errs, c.validateNotion(), c.validatePlugins(), c.storage.validate())
	if c.MediaKey == "" {
		c.MediaKey = newToken()
	}
	if len(c.MediaKey) < 16 {
		errs = append(errs, errors.New("TEXTSLASH_MEDIA_KEY: at least 16 characters"))
	}
	switch c.LogFormat {
	case "auto", "json", "console":
	default:
		errs = append(errs, fmt.Errorf("TEXTSLASH_LOG_FORMAT=%q: want json, console or auto", c.LogFormat))
	}
	return errors.Join(append(errs, c.validateServices())...)
}

// options are the streams' and buckets' options textslash provision and
// serve provision with: a media store for each plug-in channel, the ones
// textslash ships (compose runs them) and those of TEXTSLASH_CHANNELS.
func (s *storage) options() bus.Options {
	channels := slices.Sorted(maps.Keys(plugins))
	return bus.Options{Replicas: s.Replicas, MediaTTL: s.MediaTTL, Channels: pluginChannels(append(channels, s.Channels...))}
}

func (s *storage) validate() error {
	if s.Replicas < 1 || s.Replicas > 5 {
		return fmt.Errorf("TEXTSLASH_REPLICAS=%d: must be 1 to 5", s.Replicas)
	}
	if s.MediaTTL < time.Minute {
		return fmt.Errorf("TEXTSLASH_MEDIA_TTL=%s: at least 1m", flagDuration(s.MediaTTL))
	}
	for _, name := range s.Channels {
		if _, err := contract.NewUser(name, "x"); err != nil || contract.IsBuiltIn(name) {
			return fmt.Errorf("TEXTSLASH_CHANNELS: %q is no plug-in channel's name (letters, digits, - and _, at most 64; not one of %s, which are built in)",
				name, strings.Join(contract.BuiltInChannels, ", "))
		}
	}
	return nil
}

// transcriber is the speech engine of voice notes: the API, else the
// command, else none.
func (c *config) transcriber() voice.Transcriber {
	switch {
	case c.TranscribeURL != "":
		return &voice.OpenAI{URL: c.TranscribeURL, Key: c.TranscribeKey, Model: c.TranscribeModel, Language: c.TranscribeLanguage}
	case c.TranscribeCommand != "":
		return &voice.Command{Command: c.TranscribeCommand}
	}
	return nil
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

// telegram reports whether Telegram is on.
func (c *config) telegram() bool { return c.TelegramToken != "" }

// localURL is where this process reaches its own HTTP listener (media's
// routes, when media runs here).
func (c *config) localURL() string {
	host := c.Host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(c.Port))
}
