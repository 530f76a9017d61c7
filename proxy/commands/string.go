package commands

import "github.com/spillway/spillway/proxy/server"

func registerString(t *server.Table) {}
