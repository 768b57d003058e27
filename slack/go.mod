module github.com/textslash/textslash/slack

go 1.26.0

require (
	github.com/gorilla/websocket v1.5.3
	github.com/rs/zerolog v1.35.1
	github.com/slack-go/slack v0.35.0
	github.com/textslash/textslash/contract v0.0.0
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/textslash/textslash/channel v0.0.0
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/textslash/textslash/contract => ../contract

replace github.com/textslash/textslash/egress => ../egress

replace github.com/textslash/textslash/natstest => ../natstest

replace github.com/textslash/textslash/notion => ../notion

replace github.com/textslash/textslash/notiontest => ../notiontest

replace github.com/textslash/textslash/telegramtest => ../telegramtest

replace github.com/textslash/textslash/twiliotest => ../twiliotest

replace github.com/textslash/textslash/kit => ../kit

replace github.com/textslash/textslash/ingress => ../ingress

replace github.com/textslash/textslash/channel => ../channel
