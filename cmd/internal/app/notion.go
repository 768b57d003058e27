package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/notion"
)

// on reports whether Notion is configured.
func (n *notionConfig) on() bool { return n.Token != "" || n.Database != "" || n.Person != "" }

// validateNotion: only ingress and egress talk to Notion (and only they
// get NOTION_TOKEN in compose.yaml).
func (c *config) validateNotion() error {
	n := &c.Notion
	if !n.on() || !(c.runs(Ingress) || c.runs(Egress)) {
		return nil
	}
	switch {
	case n.Token == "":
		return errors.New("Notion needs NOTION_TOKEN")
	case n.Database == "":
		return errors.New("Notion needs NOTION_DATABASE_ID")
	case n.Property == "" || n.Todo == "" || n.InProgress == "" || n.Done == "" || n.Failed == "":
		return errors.New("TEXTSLASH_NOTION_STATUS_PROPERTY, _TODO, _IN_PROGRESS, _DONE and _FAILED must not be empty")
	case n.Every < time.Second:
		return fmt.Errorf("TEXTSLASH_NOTION_POLL=%s: must be at least 1s", n.Every)
	}
	if c.runs(Egress) && !c.runs(Media) && c.PublicURL == "" {
		return errors.New("PUBLIC_URL: egress reads the images it uploads to Notion from it when media runs in another process")
	}
	if _, err := notionUser(n.Person); err != nil {
		return fmt.Errorf("TEXTSLASH_NOTION_PERSON: %w", err)
	}
	return nil
}

// notionUser is the user an address names: <channel>:<id>, a phone
// number's with its + (whatsapp:+15551234567).
func notionUser(addr string) (contract.User, error) {
	ch, id, ok := strings.Cut(addr, ":")
	if !ok {
		return contract.User{}, fmt.Errorf("%q: want whatsapp:+<number>, sms:+<number>, telegram:<chat id> or web:<id>", addr)
	}
	if ch == contract.ChannelWhatsApp || ch == contract.ChannelSMS {
		return contract.PhoneUser(ch, id)
	}
	return contract.NewUser(ch, id)
}

func (n *notionConfig) client() *notion.Client {
	c := &notion.Client{Token: n.Token}
	if n.API != "" {
		c.BaseURL = strings.TrimRight(n.API, "/")
	}
	return c
}

func (c *config) notionIngress() *ingress.Notion {
	n := &c.Notion
	if !n.on() {
		return nil
	}
	u, _ := notionUser(n.Person) // validated
	return &ingress.Notion{Client: n.client(), Database: n.Database, User: u, StatusProperty: n.Property, Todo: n.Todo, Every: n.Every}
}

func (c *config) notionEgress() *egress.Notion {
	n := &c.Notion
	if !n.on() {
		return nil
	}
	media := c.PublicURL // media runs elsewhere (validated)
	if c.runs(Media) {
		media = c.localURL()
	}
	return &egress.Notion{Client: n.client(), Database: n.Database, StatusProperty: n.Property,
		InProgress: n.InProgress, Done: n.Done, Failed: n.Failed, MediaURL: media}
}
