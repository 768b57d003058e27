module github.com/textslash/textslash/notiontest

go 1.26.0
