package notionmirror

import "errors"

var (
	// errExpired: the media service no longer has an image the mirror is
	// to upload; the page is told it expired.
	errExpired = errors.New("expired")
	// errNoStatus: the Notion database lacks the configured status
	// property; the page is told, as for Notion's own refusals.
	errNoStatus = errors.New("the database has no status or select property")
)
