package contract

import "errors"

var (
	// ErrInvalidUser means a channel or user id cannot be used in subjects.
	ErrInvalidUser = errors.New("invalid user")
	// ErrVersion means a payload was written by a newer contract version.
	ErrVersion = errors.New("unsupported payload version")
	// ErrInvalidPayload means a payload is not valid JSON for its subject or
	// lacks a required field.
	ErrInvalidPayload = errors.New("invalid payload")
)
