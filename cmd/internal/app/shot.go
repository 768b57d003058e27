package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/textslash/textslash/runner/handover"
)

const shotUsage = `Usage: textslash shot [--desktop] [--full] URL

Takes a screenshot of URL in the runner's browser and adds it to the reply
of the run it is called from (an agent's run: it reads $TEXTSLASH_SHOT_URL
and $TEXTSLASH_SHOT_TOKEN, which the runner sets). Prints the image's id.
The phone viewport (390×844) is the default.

Flags:
`

// Shot is `textslash shot` (and `runner shot`): what an agent runs to
// screenshot a page into its reply.
func Shot(args []string, stdout, stderr io.Writer) int {
	f := flag.NewFlagSet("shot", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.Usage = func() {
		fmt.Fprint(stderr, shotUsage)
		f.PrintDefaults()
	}
	desktop := f.Bool("desktop", false, "desktop viewport, 1440×900")
	full := f.Bool("full", false, "the whole page, not only what fits the viewport")
	timeout := f.Duration("timeout", time.Minute, "give up after this long (a shot waits for other shots first)")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if f.NArg() != 1 {
		fmt.Fprintln(stderr, "textslash shot: want one URL")
		f.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := handover.Shoot(ctx, os.Getenv(handover.ShotURLVar), os.Getenv(handover.ShotTokenVar),
		handover.ShotRequest{URL: f.Arg(0), Desktop: *desktop, FullPage: *full})
	if err != nil {
		fmt.Fprintln(stderr, "textslash shot:", err)
		return 1
	}
	fmt.Fprintln(stdout, rep.ID)
	fmt.Fprintf(stderr, "%d×%d JPEG, %d bytes; it will be sent with your answer\n", rep.Width, rep.Height, rep.Size)
	return 0
}
