// Command sluice runs change-data-capture pipelines: MySQL or MariaDB binlog
// to RocketMQ or an in-process transport, to PostgreSQL or MySQL.
package main

import (
	"os"

	"github.com/sluicecdc/sluice/cmd/sluice/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
