module github.com/textslash/textslash/channels

go 1.26.0

require (
	github.com/bwmarrin/discordgo v0.29.0
	github.com/gorilla/websocket v1.5.3
	github.com/rs/zerolog v1.35.1
	github.com/slack-go/slack v0.35.0
	github.com/textslash/textslash/channel v0.0.0
	github.com/textslash/textslash/channeltest v0.0.0
	github.com/textslash/textslash/contract v0.0.0
	github.com/textslash/textslash/kit v0.0.0
	github.com/textslash/textslash/natstest v0.0.0
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-telegram/bot v1.19.0
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nats-server/v2 v2.15.2 // indirect
	github.com/nats-io/nats.go v1.55.0
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/textslash/textslash/egress v0.0.0 // indirect
	github.com/textslash/textslash/ingress v0.0.0 // indirect
	github.com/textslash/textslash/notion v0.0.0 // indirect
	github.com/textslash/textslash/telegramtest v0.0.0
	github.com/textslash/textslash/twiliotest v0.0.0
	github.com/twilio/twilio-go v1.31.0
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/textslash/textslash/channel => ../channel

replace github.com/textslash/textslash/channeltest => ../channeltest

replace github.com/textslash/textslash/contract => ../contract

replace github.com/textslash/textslash/egress => ../egress

replace github.com/textslash/textslash/ingress => ../ingress

replace github.com/textslash/textslash/kit => ../kit

replace github.com/textslash/textslash/natstest => ../natstest

replace github.com/textslash/textslash/notion => ../notion

replace github.com/textslash/textslash/notiontest => ../notiontest

replace github.com/textslash/textslash/telegramtest => ../telegramtest

replace github.com/textslash/textslash/twiliotest => ../twiliotest
