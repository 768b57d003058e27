package notion

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is Notion's error answer: {"object":"error","status":..,"code":..,"message":..}.
// Every call of Client that Notion refused returns one, wrapped with the
// call (errors.As finds it); an answer that is not Notion's JSON (a
// proxy's page) is one too, with Code "http_<status>".
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Permanent reports whether err is an answer that retrying cannot change (a
// 4xx other than 429 and 409 conflict_error): bad token, unknown page,
// validation errors.
func Permanent(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests && e.Status != http.StatusConflict
}
