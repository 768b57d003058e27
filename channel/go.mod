module github.com/textslash/textslash/channel

go 1.26.0

require github.com/textslash/textslash/contract v0.0.0

replace github.com/textslash/textslash/contract => ../contract
