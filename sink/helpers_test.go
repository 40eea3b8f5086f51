package sink

import (
	"errors"

	"github.com/jmoiron/sqlx"
)

type sqlxTx = sqlx.Tx

func asFatal(err error, f *interface{ Fatal() bool }) bool { return errors.As(err, f) }
