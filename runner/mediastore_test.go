package runner

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// A person's attachments are read from, and the images and files of their
// replies stored in, the media store of their channel: media for a
// built-in channel, media-<name> for a plug-in one, whose login is allowed
// no other.
func TestMediaStaysInThePersonsChannelStore(t *testing.T) {
	e := newRunnerEnv(t)
	if err := bus.Provision(t.Context(), e.js, bus.Options{Channels: []string{"slack"}}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	e.start(Config{})
	for _, tt := range []struct{ channel, store, other string }{
		{contract.ChannelTelegram, "media", "media-slack"},
		{"slack", "media-slack", "media"},
	} {
		t.Run(tt.channel, func(t *testing.T) {
			ctx := t.Context()
			u := e.user(tt.channel, "U42")
			own, err := e.js.ObjectStore(ctx, tt.store)
			if err != nil {
				t.Fatal(err)
			}
			other, err := e.js.ObjectStore(ctx, tt.other)
			if err != nil {
				t.Fatal(err)
			}
			// The channel's media fetch service, as ingress.ServeFetch
			// answers: the attachment goes in the channel's store.
			sub, err := e.js.Conn().Subscribe(contract.MediaFetchSubject(u.Channel), func(m *nats.Msg) {
				img, err := bus.PutFile(ctx, own, "text/plain", "notes.txt", []byte("from the phone\n"))
				if err != nil {
					t.Errorf("store the attachment: %v", err)
					return
				}
				data, _ := json.Marshal(img)
				_ = m.Respond(data)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })

			e.jobWith(u, "m1", strings.Join([]string{
				"cat inbox/m1-1-notes.txt",
				"mkdir -p " + handover.DropDir,
				"echo " + base64.StdEncoding.EncodeToString(testkit.PNG(t)) + " | base64 -d > " + handover.DropDir + "/app.png",
				"printf 'a,b\\n' > out.csv",
				"echo FILE_CAPTURED:out.csv",
			}, "\n"), contract.Media{URL: "https://files.example.com/notes.txt", ContentType: "text/plain", Name: "notes.txt"})
			ev := e.waitDone(u, "m1", runnerWait)
			if !strings.Contains(ev.Text, "from the phone") {
				t.Errorf("reply %q; want the attachment's text, read from %s", ev.Text, tt.store)
			}
			if len(ev.Images) != 2 || !contract.IsImage(ev.Images[0].ContentType) || ev.Images[1].Name != "out.csv" {
				t.Fatalf("images %+v; want the image, then out.csv", ev.Images)
			}
			for _, img := range ev.Images {
				if _, err := own.GetInfo(ctx, img.ID); err != nil {
					t.Errorf("%s %s in %s: %v; want it there", img.ContentType, img.ID, tt.store, err)
				}
				if _, err := other.GetInfo(ctx, img.ID); !errors.Is(err, jetstream.ErrObjectNotFound) {
					t.Errorf("%s %s in %s: got %v; want %v", img.ContentType, img.ID, tt.other, err, jetstream.ErrObjectNotFound)
				}
			}
		})
	}
}
