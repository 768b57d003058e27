package pages

import "errors"

var (
	// ErrLimit: the limit leaves fewer than 2 characters beside a page's
	// footer, too few to be sure of fitting any character (an emoji
	// counts 2).
	ErrLimit = errors.New("pages: limit too small for the footer")

	// ErrUnsettled: no page count n gives n pages with footer(i, n). It
	// takes footers that get shorter as n grows, such as a last page's
	// footer longer than the others'.
	ErrUnsettled = errors.New("pages: page count does not settle")
)
