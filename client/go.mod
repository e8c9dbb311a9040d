module github.com/dispatcher/dispatcher/client

go 1.23
