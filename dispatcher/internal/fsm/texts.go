// The texts the machine sends the person: replies to keywords, answers
// and projects, and the help.

package fsm

// Texts the dispatcher sends on its own.
const (
	MsgQueued        = "Got it, I'll process this next."
	MsgQueuedPlace   = "Got it. You're %s in line." // with the place: 2nd, 3rd…
	MsgQueueFull     = "Queue full, please wait for current tasks to finish."
	MsgEmpty         = "I received an empty message."
	MsgCancelled     = "Cancelled. Nothing is running now."
	MsgCancelledKept = "Cancelled. The changes stay in your workspace, uncommitted."
	// MsgDropped and MsgDroppedOne end a cancel's notice when messages
	// waited: the cancel dropped them.
	MsgDropped       = "%d waiting messages were dropped."
	MsgDroppedOne    = "1 waiting message was dropped."
	MsgNothingToStop = "Nothing is running, so there is nothing to cancel."
	MsgNoApproval    = "Nothing is waiting for your approval."
	MsgStillWorking  = "Nothing is waiting for your approval yet: the agent is still working. Reply cancel to stop it."
	MsgApproving     = "Approved. Committing the changes…"
	MsgRejecting     = "Rejected. Discarding the changes…"
	MsgNewSession    = "OK: your next message starts a new session."
	MsgAllowed       = "Allowed. Claude goes on."
	MsgAlways        = "Allowed, and I won't ask again for that in this session."
	MsgDenied        = "Denied. Claude was told no."
	MsgDeniedReason  = "Denied. Claude was told: "
	// MsgAnswered starts the reply to an answer with words of the person's,
	// which may have been meant as a new instruction: it names the question
	// they answered.
	MsgAnswered    = "Your reply answered: "
	MsgAnswerFirst = "Claude is waiting for your answer to its question: reply yes, no or always (or cancel)."
	MsgSteered     = "Added to the current run: Claude sees it at its next step."
	MsgNotRunning  = "Nothing is running, so I sent it as a new message."
	MsgSteerOn     = "OK: messages you send while a run works are added to it (btw …). Reply steer off to queue them again."
	MsgSteerOff    = "OK: messages you send while a run works wait their turn. Start one with btw to add it to the run."
	MsgSteerUsage  = "Reply steer on (messages sent while a run works are added to it) or steer off (they wait their turn)."
	MsgModeUsage   = `Modes:
  mode ask   Claude asks before each change (reply yes, no or always)
  mode auto  Claude acts without asking, inside your workspace's sandbox
  mode plan  Claude only plans; reply go to carry the plan out`
	MsgModeAuto  = "Mode auto: Claude acts without asking, inside your workspace's sandbox."
	MsgModeAsk   = "Mode ask: Claude asks before each change. Reply yes, no (with a reason if you like) or always."
	MsgModePlan  = "Mode plan: Claude plans without changing anything, and the plan is its reply. Reply go to carry it out."
	MsgGoWorking = "Claude is still working. Reply go once the plan has arrived."
	MsgZone      = "OK: your schedules use the time zone "
	MsgZoneUsage = "Say tz and a time zone's name, like tz Europe/Paris or tz America/New_York."
	// Projects (with project names).
	MsgUse           = "Now in project %s: your messages run there."
	MsgUseRunning    = " The run in %s goes on."
	MsgUseParked     = " The changes in %s wait for your approval until you use %s again."
	MsgUnparked      = "In project %s, changes wait for your approval: reply approve or reject."
	MsgUseAlready    = "You are in project %s already."
	MsgUseQueued     = "Messages still wait to run in %s: reply use %s once they have started (status shows them), or cancel to drop them."
	MsgParkedDone    = "The run in %s left changes: they wait for your approval there. Reply use %s, then approve or reject."
	MsgBranchesOn    = "OK: from your next message on, each runs on a branch of its own (textslash/<id>, in a git worktree of the project): approve merges it, reject deletes it. Reply branches off to work in the project's checkout again."
	MsgBranchesOff   = "OK: your messages run in the project's checkout again."
	MsgBranchesUsage = "Reply branches on (each message runs on a branch of its own, merged when you approve) or branches off (they run in the project's checkout, the default)."
	// GoPrompt is the message a go sends the agent.
	GoPrompt = "The plan is approved: carry it out now."
	MsgHelp  = `Send any message and the agent works on it in your workspace.
Keywords:
status — what is happening now
cost — what your runs cost today, this week, and the last one
cancel — stop the current run and clear the queue
approve — commit the changes the agent proposed
reject — discard those changes
more — the next page of a long reply
new — start a fresh agent session
mode — ask (Claude asks before each change), auto, or plan
go — carry out the plan (in plan mode)
btw … — add a message to the run that is working
steer — on: every message sent while working is added to the run
at 6pm <task>, at tomorrow 9:00 <task>, in 2h <task>, every weekday 9am <task>, every 2h <task> — run a task later; schedules lists them, unschedule <id> ends one
tz — your time zone for schedules (tz Europe/Paris)
clone <git url> [name] — clone a repository into a new project of yours
projects — your projects: the current one, branches, changes waiting
use <name> — work in that project (use default: your first workspace)
branches — on: each message runs on a branch of its own, merged when you approve; off (the default): in the project's checkout
help — this list
When Claude asks, reply yes, no (no, <what to do instead>) or always.`
)
