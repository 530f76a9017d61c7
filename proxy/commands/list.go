package commands

import "github.com/spillway/spillway/proxy/server"

func registerList(t *server.Table) {}
