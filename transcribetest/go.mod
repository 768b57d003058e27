module github.com/textslash/textslash/transcribetest

go 1.26.0
