module github.com/textslash/textslash/telegramtest

go 1.26.0
