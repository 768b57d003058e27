module github.com/textslash/textslash/twiliotest

go 1.26.0

require github.com/twilio/twilio-go v1.31.0

require (
	github.com/golang-jwt/jwt/v5 v5.2.2 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
