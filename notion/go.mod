module github.com/textslash/textslash/notion

go 1.26.0

require (
	github.com/textslash/textslash/notiontest v0.0.0
	golang.org/x/time v0.16.0
)

replace github.com/textslash/textslash/notiontest => ../notiontest
