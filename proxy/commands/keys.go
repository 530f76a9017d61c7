package commands

import "github.com/spillway/spillway/proxy/server"

func registerKeys(t *server.Table) {}
